"""Debian's kernels: every release line its archive holds, found in its package lists.

A `debian:` name (docs/vm.md) is one of
    debian:LINE          the newest build of a release line (5.10, 6.1, 6.12, 6.16 ... 7.3)
    debian:LINE.0-N      one build of the lines Debian numbers by ABI (5.10.0-46, 6.1.0-57)
    debian:LINE.P        one stable release of the others (6.12.117, 7.1.8)
    debian:LINE-rc       the newest release candidate (experimental's 7.3~rc7), or
    debian:LINE-rcN      one of them
each also -cloud or -rt, the flavours Debian builds besides the generic one.

No table lists the lines: they are read from the package names of the suites in SUITES,
so a line Debian adds to a suite is a --kernel once that suite's lists are refreshed
(`tools/debian-archive SUITE update`). Where two suites build one release (6.12.118 for
Debian 12 and 13) the earlier suite in SUITES gives it. Up to 6.18 the vmlinuz is in
linux-image-RELEASE-FLAVOUR-amd64 (boot/, with its config); from 6.19 on that package is
a metapackage and the vmlinuz is in linux-binary-... (in boot/ up to 7.1; from 7.2 on in
usr/lib/modules/RELEASE/, its config in linux-base-...): only those are fetched, never
the modules, since everything a guest needs is built into Debian's kernels.
"""

import concurrent.futures
import dataclasses
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Optional, Tuple

from perfscale.machine import debian_release
from perfscale.suite import runner
from perfscale.vm import cache
from perfscale.vm.errors import VmError, VmUsageError

DEBIAN_ARCHIVE = os.path.join(runner.REPO_ROOT, "tools", "debian-archive")
# The suites searched, in order of preference where two build one release: None is the
# machine's own apt (Debian 12: 6.1, and 6.12 built for it), the rest come through
# tools/debian-archive with apt state of perfscale's own (the machine's apt configuration
# is never changed): bullseye's 5.10, trixie's 6.12, trixie-backports' 6.16 and later,
# sid's newest, experimental's release candidates.
SUITES = (None, "bullseye", "trixie", "trixie-backports", "sid", "experimental")
FLAVOURS = ("", "cloud", "rt")

# A kernel package's name: linux-image- or linux-binary- and a release as `uname -r` spells
# it (perfscale.machine.debian_release), -unsigned for some: linux-image-5.10.0-46-cloud-amd64,
# linux-image-6.12.118+deb12-amd64-unsigned, linux-binary-7.3.4+deb13-rt-amd64,
# linux-binary-7.3-cloud-amd64 (experimental: the line alone, its version says which rc).
_PACKAGE = re.compile(r"linux-(?P<kind>image|binary)-(?P<release>%s)-%s(?P<unsigned>-unsigned)?"
                      % (debian_release.RELEASE, debian_release.FLAVOUR), re.ASCII)
# A debian: name. fullmatch, ASCII: `$` would let a trailing newline through and \d
# Arabic-Indic digits, each the same kernel under a label (in the run's JSON) of its own.
_NAME = re.compile(r"debian:(?P<line>[0-9]+\.[0-9]+)(?:\.0-(?P<abi>[0-9]+)|\.(?P<patch>[0-9]+)"
                   r"|-rc(?P<rc>[0-9]*))?(?:-(?P<flavour>rt|cloud))?", re.ASCII)
# An upstream version in a Debian version: 7.3~rc7-1~exp1, 7.3.4-1~bpo13+1.
_UPSTREAM = re.compile(r"(?:[0-9]+:)?[0-9]+\.[0-9]+(?:\.(?P<patch>[0-9]+))?(?:~rc(?P<rc>[0-9]+))?-")

NAMES_HELP = ("debian:LINE (5.10, 6.1, 6.12, 6.16 ... 7.3: `tools/perfscale vm kernel` lists "
              "them), debian:5.10.0-N, debian:6.12.N, debian:LINE-rc[N], each [-rt|-cloud]")


