"""The guest's initramfs: the benchmark binary, its shared libraries (found with ldd),
Debian's static busybox and a short /init that runs the binary and sends its files home
on the results port (perfscale.vm.qemu.decode_results reads them back)."""

import gzip
import re
import os
import subprocess

from perfscale.vm.errors import VmError


BUSYBOX = "/bin/busybox"  # Debian's busybox-static: no shared libraries of its own
# Every file the run writes (flags that name an output file) goes to this guest folder,
# which comes home as a tar archive.
GUEST_OUT_DIR = "/tmp/out"
BEGIN, END = "PERFSCALE-RESULTS-BEGIN", "PERFSCALE-RESULTS-END"
STARTED = "PERFSCALE-INIT-STARTED"
# The guest kernel's /proc/config.gz, where it has one, comes home beside the run's files
# under this name (the output files' names start with a number).
KERNEL_CONFIG = "kernel-config.gz"


class Cpio:
    """A newc cpio archive, the format the kernel unpacks as its initramfs."""

    def __init__(self):
        self._parts = []
        self._inode = 1
        self._seen = set()

    def _entry(self, name, mode, data=b"", rdev=(0, 0)):
        fields = [self._inode, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1],
                  len(name) + 1, 0]
        self._inode += 1
        header = b"070701" + b"".join(b"%08X" % f for f in fields)
        self._parts += [header, name.encode() + b"\0"]
        self._pad()
        self._parts.append(data)
        self._pad()

    def _pad(self):
        size = sum(len(p) for p in self._parts)
        self._parts.append(b"\0" * (-size % 4))

    def directory(self, name):
        parts = name.strip("/").split("/")
        for depth in range(1, len(parts) + 1):
            path = "/".join(parts[:depth])
            if path and path not in self._seen:
                self._seen.add(path)
                self._entry(path, 0o40755)

    def file(self, name, data, mode=0o755):
        name = name.strip("/")
        self.directory(os.path.dirname(name))
        self._entry(name, 0o100000 | mode, data)

    def symlink(self, name, target):
        name = name.strip("/")
        self.directory(os.path.dirname(name))
        self._entry(name, 0o120777, target.encode())

    def char_device(self, name, major, minor):
        self._entry(name.strip("/"), 0o20600, rdev=(major, minor))

    def gzipped(self):
        self._entry("TRAILER!!!", 0)
        return gzip.compress(b"".join(self._parts), compresslevel=1)


def shared_libraries(binary):
    """Every library the dynamic loader maps for `binary`, the loader included (from ldd)."""
    result = subprocess.run(["ldd", binary], capture_output=True, text=True)
    if result.returncode != 0:
        raise VmError("ldd %s failed: %s" % (binary, result.stderr.strip()))
    libraries = []
    for line in result.stdout.splitlines():
        if "not found" in line:
            raise VmError("%s needs a library the host lacks: %s" % (binary, line.strip()))
        match = re.search(r"(/\S+) \(0x", line)
        if match:
            libraries.append(match.group(1))
    return libraries


def quote(argv):
    """`argv` as one line of the guest's shell, each word single-quoted."""
    return " ".join("'%s'" % a.replace("'", "'\\''") for a in argv)


def init_prelude(env, hostname):
    """The start of every guest's /init: busybox's commands, the file systems the suite
    reads (proc, sys, debugfs, tracefs), the host name and the environment."""
    exports = "".join("export %s='%s'\n" % (k, v.replace("'", "")) for k, v in env.items())
    return """#!/bin/busybox sh
/bin/busybox mkdir -p /bin /sbin /proc /sys /dev /tmp
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing
ip link set lo up 2>/dev/null
hostname %s
%sexport HOME=/tmp PATH=/bin TERM=dumb
""" % (hostname, exports)


def init_script(argv, env, hostname):
    """The guest's /init: mounts, runs argv, sends the JSON home, powers off."""
    return init_prelude(env, hostname) + """echo %s
mkdir -p %s
[ -r /proc/config.gz ] && cat /proc/config.gz >%s/%s
cd /tmp
# Through a pipe: the console is a tty, and a progress line redrawn in place would reach
# the host as a smear of carriage returns.
{ %s; echo $? >/tmp/rc; } 2>&1 | cat
rc=$(cat /tmp/rc)
{ echo %s; tar -C %s -cf - . | base64; echo "%s $rc"; } >/dev/ttyS1
sync
reboot -f
""" % (STARTED, GUEST_OUT_DIR, GUEST_OUT_DIR, KERNEL_CONFIG, quote(argv), BEGIN,
       GUEST_OUT_DIR, END)


def busybox_archive():
    """The mount points, a console for /init's output, and busybox."""
    if not os.path.isfile(BUSYBOX):
        raise VmError("%s is missing: run tools/setup vm (package busybox-static)" % BUSYBOX)
    archive = Cpio()
    for name in ("proc", "sys", "dev", "tmp", "sys/kernel/debug"):
        archive.directory(name)
    archive.char_device("dev/console", 5, 1)
    with open(BUSYBOX, "rb") as f:
        archive.file("bin/busybox", f.read())
    return archive


def binary_archive(binary):
    """busybox_archive() with `binary` and the libraries it loads: (the archive, the
    binary's path in the guest)."""
    archive = busybox_archive()
    for library in shared_libraries(binary):
        with open(library, "rb") as f:
            archive.file(library, f.read())
    guest_binary = "/perfscale/" + os.path.basename(binary)
    with open(binary, "rb") as f:
        archive.file(guest_binary, f.read())
    return archive, guest_binary


def build_initramfs(binary, argv, env):
    """The gzipped initramfs: busybox, the binary, its libraries and /init, nothing more."""
    archive, guest_binary = binary_archive(binary)
    hostname = "vm-on-" + os.uname().nodename.split(".")[0]
    archive.file("init", init_script([guest_binary] + argv, env, hostname).encode())
    return archive.gzipped()
