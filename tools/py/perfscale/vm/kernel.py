"""The kernels `tools/perfscale vm` boots: a vmlinuz path, or a Debian 12 package.

A --kernel value is a vmlinuz path or debian:6.1, debian:6.12 (each also -rt or -cloud):
the newest such Debian 12 package (debian:6.1.0-N and debian:6.12.N name one version),
fetched with `apt-get download` and unpacked with `dpkg-deb -x` into
~/.cache/perfscale/kernels/.
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile


CACHE = os.path.join(os.path.expanduser("~"), ".cache", "perfscale")
# Debian 12's kernel series: how a package of each is named (group 1: the version that
# orders them, the ABI number for 6.1, the stable patch level for 6.12), and how a
# --kernel value names one version.
SERIES = {
    "6.1": (r"^linux-image-6\.1\.0-(\d+)-%samd64-unsigned$", "linux-image-6.1.0-",
            r"\.0-(\d+)", "debian:6.1.0-N"),
    "6.12": (r"^linux-image-6\.12\.(\d+)\+deb12-%samd64-unsigned$", "linux-image-6.12.",
             r"\.(\d+)", "debian:6.12.N"),
}
DEBIAN_NAMES = tuple("debian:%s%s" % (series, flavour) for series in SERIES
                     for flavour in ("", "-rt", "-cloud"))


class VmError(Exception):
    """What stopped a guest run, in words a user can act on."""


class VmUsageError(VmError):
    """A bad vm argument (exit 2, as usage errors are everywhere else)."""


def _debian_kernel_packages(series, flavour):
    """{version: package} of the kernel images of one series apt knows, for one flavour."""
    pattern, prefix = SERIES[series][0], SERIES[series][1]
    pattern = re.compile(pattern % re.escape(flavour))
    try:
        names = subprocess.run(["apt-cache", "pkgnames", prefix],
                               capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError) as err:
        raise VmError("cannot list Debian kernel packages with apt-cache (%s)" % err)
    found = {int(m.group(1)): name for name in names for m in [pattern.match(name)] if m}
    if not found:
        raise VmError("apt knows no %s*-%samd64-unsigned package; run `apt-get update` "
                      "(Debian 12 with its security archive has them)" % (prefix, flavour))
    return found


def debian_package(spec):
    """The package a debian: --kernel names: debian:6.1[-rt|-cloud] and
    debian:6.12[-rt|-cloud] the newest of the series, debian:6.1.0-N[-rt|-cloud] and
    debian:6.12.N[-rt|-cloud] that one (for bisecting Debian's own updates)."""
    match = None
    for series, (_, _, version, _) in SERIES.items():
        match = re.match(r"^debian:%s(?:%s)?(?:-(rt|cloud))?$" % (re.escape(series), version),
                         spec)
        if match:
            break
    if not match:
        raise VmUsageError("--kernel: unknown Debian kernel '%s' (one of: %s, or %s)"
                           % (spec, ", ".join(DEBIAN_NAMES),
                              ", ".join("%s[-rt|-cloud]" % s[3] for s in SERIES.values())))
    flavour = match.group(2) + "-" if match.group(2) else ""
    packages = _debian_kernel_packages(series, flavour)
    if match.group(1) is None:
        return packages[max(packages)]
    if int(match.group(1)) not in packages:
        raise VmError("--kernel: apt has no Debian %s kernel %s (it has: %s)"
                      % (series, match.group(1), ", ".join(map(str, sorted(packages)))))
    return packages[int(match.group(1))]


def _unpacked_vmlinuz(directory):
    kernels = glob.glob(os.path.join(directory, "boot", "vmlinuz-*"))
    return kernels[0] if len(kernels) == 1 else None


def fetch_debian_kernel(package, cache=CACHE):
    """The vmlinuz of a Debian kernel package, downloaded once and kept."""
    directory = os.path.join(cache, "kernels", package)
    vmlinuz = _unpacked_vmlinuz(directory)
    if vmlinuz:
        return vmlinuz
    # Only boot/ is kept: what the guest needs (serial console, tracefs, perf events,
    # initramfs) is built into Debian 12's kernels, so the modules are not.
    fetch_debian_files(package, "boot", directory, "kernels")
    return _unpacked_vmlinuz(directory)


def fetch_debian_files(package, keep, directory, what):
    """Downloads Debian's `package` (apt-get download) and keeps its folder `keep` (e.g.
    boot) as DIRECTORY/KEEP, whole or not at all. `what`: the files' name in messages."""
    try:  # before the download, not after it
        os.makedirs(os.path.dirname(directory), exist_ok=True)
    except OSError as err:
        raise VmError("cannot keep %s in %s (%s): set HOME to a folder you can write"
                      % (what, os.path.dirname(directory), err.strerror or err)) from None
    print("perfscale: fetching %s" % package, file=sys.stderr)
    scratch = tempfile.mkdtemp(prefix="perfscale-deb-")
    try:
        download = subprocess.run(["apt-get", "download", package], cwd=scratch,
                                  capture_output=True, text=True)
        debs = glob.glob(os.path.join(scratch, "*.deb"))
        if download.returncode != 0 or len(debs) != 1:
            raise VmError("apt-get download %s failed: %s" % (package, download.stderr.strip()))
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
        path = fetch_debian_kernel(debian_package(spec))
        return path, "%s (%s)" % (spec, os.path.basename(path))
    if not os.path.isfile(spec):
        raise VmUsageError("--kernel: no such kernel image '%s' (a vmlinuz path, or "
                           "debian:6.1, debian:6.12[-rt|-cloud])" % spec)
    return os.path.abspath(spec), os.path.abspath(spec)