@dataclasses.dataclass(frozen=True)
class Build:
    """One Debian build of a kernel release in one flavour, and where it is."""
    line: str                # the release line: 7.1
    flavour: str             # "", "cloud" or "rt"
    version: str             # what its debian: name says: 5.10.0-46, 7.1.8, 7.3-rc7
    release: str             # its `uname -r` without the flavour: 7.1.8+deb13, 7.3
    suite: Optional[str]     # None: the machine's own apt
    image: str               # the package holding the vmlinuz
    config: Optional[str]    # the package holding its config, where that is another one
    rc: bool = False
    order: Tuple = ()        # newer builds of a line sort higher
    debian_version: str = ""  # the package's version, where its name does not pin it

    @property
    def name(self):
        return "debian:%s%s" % (self.version, "-" + self.flavour if self.flavour else "")

    @property
    def split(self):
        return self.image.startswith("linux-binary-")

    @property
    def cache_name(self):
        """Its folder under the kernel cache: the package, and the version where the name
        does not pin one (experimental's linux-binary-7.3-cloud-amd64 is every rc)."""
        return self.image + ("_" + self.debian_version if self.rc else "")


def suite_name(suite):
    return suite or "this machine's apt"


def apt_command(tool, suite):
    """apt-get or apt-cache for a suite: the machine's own (None), or another through
    tools/debian-archive (perfscale's own sources list and state for it). The machine's
    apt is given a package cache file of ours: Debian's container images turn apt's own
    off, and apt-cache then reads every list again each time (seconds)."""
    if suite is not None:
        return [DEBIAN_ARCHIVE, suite, tool]
    folder = os.path.join(cache.CACHE, "apt", "machine")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return [tool]  # slower, not wrong
    return [tool, "-o", "Dir::Cache::pkgcache=" + os.path.join(folder, "pkgcache.bin"),
            "-o", "Dir::Cache::srcpkgcache=" + os.path.join(folder, "srcpkgcache.bin")]


def _last_error(stderr):
    lines = stderr.strip().splitlines()
    # apt's errors, not its warnings (downloading as root warns every time).
    return " ".join(l for l in lines if l.startswith("E:")) or (lines or ["no message"])[-1]


def package_names(suite):
    """The kernel-related package names (linux-*) apt knows in `suite`."""
    listed = subprocess.run(apt_command("apt-cache", suite) + ["pkgnames", "linux-"],
                            capture_output=True, text=True)
    if listed.returncode != 0:
        raise VmError("cannot list the kernel packages of %s with apt-cache: %s"
                      % (suite_name(suite), _last_error(listed.stderr)))
    return listed.stdout.split()


def package_versions(suite, packages):
    """{package: the version apt would download} for `packages` of `suite`."""
    if not packages:
        return {}
    shown = subprocess.run(apt_command("apt-cache", suite) + ["show", "--no-all-versions"]
                           + sorted(packages), capture_output=True, text=True)
    versions, package = {}, None
    for line in shown.stdout.splitlines():
        if line.startswith("Package: "):
            package = line.split(None, 1)[1]
        elif line.startswith("Version: ") and package:
            versions[package] = line.split(None, 1)[1]
    return versions


def builds_in(names, suite=None, rank=0, versions=None):
    """The kernel builds a suite's package names hold (a pure parser: `names` as
    `apt-cache pkgnames` lists them). `versions(packages) -> {package: version}` gives the
    versions of experimental's unnumbered releases (their rc); rank orders suites."""
    names = set(names)
    found = {}
    for name in names:
        match = _PACKAGE.fullmatch(name)
        if match:
            key = (match.group("release"), match.group("flavour") or "")
            found.setdefault(key, []).append(match)
    unnumbered = {}
    builds = []
    for (release, flavour), matches in found.items():
        match = matches[0]
        suffix = "%s-%samd64" % (release, flavour + "-" if flavour else "")
        binary, image = "linux-binary-" + suffix, "linux-image-" + suffix
        base = "linux-base-" + suffix
        if binary in names:  # split packaging (6.19 on)
            package, config = binary, base if base in names else None
        elif match.group("abi") is None and match.group("patch") is None:
            continue  # linux-image-6.1-cloud-amd64: a metapackage naming another release
        else:
            package = image if image in names else image + "-unsigned"
            if package not in names:
                continue  # only its -dbg symbols or headers
            config = None
        line = match.group("line")
        if match.group("abi") is not None:
            abi = int(match.group("abi"))
            builds.append(Build(line, flavour, "%s.0-%d" % (line, abi), release, suite,
                                package, config, order=(abi, -rank)))
        elif match.group("patch") is not None:
            patch = int(match.group("patch"))
            rebuild = tuple(int(n) for n in match.group("rebuild").split("."))
            builds.append(Build(line, flavour, "%s.%d" % (line, patch), release, suite,
                                package, config, order=(patch, -rank, rebuild)))
        else:
            unnumbered[package] = (line, flavour, release, config)
    for package, version in (versions(list(unnumbered)) if versions and unnumbered
                             else {}).items():
        line, flavour, release, config = unnumbered[package]
        upstream = _UPSTREAM.match(version)
        if not upstream:
            continue
        if upstream.group("rc"):
            rc = int(upstream.group("rc"))
            builds.append(Build(line, flavour, "%s-rc%d" % (line, rc), release, suite, package,
                                config, rc=True, order=(rc, -rank), debian_version=version))
        else:  # a final release Debian names by its line alone: its .0
            patch = int(upstream.group("patch") or 0)
            builds.append(Build(line, flavour, "%s.%d" % (line, patch), release, suite,
                                package, config, order=(patch, -rank, ()),
                                debian_version=version))
    return builds


