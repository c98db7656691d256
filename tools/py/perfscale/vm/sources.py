"""A Debian kernel's sources, and what changed between two releases in the functions a
profile names (`tools/perfscale series`' step pages).

Which sources: a run in a Debian kernel says its release (`kernel_release`,
6.1.0-57-cloud-amd64) and its Debian version (`kernel_version`, uname -v: "... Debian
6.1.192-3 (...)"). Debian builds `linux-source-LINE` at that version, the tree with
Debian's patches applied, in the suite that holds the kernel; failing that, `apt-get
source --download-only` gives the upstream tarball of the version. Only the parts the
perf_event and tracing paths live in are kept (SOURCE_PATHS and the include folders),
under ~/.cache/perfscale/sources/VERSION/, once per version.

What changed: each kernel function of a profile (its symbol less the compiler's .isra.0
and .constprop.0, a syscall's __x64_sys_ wrapper as its SYSCALL_DEFINE) is looked up in
SOURCE_PATHS and the headers their files include, in both trees, and its definition in
one is diffed against the other.
"""

import dataclasses
import difflib
import glob
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from typing import List

from perfscale.vm.cache import CACHE
from perfscale.vm.debian import apt_command, fetch_files
from perfscale.vm.errors import VmError

# Where the paths the families measure live: perf_event and tracing, cross-CPU calls,
# and what the benchmarks' threads, syscalls, locks and page faults go through. The
# functions of a step's profile are looked for here, and in the headers these files
# include.
SOURCE_PATHS = ("kernel/events/", "kernel/trace/", "arch/x86/kernel/", "kernel/smp.c",
                "arch/x86/events/", "kernel/entry/", "arch/x86/entry/", "kernel/fork.c",
                "kernel/exit.c", "kernel/sched/core.c", "kernel/locking/", "mm/",
                "fs/ioctl.c", "fs/file.c", "fs/open.c", "kernel/bpf/")
INCLUDE_ROOTS = ("include/", "arch/x86/include/", "arch/x86/include/generated/",
                 "include/uapi/", "arch/x86/include/uapi/")
KEPT = SOURCE_PATHS + ("include/", "arch/x86/include/")
# The suites a kernel's source package is looked for in: this machine's (None), then
# those tools/debian-archive reaches, oldest first.
SUITES = (None, "bullseye", "bookworm-backports", "trixie", "trixie-backports", "sid",
          "experimental")
HUNK_LINES = 120  # of one function's diff on a page; the rest is counted, not shown
_DONE = ".perfscale-complete"
ORIGIN = ".perfscale-origin"  # what the kept tree is, in words: the package or the tarball


class SourceError(Exception):
    """Why a release's sources could not be had, in words a user can act on."""


@dataclasses.dataclass(frozen=True)
class Release:
    line: str     # the release line, "6.1"
    version: str  # Debian's version of the linux source, "6.1.192-3"


def release_of(context):
    """The Debian source release a run's kernel was built from, or None when the run's
    context does not name one (a kernel built elsewhere)."""
    match = re.search(r"\bDebian (\d+\.\d+)(\S*)", str(context.get("kernel_version", "")))
    if not match:
        return None
    return Release(match.group(1), match.group(1) + match.group(2))


def fetch(release, cache=CACHE, log=lambda line: None):
    """The root of `release`'s kept sources (SOURCE_PATHS and the include folders),
    fetched once. Raises SourceError naming what was tried."""
    root = os.path.join(cache, "sources", release.version)
    if _read(os.path.join(root, _DONE)) == _kept_text():
        return root
    tried = []
    for suite in SUITES:
        package = "linux-source-%s=%s" % (release.line, release.version)
        if not _has(package, suite):
            continue
        log("fetching %s (%s)" % (package, suite or "this machine's apt"))
        scratch = root + ".deb"
        try:
            fetch_files(package, "usr/src", scratch, "kernel sources", suite)
            tarballs = glob.glob(os.path.join(scratch, "usr", "src", "linux-source-*.tar.*"))
            if len(tarballs) != 1:
                raise SourceError("%s holds no single linux-source tarball" % package)
            _keep_parts(tarballs[0], root, "linux-%s (Debian's %s, patches applied)"
                        % (release.version, package.replace("=", " ")))
            return root
        except VmError as err:
            tried.append("%s from %s: %s" % (package, suite or "this machine's apt", err))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    upstream = _upstream_tarball(release, root, log, tried)
    if upstream:
        return upstream
    raise SourceError("no sources of Debian's linux %s: %s" % (
        release.version, "; ".join(tried) or "no suite has linux-source-%s at that version "
        "(`tools/debian-archive SUITE update` refreshes a suite's lists)" % release.line))


def _has(package, suite):
    shown = subprocess.run(apt_command("apt-cache", suite) + ["show", package],
                           capture_output=True, text=True)
    return shown.returncode == 0 and "Package:" in shown.stdout


