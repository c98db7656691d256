"""The kernels `tools/perfscale vm` boots: a vmlinuz path, or a Debian package.

A --kernel value is a vmlinuz path or debian:5.10, debian:6.1, debian:6.12 (each also -rt
or -cloud): the newest such Debian package (debian:5.10.0-N, debian:6.1.0-N and
debian:6.12.N name one version), fetched with `apt-get download` and unpacked with
`dpkg-deb -x` into ~/.cache/perfscale/kernels/. Debian 12's kernels come from the
machine's apt; Debian 11's 5.10 from suite bullseye through tools/debian-archive, with a
sources list and apt state of perfscale's own, so the machine's apt configuration is
never changed.
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

from perfscale.suite import runner


CACHE = os.path.join(os.path.expanduser("~"), ".cache", "perfscale")
DEBIAN_ARCHIVE = os.path.join(runner.REPO_ROOT, "tools", "debian-archive")
# Debian's kernel series: how a package of each is named (group 1: the version that
# orders them, the ABI number for 5.10 and 6.1, the stable patch level for 6.12), how a
# --kernel value names one version, and the suite it comes from (None: the machine's own,
# Debian 12). Debian 12's are the -unsigned images; bullseye's 5.10 the signed ones, the
# package names its users know (`linux-image-5.10.0-32-cloud-amd64`), the same kernel.
SERIES = {
    "5.10": (r"^linux-image-5\.10\.0-(\d+)-%samd64$", "linux-image-5.10.0-",
             r"\.0-(\d+)", "debian:5.10.0-N", "bullseye"),
    "6.1": (r"^linux-image-6\.1\.0-(\d+)-%samd64-unsigned$", "linux-image-6.1.0-",
            r"\.0-(\d+)", "debian:6.1.0-N", None),
    "6.12": (r"^linux-image-6\.12\.(\d+)\+deb12-%samd64-unsigned$", "linux-image-6.12.",
             r"\.(\d+)", "debian:6.12.N", None),
}
DEBIAN_NAMES = tuple("debian:%s%s" % (series, flavour) for series in SERIES
                     for flavour in ("", "-rt", "-cloud"))


class VmError(Exception):
    """What stopped a guest run, in words a user can act on."""


class VmUsageError(VmError):
    """A bad vm argument (exit 2, as usage errors are everywhere else)."""


def apt_command(tool, suite):
    """apt-get or apt-cache for a suite: the machine's own (None), or another through
    tools/debian-archive (perfscale's own sources list and state for it)."""
    return [tool] if suite is None else [DEBIAN_ARCHIVE, suite, tool]


def _debian_kernel_packages(series, flavour):
    """{version: package} of the kernel images of one series apt knows, for one flavour."""
    pattern, prefix, suite = SERIES[series][0], SERIES[series][1], SERIES[series][4]
    pattern = re.compile(pattern % re.escape(flavour))
    listed = subprocess.run(apt_command("apt-cache", suite) + ["pkgnames", prefix],
                            capture_output=True, text=True)
    if listed.returncode != 0:
        raise VmError("cannot list Debian %s kernel packages with apt-cache: %s"
                      % (series, (listed.stderr.strip().splitlines() or ["no message"])[-1]))
    names = listed.stdout.split()
    found = {int(m.group(1)): name for name in names for m in [pattern.match(name)] if m}
    if not found:
        if suite is None:
            raise VmError("apt knows no %s*-%samd64-unsigned package; run `apt-get update` "
                          "(Debian 12 with its security archive has them)" % (prefix, flavour))
        raise VmError("Debian %s knows no %s*-%samd64 package; run `tools/debian-archive %s "
                      "update` to fetch its package lists again" % (suite, prefix, flavour, suite))
    return found


def debian_package(spec):
    """(package, suite) a debian: --kernel names: debian:5.10, debian:6.1 and debian:6.12
    (each [-rt|-cloud]) the newest of the series, debian:5.10.0-N, debian:6.1.0-N and
    debian:6.12.N (each [-rt|-cloud]) that one (for bisecting Debian's own updates)."""
    match = None
    for series, (_, _, version, _, _) in SERIES.items():
        # fullmatch, ASCII: `$` would let a trailing newline through, and \d Arabic-Indic
        # digits, each the same kernel under a label (in the run's JSON) of its own.
        match = re.fullmatch(r"debian:%s(?:%s)?(?:-(rt|cloud))?" % (re.escape(series), version),
                             spec, re.ASCII)
        if match and match.group(1) is not None and match.group(1) != str(int(match.group(1))):
            match = None  # 057 for 57: one kernel, one spelling
        if match:
            break
    if not match:
        raise VmUsageError("--kernel: unknown Debian kernel '%s' (one of: %s, or %s)"
                           % (spec, ", ".join(DEBIAN_NAMES),
                              ", ".join("%s[-rt|-cloud]" % s[3] for s in SERIES.values())))
    flavour = match.group(2) + "-" if match.group(2) else ""
    packages = _debian_kernel_packages(series, flavour)
    suite = SERIES[series][4]
    if match.group(1) is None:
        return packages[max(packages)], suite
    if int(match.group(1)) not in packages:
        raise VmError("--kernel: apt has no Debian %s kernel %s (it has: %s)"
                      % (series, match.group(1), ", ".join(map(str, sorted(packages)))))
    return packages[int(match.group(1))], suite


def _unpacked_vmlinuz(directory):
    kernels = glob.glob(os.path.join(directory, "boot", "vmlinuz-*"))
    return kernels[0] if len(kernels) == 1 else None


def fetch_debian_kernel(package, cache=CACHE, suite=None):
    """The vmlinuz of a Debian kernel package, downloaded once and kept."""
    directory = os.path.join(cache, "kernels", package)
    vmlinuz = _unpacked_vmlinuz(directory)
    if vmlinuz:
        return vmlinuz
    # Only boot/ is kept: what the guest needs (serial console, tracefs, perf events,
    # initramfs) is built into Debian's kernels (5.10's too), so the modules are not.
    fetch_debian_files(package, "boot", directory, "kernels", suite)
    return _unpacked_vmlinuz(directory)


def fetch_debian_files(package, keep, directory, what, suite=None):
    """Downloads Debian's `package` (apt-get download; from `suite` through
    tools/debian-archive when given) and keeps its folder `keep` (e.g. boot) as
    DIRECTORY/KEEP, whole or not at all. `what`: the files' name in messages."""
    try:  # before the download, not after it
        os.makedirs(os.path.dirname(directory), exist_ok=True)
    except OSError as err:
        raise VmError("cannot keep %s in %s (%s): set HOME to a folder you can write"
                      % (what, os.path.dirname(directory), err.strerror or err)) from None
    print("perfscale: fetching %s" % package, file=sys.stderr)
    scratch = tempfile.mkdtemp(prefix="perfscale-deb-")
    try:
        download = subprocess.run(apt_command("apt-get", suite) + ["download", package],
                                  cwd=scratch, capture_output=True, text=True)
        debs = glob.glob(os.path.join(scratch, "*.deb"))
        if download.returncode != 0 or len(debs) != 1:
            lines = download.stderr.strip().splitlines()
            # apt's errors, not its warnings (downloading as root warns every time).
            reason = " ".join(l for l in lines if l.startswith("E:")) or " ".join(lines)
            if suite is not None:
                # The archive keeps a suite's newest security update only: lists fetched
                # earlier can name a package it no longer has (404).
                reason += " (lists fetched earlier may name packages the archive has " \
                          "dropped: `tools/debian-archive %s update` refreshes them)" % suite
            raise VmError("apt-get download %s failed: %s" % (package, reason))
        unpacked = os.path.join(scratch, "root")
        subprocess.run(["dpkg-deb", "-x", debs[0], unpacked], check=True)
        os.makedirs(directory + ".partial", exist_ok=True)
        shutil.rmtree(directory + ".partial")
        os.makedirs(os.path.dirname(os.path.join(directory + ".partial", keep)), exist_ok=True)
        shutil.move(os.path.join(unpacked, keep), os.path.join(directory + ".partial", keep))
        os.replace(directory + ".partial", directory)
    except subprocess.CalledProcessError as err:
        raise VmError("unpacking %s failed: %s" % (package, err))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def resolve_kernel(spec):
    """(vmlinuz path, a label for the JSON): Debian names are fetched, paths checked."""
    if spec.startswith("debian:"):
        package, suite = debian_package(spec)
        path = fetch_debian_kernel(package, suite=suite)
        return path, "%s (%s)" % (spec, os.path.basename(path))
    if not os.path.isfile(spec):
        raise VmUsageError("--kernel: no such kernel image '%s' (a vmlinuz path, or "
                           "debian:5.10, debian:6.1, debian:6.12[-rt|-cloud])" % spec)
    return os.path.abspath(spec), os.path.abspath(spec)