def archive_builds(suites=SUITES, warn=None):
    """Every kernel build the suites hold. A suite whose lists cannot be read (offline,
    its lists never fetched) is left out, said through `warn`; none answering is an error."""
    builds, problems = [], []
    # Each suite's apt-cache at once: the machine's own rebuilds its cache every time.
    with concurrent.futures.ThreadPoolExecutor(len(suites) or 1) as pool:
        listed = [(suite, pool.submit(package_names, suite)) for suite in suites]
        for rank, (suite, names) in enumerate(listed):
            try:
                names = names.result()
            except VmError as err:
                problems.append(str(err))
                continue
            builds += builds_in(names, suite, rank,
                                lambda packages, suite=suite: package_versions(suite, packages))
    if problems and not builds:
        raise VmError("; ".join(problems))
    for problem in problems:
        (warn or _warn)("perfscale: left out: %s" % problem)
    return builds


def _warn(line):
    print(line, file=sys.stderr)


def _line_order(line):
    return tuple(int(n) for n in line.split("."))


def name_problem(name):
    """Why `name` is not a debian: name, None when it is one (whether the archive holds
    it is choose's to say)."""
    match = _NAME.fullmatch(name)
    numbers = [match.group(g) for g in ("abi", "patch", "rc")] if match else []
    if not match or any(n and n != str(int(n)) for n in numbers):  # 057 for 57: one spelling
        return "--kernel: '%s' is not a Debian kernel name (%s)" % (name, NAMES_HELP)
    return None


def choose(name, builds):
    """The build a debian: name picks from `builds` (archive_builds). VmUsageError for a
    name that is not a debian: name, or names nothing the archive holds."""
    problem = name_problem(name)
    if problem:
        raise VmUsageError(problem)
    match = _NAME.fullmatch(name)
    line, flavour = match.group("line"), match.group("flavour") or ""
    version = name[len("debian:"):len(name) - (len(flavour) + 1 if flavour else 0)]
    of_line = [b for b in builds if b.line == line and b.flavour == flavour]
    label = line + (" -" + flavour if flavour else "")
    if not of_line:
        lines = sorted({b.line for b in builds}, key=_line_order)
        raise VmUsageError("--kernel: %s: Debian's archive has no %s kernel (lines: %s; "
                           "`tools/perfscale vm kernel` lists them)"
                           % (name, label, ", ".join(lines)))
    if match.group("rc") is not None:
        wanted = [b for b in of_line if b.rc and version in (line + "-rc", b.version)]
    elif version != line:
        wanted = [b for b in of_line if not b.rc and b.version == version]
    else:
        wanted = [b for b in of_line if not b.rc]
    if not wanted:
        have = sorted({b.version for b in of_line},
                      key=lambda v: [int(n) for n in re.findall(r"[0-9]+", v)])
        hint = ("; its release candidates are %s-rc%s" % (
            name[:len("debian:") + len(line)], "-" + flavour if flavour else "")
            if version == line else "")
        raise VmUsageError("--kernel: Debian's archive has no %s (its %s builds: %s)%s"
                           % (name, label, ", ".join(have), hint))
    return max(wanted, key=lambda b: b.order)


def newest_of_each_line(builds):
    """{(line, rc, flavour): its newest build}, for `vm kernel`'s list."""
    newest = {}
    for build in builds:
        key = (build.line, build.rc, build.flavour)
        if key not in newest or build.order > newest[key].order:
            newest[key] = build
    return newest