def _upstream_tarball(release, root, log, tried):
    """The upstream tarball of the release's version, kept as the tree (without Debian's
    patches). Only the tarball is fetched (`apt-get source --print-uris` names it and its
    hash, apt-helper fetches and checks it): the archive sometimes lists a version whose
    .dsc it no longer serves while it still serves the tarball (6.18.15-1~bpo13+1 on
    2026-12-07). When no suite serves the version's own tarball, the nearest version of
    the same release line the archive serves stands in, and the tree says so (ORIGIN)."""
    upstream = _upstream_version(release.version)
    unserved = []  # what the archive lists but would not serve, for the message
    for suite, source, version in _listed_versions(release):
        tarball = _tarball_uri(suite, source, version)
        if tarball is None or any(tarball[1] == name for name, _ in unserved):
            continue
        uri, name, digest = tarball
        scratch = tempfile.mkdtemp(prefix="perfscale-src-")
        try:
            path = os.path.join(scratch, name)
            got = subprocess.run(["/usr/lib/apt/apt-helper", "download-file", uri, path,
                                  digest], capture_output=True, text=True)
            if got.returncode != 0 or not os.path.isfile(path):
                unserved.append((name, "%s lists %s %s, but its archive did not serve %s (%s)"
                                 % (suite or "this machine's apt", source, version, name,
                                    _fetch_failure(got.stderr))))
                continue
            if _upstream_version(version) == upstream:
                origin = "linux-%s (the upstream tarball of %s, without Debian's patches)" % (
                    upstream, release.version)
            else:
                origin = ("linux-%s standing in for %s: the archive serves no tarball of "
                          "%s (%s); the nearest version of the %s line it serves was "
                          "compared, so a change between the two stable versions can "
                          "show as a change between the releases" % (
                              _upstream_version(version), release.version, upstream,
                              "; ".join(text for _, text in unserved) or "not listed",
                              release.line))
            log("fetched %s" % origin)
            _keep_parts(path, root, origin)
            return root
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    tried.append("the upstream tarball of linux %s: %s" % (
        release.version, "; ".join(text for _, text in unserved) or
        "no suite lists a linux source package of the %s line" % release.line))
    return None


def _fetch_failure(stderr):
    """apt's reason a download failed ("404  Not Found"), without the address: the
    archive's host is the machine's business, not the page's."""
    for line in stderr.splitlines():
        if line.startswith("E: Failed to fetch "):
            reason = re.sub(r"^E: Failed to fetch \S+\s*", "", line)
            return " ".join(re.sub(r"\[IP: [^\]]*\]", "", reason).split()) or "no reason given"
    errors = [line[len("E: "):].strip() for line in stderr.splitlines()
              if line.startswith("E: ")]
    return errors[0] if errors else "no reason given"


def _upstream_version(version):
    """6.17.13 of 6.17.13-1~bpo13+1 (an epoch dropped)."""
    return version.split(":", 1)[-1].rsplit("-", 1)[0]


def _patch_level(version):
    match = re.match(r"\d+\.\d+\.(\d+)$", _upstream_version(version))
    return int(match.group(1)) if match else 0


def _listed_versions(release):
    """(suite, source package, version) of every linux source of the release's line the
    suites list: the release's own version first, then its upstream version in other
    suites, then the other versions of the line, nearest patch level first."""
    upstream = _upstream_version(release.version)
    found = []
    for suite in SUITES:
        for source in ("linux", "linux-" + release.line):
            shown = subprocess.run(apt_command("apt-cache", suite) + ["showsrc", source],
                                   capture_output=True, text=True)
            package = None
            for line in shown.stdout.splitlines():
                if line.startswith("Package: "):
                    package = line.split(None, 1)[1].strip()
                elif line.startswith("Version: ") and package == source:
                    version = line.split(None, 1)[1].strip()
                    other = _upstream_version(version)
                    # The release's own version (a 7.3~rc7 too), or a stable one of its
                    # line; a release candidate never stands in for another version.
                    if version == release.version or other == release.line or \
                            other.startswith(release.line + "."):
                        found.append((suite, source, version))
    wanted = _patch_level(release.version)

    def order(entry):
        version = entry[2]
        return (version != release.version, _upstream_version(version) != upstream,
                abs(_patch_level(version) - wanted), -_patch_level(version))

    return sorted(dict.fromkeys(found), key=order)


def _tarball_uri(suite, source, version):
    """(uri, file name, hash) of the upstream tarball of `source` at `version` as `suite`
    lists it, or None."""
    listed = subprocess.run(apt_command("apt-get", suite) + [
        "source", "--print-uris", "-qq", "%s=%s" % (source, version)],
        capture_output=True, text=True)
    if listed.returncode != 0:
        return None
    for line in listed.stdout.splitlines():
        match = re.match(r"'([^']+)' (\S+\.orig\.tar\.\w+) \d+ (\S+)", line)
        if match:
            return match.group(1), match.group(2), match.group(3)
    return None


