"""The shell scripts under tools/ define each function once: bash keeps the last of two
definitions without a word, so a fix made to the other one would silently do nothing."""

import collections
import os
import re

import pytest

from conftest import REPO_ROOT

TOOLS = os.path.join(REPO_ROOT, "tools")
_FUNCTION = re.compile(r"^\s*(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\)\s*\{?", re.M)


def shell_scripts():
    found = []
    for name in sorted(os.listdir(TOOLS)):
        path = os.path.join(TOOLS, name)
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                if re.match(r"#!.*\b(ba)?sh\b", f.readline()):
                    found.append(name)
    return found


def twice(text):
    return sorted(n for n, c in collections.Counter(_FUNCTION.findall(text)).items() if c > 1)


def test_the_scripts_are_found():
    assert {"perfscale", "setup", "fuzz"} <= set(shell_scripts())


@pytest.mark.parametrize("name", shell_scripts())
def test_each_function_is_defined_once(name):
    with open(os.path.join(TOOLS, name), encoding="utf-8") as f:
        assert twice(f.read()) == []


def test_a_second_definition_is_found():
    assert twice("a() {\n  :\n}\nb() { :; }\n  a() {\n}\n") == ["a"]