def fetch(build, cache_root=None):
    """The vmlinuz of a Debian build, downloaded once and kept (with its config)."""
    directory = cache.kernel_dir(build.cache_name, cache_root)
    vmlinuz = cache.vmlinuz_in(directory)
    if vmlinuz:
        return vmlinuz
    cache.make_room(directory, "kernels")  # before the download, not after it
    packages = [build.image] + ([build.config] if build.config else [])
    if build.debian_version:
        packages = ["%s=%s" % (p, build.debian_version) for p in packages]
    with downloaded(packages, build.suite) as root:
        vmlinuz, release, config = kernel_files(root)
        if vmlinuz is None:
            raise VmError("%s holds no one vmlinuz: is it a kernel package?" % build.image)
        return cache.keep_kernel(directory, vmlinuz, release, config,
                                 {"source": "debian", "name": build.name,
                                  "packages": packages, "suite": suite_name(build.suite)})


def kernel_files(root):
    """(vmlinuz, release, config or None) of unpacked kernel packages: boot/vmlinuz-RELEASE
    (with boot/config-RELEASE: linux-image up to 6.18; linux-binary 6.19 to 7.1, whose
    config is nowhere), or usr/lib/modules/RELEASE/vmlinuz (linux-binary from 7.2 on, its
    config in linux-base's usr/lib/modules/RELEASE/config). (None, None, None) unless
    exactly one."""
    found = [(path, os.path.basename(path)[len("vmlinuz-"):], "config-")
             for path in glob.glob(os.path.join(root, "boot", "vmlinuz-*"))]
    found += [(path, os.path.basename(os.path.dirname(path)), "")
              for path in glob.glob(os.path.join(root, "usr", "lib", "modules", "*", "vmlinuz"))]
    if len(found) != 1:
        return None, None, None
    vmlinuz, release, prefix = found[0]
    config = os.path.join(os.path.dirname(vmlinuz), prefix + (release if prefix else "config"))
    return vmlinuz, release, config if os.path.isfile(config) else None


class downloaded:
    """`with downloaded(packages, suite) as root:` the packages fetched with `apt-get
    download` (from `suite` through tools/debian-archive when given) and unpacked into
    one folder, removed on leaving."""

    def __init__(self, packages, suite=None):
        self.packages, self.suite = packages, suite
        self.scratch = None

    def __enter__(self):
        print("perfscale: fetching %s" % " ".join(self.packages), file=sys.stderr)
        self.scratch = tempfile.mkdtemp(prefix="perfscale-deb-")
        try:
            return self._unpack()
        except BaseException:
            shutil.rmtree(self.scratch, ignore_errors=True)
            raise

    def _unpack(self):
        download = subprocess.run(apt_command("apt-get", self.suite) + ["download"]
                                  + self.packages, cwd=self.scratch, capture_output=True,
                                  text=True)
        debs = glob.glob(os.path.join(self.scratch, "*.deb"))
        if download.returncode != 0 or len(debs) != len(self.packages):
            reason = _last_error(download.stderr)
            if self.suite is not None:
                # The archive keeps a suite's newest security update only: lists fetched
                # earlier can name a package it no longer has (404).
                reason += " (lists fetched earlier may name packages the archive has " \
                          "dropped: `tools/debian-archive %s update` refreshes them)" % self.suite
            raise VmError("apt-get download %s failed: %s" % (" ".join(self.packages), reason))
        root = os.path.join(self.scratch, "root")
        for deb in debs:
            unpacked = subprocess.run(["dpkg-deb", "-x", deb, root], capture_output=True,
                                      text=True)
            if unpacked.returncode != 0:
                raise VmError("unpacking %s failed: %s" % (os.path.basename(deb),
                                                           _last_error(unpacked.stderr)))
        return root

    def __exit__(self, *exc):
        shutil.rmtree(self.scratch, ignore_errors=True)
        return False


def fetch_files(package, keep, directory, what, suite=None):
    """Downloads Debian's `package` and keeps its folder `keep` (e.g. usr) as
    DIRECTORY/KEEP, whole or not at all. `what`: the files' name in messages."""
    cache.make_room(directory, what)
    with downloaded([package], suite) as root:
        partial = directory + ".partial"
        shutil.rmtree(partial, ignore_errors=True)
        os.makedirs(os.path.dirname(os.path.join(partial, keep)), exist_ok=True)
        shutil.move(os.path.join(root, keep), os.path.join(partial, keep))
        shutil.rmtree(directory, ignore_errors=True)
        os.replace(partial, directory)