def _keep_parts(tarball, root, origin):
    """Extracts KEPT from a kernel tarball (its top folder stripped) into root, whole or
    not at all; ORIGIN says what it is."""
    partial = root + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    try:
        with tarfile.open(tarball) as archive:
            for member in archive:
                parts = member.name.split("/", 1)
                if len(parts) < 2 or not (member.isfile() or member.isdir()):
                    continue
                inner = parts[1]
                if not any(inner == kept.rstrip("/") or inner.startswith(kept)
                           for kept in KEPT):
                    continue
                if member.isdir():
                    os.makedirs(os.path.join(partial, inner), exist_ok=True)
                    continue
                target = os.path.join(partial, inner)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with archive.extractfile(member) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out)
        with open(os.path.join(partial, ORIGIN), "w") as told:
            told.write(origin + "\n")
        with open(os.path.join(partial, _DONE), "w") as done:
            done.write(_kept_text())  # kept again when KEPT changes
        shutil.rmtree(root, ignore_errors=True)
        os.replace(partial, root)
    except (OSError, tarfile.TarError) as err:
        shutil.rmtree(partial, ignore_errors=True)
        raise SourceError("cannot unpack %s: %s" % (os.path.basename(tarball), err)) from None


def _kept_text():
    return "\n".join(KEPT) + "\n"


# --- What changed in the profile's functions ----------------------------------------

CHANGED, UNCHANGED, ADDED, REMOVED, NOT_FOUND = (
    "changed", "unchanged", "only in the later release's sources searched",
    "only in the earlier release's sources searched", "not in the sources searched")


@dataclasses.dataclass
class FunctionChange:
    symbol: str                  # as the profile names it
    function: str                # the C name looked for
    old_files: List[str]         # where it is defined (relative), before and after
    new_files: List[str]
    status: str
    hunk: str = ""               # a unified diff of its definitions, cut at HUNK_LINES
    lines_changed: int = 0       # lines added plus removed

    @property
    def changed(self):
        return self.status in (CHANGED, ADDED, REMOVED)

    @property
    def found(self):
        return self.status != NOT_FOUND


def function_name(symbol):
    """The C function behind a kernel symbol: the compiler's suffixes (.isra.0,
    .constprop.0, .part.0, .cold) dropped, a syscall's wrappers (__x64_sys_X,
    __se_sys_X, __do_sys_X) as its SYSCALL_DEFINE's name."""
    name = symbol.split(".", 1)[0]
    match = re.fullmatch(r"__(?:x64|ia32|se|do)_sys_(\w+)", name)
    return "sys:" + match.group(1) if match else name


def searched_files(root):
    """The files a function is looked for in, relative to root: SOURCE_PATHS, then the
    headers those files include (#include <...> from the include folders, "..." beside
    the file), in that order."""
    own = []
    for path in SOURCE_PATHS:
        full = os.path.join(root, path)
        if os.path.isfile(full):
            own.append(path)
        for folder, _dirs, files in sorted(os.walk(full)):
            own += sorted(os.path.relpath(os.path.join(folder, f), root) for f in files
                          if f.endswith((".c", ".h")))
    headers = []
    seen = set(own)
    for path in own:
        for quoted, name in re.findall(r'(?m)^\s*#\s*include\s*([<"])([^>"]+)[>"]',
                                       _read(os.path.join(root, path))):
            candidates = ([os.path.join(os.path.dirname(path), name)] if quoted == '"'
                          else []) + [os.path.join(base, name) for base in INCLUDE_ROOTS]
            for candidate in candidates:
                candidate = os.path.normpath(candidate)
                if candidate not in seen and os.path.isfile(os.path.join(root, candidate)):
                    seen.add(candidate)
                    headers.append(candidate)
                    break
    return own + headers


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def definitions(text, function):
    """The definitions of `function` in C source `text`, in order, each as its text from
    the line that starts it to its closing brace: a kernel-style definition at the
    start of a line (the return type may stand on the line before), or for `sys:NAME`
    a SYSCALL_DEFINEn(NAME, ...). Declarations and calls are not definitions."""
    if function.startswith("sys:"):
        start = re.compile(r"(?m)^(?:COMPAT_)?SYSCALL_DEFINE\d\(\s*%s\s*[,)]"
                           % re.escape(function[4:]))
    else:
        start = re.compile(r"(?m)^(?![#\s/*])[^;{}()=\n]*?(?<![\w.>-])%s\s*\("
                           % re.escape(function))
    found = []
    for match in start.finditer(text):
        open_paren = text.index("(", match.start())  # SYSCALL_DEFINEn's, or the name's
        close = _matching(text, open_paren, "(", ")")
        if close < 0:
            continue
        # After the parameters: attributes (__acquires(x)), then a body, not a ';'.
        after = re.match(r"(?:\s|__\w+(?:\([^;{}]*?\))?)*\{", text[close + 1:close + 400])
        if not after:
            continue
        body_open = close + after.end()
        end = _matching(text, body_open - 1, "{", "}")
        if end < 0:
            continue
        begin = match.start()
        # `static int\nname(...)`: the type on the line before belongs to the definition.
        if begin > 0:
            line_start = text.rfind("\n", 0, begin - 1) + 1
            previous = text[line_start:begin - 1]
            if re.fullmatch(r"[A-Za-z_][\w \t*]*", previous):
                begin = line_start
        found.append(text[begin:end + 1])
    return found


