"""The C++ includes run one way (docs/architecture.md, "The C++ layers"):
benchmarks/<family>/ -> benchmarks/harness/ -> lib/, with testing/common/ for tests only.

Read from every source's `#include "..."` lines, so a header that reaches up breaks this
test even where Bazel's dependencies would happen to let it build. Fails when lib/ includes
the harness, a family, testing/ or tools/ (lib's own tests may use testing/common/); the
harness includes a family; a family includes another family; or code that is not a test
includes testing/.

Bazel keeps the same rule for dependencies (tools/bazel/layers.bzl: each layer's
visibility, checked by the `layers_test` suites that plant upward dependencies); here, that
no C++ package opens itself to everyone again.
"""

import os
import re

import pytest

from conftest import REPO_ROOT

_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
_SOURCES = (".h", ".cc")
_PROJECT_ROOTS = ("lib/", "benchmarks/", "testing/", "tools/")


def _is_test(path):
    name = os.path.basename(path)
    return name.endswith(("_test.cc", "_test.h")) or "fuzz" in name


def _family(path):
    """The family folder a benchmarks/ path lies in ('harness' for the harness), or None."""
    parts = path.split("/")
    return parts[1] if parts[0] == "benchmarks" and len(parts) > 2 else None


def upward_includes(path, text):
    """The project includes of `path` (relative to the repository) that break the layers,
    each with why."""
    broken = []
    for included in _INCLUDE.findall(text):
        if not included.startswith(_PROJECT_ROOTS):
            continue  # a library's header (absl, benchmark, gtest) or a sibling file
        why = None
        if included.startswith("tools/"):
            why = "tools/ is not a C++ layer anyone includes"
        elif included.startswith("testing/") and not (
                _is_test(path) or path.startswith("testing/")):
            why = "only tests include testing/"
        elif path.startswith("lib/") and included.startswith("benchmarks/"):
            why = "lib/ is the bottom layer: it includes only lib/"
        elif path.startswith("benchmarks/"):
            mine, theirs = _family(path), _family(included)
            if mine == "harness" and theirs not in (None, "harness"):
                why = "the harness includes no family"
            elif mine not in (None, "harness") and theirs not in (None, "harness", mine):
                why = "a family includes no other family"
        if why:
            broken.append("%s includes %s: %s" % (path, included, why))
    return broken


def _sources():
    for top in ("lib", "benchmarks", "testing", "tools"):
        for folder, _, files in os.walk(os.path.join(REPO_ROOT, top)):
            for name in files:
                if name.endswith(_SOURCES):
                    full = os.path.join(folder, name)
                    yield os.path.relpath(full, REPO_ROOT), full


def test_every_include_runs_down_the_layers():
    broken, seen = [], 0
    for path, full in _sources():
        with open(full, encoding="utf-8", errors="replace") as f:
            broken += upward_includes(path, f.read())
        seen += 1
    assert seen > 100  # the walk found the tree
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("path, include", [
    ("lib/perf_event.cc", "benchmarks/harness/family.h"),
    ("lib/cpu_set.h", "benchmarks/breakpoint/thread_churn.h"),
    ("lib/tracefs.cc", "testing/common/process_state.h"),
    ("benchmarks/harness/main.cc", "benchmarks/uprobe/uprobe.h"),
    ("benchmarks/breakpoint/breakpoint.cc", "benchmarks/uprobe/uprobe.h"),
    ("benchmarks/uprobe/uprobe.cc", "testing/common/run_command.h"),
    ("benchmarks/uprobe/uprobe.cc", "tools/inject/whatever.h"),
])
def test_a_planted_upward_include_is_caught(path, include):
    assert upward_includes(path, '#include "%s"\n' % include)


@pytest.mark.parametrize("path, include", [
    ("lib/perf_event.cc", "lib/errno_status.h"),
    ("lib/tracefs_test.cc", "testing/common/run_command.h"),
    ("benchmarks/harness/main.cc", "benchmarks/harness/flags.h"),
    ("benchmarks/uprobe/uprobe.cc", "benchmarks/harness/family.h"),
    ("benchmarks/uprobe/uprobe.cc", "benchmarks/uprobe/probe_target.h"),
    ("testing/common/family_harness.cc", "benchmarks/harness/family.h"),
])
def test_a_downward_include_is_allowed(path, include):
    assert upward_includes(path, '#include "%s"\n' % include) == []


def test_no_cxx_package_is_visible_to_everyone():
    """A `//visibility:public` in lib/, benchmarks/ or testing/ would let any package depend
    on it, up or sideways, and the planted layers_test would not notice a new package."""
    public, seen = [], 0
    for top in ("lib", "benchmarks", "testing"):
        for folder, _, files in os.walk(os.path.join(REPO_ROOT, top)):
            if "BUILD.bazel" in files:
                seen += 1
                path = os.path.join(folder, "BUILD.bazel")
                with open(path, encoding="utf-8") as f:
                    if "//visibility:public" in f.read():
                        public.append(os.path.relpath(path, REPO_ROOT))
    assert seen >= 9  # lib, the harness, five families, //benchmarks, testing/*
    assert not public, "public visibility in: " + ", ".join(public)