def _matching(text, index, opening, closing):
    """The index of the bracket closing the one at `index`, skipping comments, strings
    and character literals; -1 when it does not close."""
    depth, i, n = 0, index, len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("/*", i):
            i = text.find("*/", i + 2)
            if i < 0:
                return -1
            i += 2
            continue
        if c == "/" and text.startswith("//", i):
            i = text.find("\n", i)
            if i < 0:
                return -1
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c == opening:
            depth += 1
        elif c == closing:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


class Tree:
    """One release's kept sources: its searched files, read once."""

    def __init__(self, root, label, origin=None):
        self.root, self.label = root, label
        self.origin = origin or label  # what the sources are, in words (a stand-in says so)
        self.files = searched_files(root)
        self._texts = {}

    def text(self, path):
        if path not in self._texts:
            self._texts[path] = _read(os.path.join(self.root, path))
        return self._texts[path]

    def find(self, function):
        """{file: [definition text]} of `function`, in the searched files' order."""
        needle = function[4:] if function.startswith("sys:") else function
        found = {}
        for path in self.files:
            text = self.text(path)
            if needle not in text:
                continue
            texts = definitions(text, function)
            if texts:
                found[path] = texts
        # A function defined in a .c file has its header stubs (the `static inline` of a
        # config that is off) beside it: the .c file's is the one that runs.
        if any(path.endswith(".c") for path in found):
            found = {path: texts for path, texts in found.items() if path.endswith(".c")}
        return found


def diff_functions(old, new, symbols, hunk_lines=HUNK_LINES):
    """[FunctionChange] of each symbol (the profile's names) between Trees `old` and
    `new`, in the order given."""
    changes = []
    for symbol in symbols:
        function = function_name(symbol)
        before, after = old.find(function), new.find(function)
        old_text = "".join(t + "\n" for texts in before.values() for t in texts)
        new_text = "".join(t + "\n" for texts in after.values() for t in texts)
        if not before and not after:
            status = NOT_FOUND
        elif not before:
            status = ADDED
        elif not after:
            status = REMOVED
        else:
            status = CHANGED if old_text != new_text else UNCHANGED
        change = FunctionChange(symbol, function, list(before), list(after), status)
        if status in (CHANGED, ADDED, REMOVED):
            lines = list(difflib.unified_diff(
                old_text.splitlines(), new_text.splitlines(),
                "%s/%s" % (old.label, ",".join(before) or "/dev/null"),
                "%s/%s" % (new.label, ",".join(after) or "/dev/null"), lineterm=""))
            change.lines_changed = sum(1 for l in lines[2:] if l[:1] in "+-")
            if len(lines) > hunk_lines:
                lines = lines[:hunk_lines] + ["... (%d more lines of this diff)"
                                              % (len(lines) - hunk_lines)]
            change.hunk = "\n".join(lines)
        changes.append(change)
    return changes


def file_changes(old, new, paths):
    """{path: (lines added, lines removed)} of whole files between two Trees (a file one
    side lacks counts all its lines), for the files behind the functions (diff(1): a
    14,000-line core.c in well under a second)."""
    out = {}
    for path in paths:
        sides = [os.path.join(tree.root, path) for tree in (old, new)]
        diffed = subprocess.run(
            ["diff", "--old-line-format=-\n", "--new-line-format=+\n",
             "--unchanged-line-format="] + [p if os.path.isfile(p) else "/dev/null"
                                            for p in sides],
            capture_output=True, text=True)
        out[path] = (diffed.stdout.count("+"), diffed.stdout.count("-"))
    return out


def tree_for(release, fetch_log=lambda line: None, cache=CACHE):
    """The Tree of `release`, fetched when needed (raises SourceError); its label names
    the sources it holds, its origin says what they are (a stand-in says so)."""
    root = fetch(release, cache, fetch_log)
    origin = _read(os.path.join(root, ORIGIN)).strip() or (
        "linux-%s (Debian's sources)" % release.version)
    return Tree(root, origin.split()[0], origin)
