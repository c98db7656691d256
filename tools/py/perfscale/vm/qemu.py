"""QEMU for `tools/perfscale vm`: the command line, a booted guest, lockup diagnosis.

A guest boots the chosen kernel (perfscale.vm.kernel) with an initramfs holding only the
benchmark binary (perfscale.vm.initramfs). The guest writes the JSON results
base64-encoded to a second serial port (the first carries the kernel log and the
benchmark table), so kernel messages can never corrupt them. A guest whose kernel
reports a CPU soft-locked for LOCKUP_GIVE_UP_S is stopped then, and the whole console of
a failed guest is kept in a file the error message names.
"""

import base64
import dataclasses
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time

from perfscale.results.io import dumps
from perfscale.gate import comparability
from perfscale.machine import identity
from perfscale.vm.initramfs import (BEGIN, END, GUEST_OUT_DIR, KERNEL_CONFIG, STARTED,
                                    build_initramfs, busybox_archive)
from perfscale.vm import kernel
from perfscale.vm.cache import CACHE
from perfscale.vm.errors import KernelDidNotBoot, VmError

OUT_FLAGS = ("--benchmark_out=", "--profile_out=")
# A kernel that reaches /init under TCG does so in seconds, even with 16 vCPUs; one that
# has printed nothing for this long is taken as hung.
BOOT_TIMEOUT_S = 120
# KVM works when the probe guest reaches /init this fast; a nested KVM that hangs does not.
KVM_PROBE_TIMEOUT_S = 15
# The kernel's soft-lockup watchdog reports a CPU stuck for 20 s or more, and again about
# every 26 s while it stays stuck; a CPU stuck this long is not coming back, and the guest
# is stopped then rather than at --timeout.
LOCKUP_GIVE_UP_S = 45
SOFT_LOCKUP = re.compile(r"watchdog: BUG: soft lockup - CPU#(\d+) stuck for (\d+)s! \[(.*?)\]")
# The kernel's own lines in the console (a timestamp first): not the benchmark's output.
KERNEL_LINE = re.compile(r"(?m)^\[ *\d+\.\d+\] .*\n?")


# --- QEMU ----------------------------------------------------------------------------

# The instruction clock: QEMU counts the guest's instructions and the guest's clocks read
# that count, 2^0 ns per instruction (shift=0); sleep=off jumps an idle guest to its next
# timer instead of waiting for the host's time, and align=off never slows the guest to
# the host's pace. A guest timed so runs the same path in the same time whatever the host
# does (docs/gate.md, "A clock the host cannot move").
ICOUNT = "shift=0,sleep=off,align=off"
# Under -icount, QEMU 7.2's emulation of an unlocked `cmpxchg16b %gs:(...)` (the kernel's
# this_cpu_cmpxchg128 in the slab allocator) corrupted the guest's RFLAGS now and then:
# a double fault in kmem_cache_alloc_noprof or __kmalloc_node_noprof, EFLAGS 0x07138f62,
# in 2 of 7 quick-suite runs of a Debian 6.12 guest, and in none of 14 with CX16 hidden.
# Without CX16 the kernel takes its own interrupts-off fallback (this_cpu_cmpxchg16b_emu).
ICOUNT_CPU = "max,-cx16"
# How messages name a guest's clock.
CLOCK_WORDS = {"real": "real time", "instructions": "instruction clock"}


def qemu_command(vmlinuz, initrd, cpus, mem_mib, accel, console, results, append="",
                 tcg_threads="single", clock="real"):
    if clock == "instructions":
        timing = ["-icount", ICOUNT]
        cpu = ICOUNT_CPU
    else:
        timing = []
        cpu = "host" if accel == "kvm" else "max"
    # loglevel=5: warnings and what the kernel prints at its default level (a soft
    # lockup's registers and call trace) reach the console file; boot chatter does not.
    return ["qemu-system-x86_64",
            "-accel", accel if accel == "kvm" else "tcg,thread=" + tcg_threads] + timing + [
            "-cpu", cpu, "-smp", str(cpus), "-m", str(mem_mib), "-kernel", vmlinuz,
            "-initrd", initrd, "-nodefaults", "-display", "none", "-no-reboot",
            "-chardev", "file,id=console,path=" + console, "-serial", "chardev:console",
            "-chardev", "file,id=results,path=" + results, "-serial", "chardev:results",
            "-append", ("console=ttyS0 panic=-1 quiet loglevel=5 rdinit=/init "
                        "nokaslr mitigations=off " + append).strip()]


def _die_with_parent():
    import ctypes
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class Guest:
    """One QEMU process; stop() always leaves none behind."""

    def __init__(self, command):
        # Its own session keeps a terminal's Ctrl-C for us (we stop it in order); the
        # parent-death signal stops it even when we are killed outright.
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        start_new_session=True, preexec_fn=_die_with_parent)

    def running(self):
        return self.process.poll() is None

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.stdout.read().decode(errors="replace")


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode(errors="replace")
    except FileNotFoundError:
        return ""


def _tail(text, lines=15):
    """The console's last lines, quoted; '(nothing)' where the guest printed none, which
    is common: the kernel boots quiet until /init."""
    return "\n".join("  | " + line for line in text.rstrip().splitlines()[-lines:]) or (
        "  | (nothing)")


def lockup_report(text):
    """What the console says of the longest soft lockup in it: (seconds stuck, a line
    naming the CPU, the task and the function it is stuck in with its callers), or None."""
    lockups = list(SOFT_LOCKUP.finditer(text))
    if not lockups:
        return None
    worst = max(lockups, key=lambda m: int(m.group(2)))
    # The first report of a lockup carries the registers and call trace; later ones of
    # the same CPU repeat them.
    first = next(m for m in lockups if m.group(1) == worst.group(1))
    trace = KERNEL_LINE.sub(lambda line: re.sub(r"^\[ *\d+\.\d+\] ?", "", line.group(0)),
                            text[first.end():]).splitlines()
    where, callers = "", []
    for line in trace[:80]:
        line = line.strip()
        if SOFT_LOCKUP.search(line) or line.startswith("</TASK>"):
            break
        rip = re.match(r"RIP: \S+:(\S+)", line)
        if rip and not where:
            where = rip.group(1)
        frame = re.match(r"^(?:\? )?([A-Za-z_][\w.]*)\+0x[0-9a-f]+/0x[0-9a-f]+", line)
        if frame and not line.startswith("?") and where and len(callers) < 6:
            callers.append(frame.group(1))
    line = "CPU#%s stuck for %ss in task %s" % (worst.group(1), worst.group(2), worst.group(3))
    if where:
        line += " at %s" % where
    if callers:
        line += " (called from %s)" % " < ".join(callers)
    return int(worst.group(2)), line


def lockup_hint(text, accel, tcg_threads, cpus):
    """What a lockup under multi-threaded TCG most likely is, and how to avoid it."""
    if accel != "tcg" or tcg_threads != "multi" or cpus < 2:
        return ""
    if "text_poke" in text or "asm_exc_int3" in text:
        return ("\n  This is multi-threaded TCG's lockup (docs/vm.md, 'Guests that lock up'): the "
                "kernel patched its own text (a static key) while other vCPUs ran it, and "
                "they keep trapping on an int3 already removed from memory. "
                "--tcg-threads single avoids it.")
    return "\n  Under multi-threaded TCG; --tcg-threads single tells QEMU's part from the kernel's."


def boot(vmlinuz, initrd, cpus, mem_mib, accel, timeout_s, scratch, echo=None,
         boot_timeout_s=BOOT_TIMEOUT_S, append="", tcg_threads="single", keep_console=None,
         clock="real"):
    """Runs the guest to its end; returns (console text, results text).

    `echo` receives console text after /init started, as it arrives. Raises VmError on a
    boot failure, a panic, a soft lockup that lasts or a timeout, and in every case leaves
    no QEMU process; the whole console then goes to `keep_console` (a path), if given.
    """
    machine_words = "%s, %s, %d vCPU%s" % (accel.upper(), CLOCK_WORDS.get(clock, clock), cpus,
                                           "" if cpus == 1 else "s")
    console, results = os.path.join(scratch, "console"), os.path.join(scratch, "results")
    for path in (console, results):
        open(path, "w").close()
    guest = Guest(qemu_command(vmlinuz, initrd, cpus, mem_mib, accel, console, results,
                               append, tcg_threads, clock))
    start, shown, started = time.monotonic(), 0, -1
    try:
        while guest.running():
            time.sleep(0.2)
            text = _read(console)
            if started < 0 and STARTED in text:
                started = text.index(STARTED) + len(STARTED) + 1
                shown = started
            if started >= 0 and echo and len(text) > shown:
                echo(text[shown:])
                shown = len(text)
            if "Kernel panic" in text:
                time.sleep(0.5)
                if started < 0:
                    raise KernelDidNotBoot("the kernel did not boot (%s): it panicked before "
                                           "/init; last console lines:\n%s"
                                           % (machine_words, _tail(_read(console))))
                raise VmError("the guest kernel panicked:\n" + _tail(_read(console)))
            lockup = lockup_report(text)
            if lockup and lockup[0] >= LOCKUP_GIVE_UP_S:
                _settle(console)  # the registers and call traces follow the line
                lockup = lockup_report(_read(console))
                raise (VmError if started >= 0 else KernelDidNotBoot)(
                    "the guest kernel locked up%s: %s (%s)%s"
                    % ("" if started >= 0 else " while booting", lockup[1], machine_words,
                       lockup_hint(_read(console), accel, tcg_threads, cpus)))
            elapsed = time.monotonic() - start
            if started < 0 and elapsed > boot_timeout_s:
                raise KernelDidNotBoot("the kernel did not boot (%s): it did not reach /init in "
                                       "%d s; last console lines:\n%s"
                                       % (machine_words, boot_timeout_s, _tail(text)))
            if elapsed > timeout_s:
                stuck = " (%s)" % lockup[1] if lockup else ""
                booting = "" if started >= 0 else "; its kernel had not reached /init yet"
                raise VmError("the guest did not finish in %d s (--timeout)%s%s; last console "
                              "lines:\n%s" % (timeout_s, stuck, booting,
                                              _tail(text)))
    except VmError as err:
        guest.stop()
        if keep_console:
            kept = _keep(console, keep_console)
            raise type(err)("%s\n  whole guest console: %s" % (err, kept)) from None
        raise
    finally:
        qemu_output = guest.stop()
    text = _read(console)
    if echo and started >= 0 and len(text) > shown:
        echo(text[shown:])
    if guest.process.returncode not in (0, None) and STARTED not in text:
        raise KernelDidNotBoot("the kernel did not boot (%s): QEMU failed (exit %d): %s\n%s"
                               % (machine_words, guest.process.returncode,
                                  qemu_output.strip(), _tail(text)))
    if STARTED not in text:
        raise KernelDidNotBoot("the kernel did not boot (%s): the guest stopped before /init "
                               "ran; last console lines:\n%s" % (machine_words, _tail(text)))
    return text, _read(results)


def _settle(path, quiet_s=2.0, at_most_s=15.0):
    """Waits until `path` has stopped growing for quiet_s (at most at_most_s)."""
    deadline, size, since = time.monotonic() + at_most_s, -1, time.monotonic()
    while time.monotonic() < deadline:
        now = os.path.getsize(path)
        if now != size:
            size, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return
        time.sleep(0.2)


def _keep(console, path):
    """Copies the console to `path` (or, where that cannot be written, to the cache)."""
    for target in (path, os.path.join(CACHE, "vm-console", os.path.basename(path))):
        try:
            os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
            shutil.copyfile(console, target)
            return target
        except OSError:
            continue
    return "(not kept: %s and the cache cannot be written)" % path


def decode_results(text):
    """(exit code of the guest's command, {name: bytes} of the files it wrote) from the
    results port."""
    lines = text.replace("\r", "").splitlines()
    if BEGIN not in lines:
        raise VmError("the guest sent no results (it stopped while the benchmark ran?)")
    body = lines[lines.index(BEGIN) + 1:]
    ends = [i for i, line in enumerate(body) if line.startswith(END + " ")]
    if not ends:
        raise VmError("the guest's results were cut off (no end marker)")
    code = int(body[ends[0]].split()[1])
    try:
        archive = tarfile.open(fileobj=io.BytesIO(base64.b64decode("".join(body[:ends[0]]))))
        files = {os.path.basename(m.name): archive.extractfile(m).read()
                 for m in archive.getmembers() if m.isfile()}
    except (ValueError, tarfile.TarError) as err:
        raise VmError("the guest's results are corrupt (%s)" % err)
    return code, files


def _boot_id():
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return "unknown"


def choose_accelerator(vmlinuz, cache=CACHE):
    """('kvm' or 'tcg', why): KVM only when a probe guest really reaches /init with it.

    /dev/kvm can exist and create VMs while its guests hang (nested virtualization here),
    so opening it proves nothing; the probe boots the kernel with a do-nothing /init under
    a short deadline. The answer is kept per host boot and kernel.
    """
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "tcg", "no usable /dev/kvm"
    key = re.sub(r"[^A-Za-z0-9]+", "_", "%s-%s" % (_boot_id(), vmlinuz))
    memo = os.path.join(cache, "accel", key)
    try:
        with open(memo) as f:
            accel, why = f.read().split("\n", 1)
            return accel, why.strip() + " (probed earlier this boot)"
    except (OSError, ValueError):
        pass
    archive = busybox_archive()
    archive.file("init", ("#!/bin/busybox sh\n/bin/busybox echo %s\n/bin/busybox reboot -f\n"
                          % STARTED).encode())
    scratch = tempfile.mkdtemp(prefix="perfscale-kvm-probe-")
    start = time.monotonic()
    hung = False
    try:
        initrd = os.path.join(scratch, "initrd")
        with open(initrd, "wb") as f:
            f.write(archive.gzipped())
        boot(vmlinuz, initrd, 1, 256, "kvm", KVM_PROBE_TIMEOUT_S, scratch,
             boot_timeout_s=KVM_PROBE_TIMEOUT_S)
        accel, why = "kvm", "a KVM probe guest booted"
    except VmError as err:
        elapsed = time.monotonic() - start
        hung = elapsed >= KVM_PROBE_TIMEOUT_S
        accel, why = "tcg", (
            "a KVM probe guest did not reach /init in %d s" % KVM_PROBE_TIMEOUT_S if hung else
            "a KVM probe guest failed after %.1f s: %s" % (elapsed, str(err).split("\n")[0]))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    # Kept for the boot only when it describes the host (KVM works, or its guests hang);
    # a failure of this one try (the kernel, memory, a busy /dev/kvm) is tried again.
    if accel == "kvm" or hung:
        os.makedirs(os.path.dirname(memo), exist_ok=True)
        with open(memo, "w") as f:
            f.write("%s\n%s\n" % (accel, why))
    return accel, why


def _split_out_flags(flags):
    """({guest file name: (flag prefix, host path)}, the flags with output files put in
    the guest)."""
    outputs, rewritten = {}, []
    for flag in flags:
        prefix = next((p for p in OUT_FLAGS if flag.startswith(p)), None)
        if prefix:
            name = "%d-%s" % (len(outputs), os.path.basename(flag[len(prefix):]))
            outputs[name] = (prefix, flag[len(prefix):])
            flag = prefix + GUEST_OUT_DIR + "/" + name
        rewritten.append(flag)
    return outputs, rewritten


@dataclasses.dataclass
class Machine:
    """The guest `vm` boots: its kernel (a --kernel value), vCPUs, memory and the rest of
    `tools/perfscale vm`'s options (perfscale.commands.vm checks them)."""
    kernel: str
    cpus: int
    mem: int = 1024
    timeout: int = 900
    append: str = ""
    tcg_threads: str = "single"
    clock: str = "real"
    # The vmlinuz `kernel` was resolved to, where `vm` did that once for all its guests.
    vmlinuz: str = ""


# 255: the most vCPUs QEMU's pc machine takes without an IOMMU for x2APIC.
MAX_CPUS = 255
INSTRUCTIONS_NEED_SINGLE = ("--clock instructions counts every vCPU's instructions on one "
                            "host thread: it needs --tcg-threads single")


def machine_problem(machine):
    """What is wrong with `machine`, naming the flag; None when nothing is. `vm`,
    `vm guest` and `bisect` refuse the same machines with the same words."""
    if not 1 <= machine.cpus <= MAX_CPUS:
        return "--cpus values must be in 1..%d, got '%d'" % (MAX_CPUS, machine.cpus)
    if not 256 <= machine.mem <= 65536:
        return "--mem must be MiB in 256..65536, got '%s'" % machine.mem
    if machine.timeout < 1:
        return "--timeout must be a positive number of seconds, got '%s'" % machine.timeout
    if machine.tcg_threads not in ("multi", "single"):
        return "--tcg-threads must be multi or single, got '%s'" % machine.tcg_threads
    if machine.clock not in comparability.CLOCKS:
        return "--clock must be %s, got '%s'" % (" or ".join(comparability.CLOCKS),
                                                 machine.clock)
    if machine.clock == "instructions" and machine.tcg_threads != "single":
        return INSTRUCTIONS_NEED_SINGLE
    return None


def launcher(machine):
    """The command the suite runner puts before the binary to run it in `machine`:
    `vm guest` (perfscale.commands.vm) through the one interpreter, tools/py/python."""
    python = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "python")
    pinned = ["--vmlinuz", machine.vmlinuz] if machine.vmlinuz else []
    return [python, "-m", "perfscale.cli", "vm", "guest", "--kernel", machine.kernel] + pinned + [
            "--cpus", str(machine.cpus), "--mem", str(machine.mem),
            "--timeout", str(machine.timeout), "--append", machine.append,
            "--tcg-threads", machine.tcg_threads, "--clock", machine.clock, "--"]


def guest_results(data, args, guest_kernel, accel, host_cpus, carried_config=None,
                  homes=None):
    """The guest's results file (bytes) with what only the host knows added to its context:
    how the guest ran (comparability.vm_context), the config digest of the kernel under
    test (the guest has no /boot: from the /proc/config.gz it sent home, else the
    boot/config-RELEASE kept beside its vmlinuz), where the kernel came from (a tree's
    commit: kernel.Kernel.context), and, on the real clock, the host's identity, at whose
    pace the guest ran (the instruction clock's figures are the same on every host, so
    its lineage spans them). homes: {guest path: host path} of the files brought home, so
    that the profile file the context names is the host's (report, compare and bisect's
    mail find it by that name)."""
    parsed = json.loads(data)
    context = parsed.setdefault("context", {})
    if homes and context.get("profile_file") in homes:
        context["profile_file"] = homes[context["profile_file"]]
    context["kernel_config_sha256"] = identity.config_digest(
        context.get("kernel_release", ""), carried_config, os.path.dirname(guest_kernel.vmlinuz))
    context.update(guest_kernel.context)
    if args.clock != "instructions":
        context.update(identity.as_host(identity.collect()))
    context.update(comparability.vm_context(
        kernel=guest_kernel.label, vcpus=args.cpus, mem_mib=args.mem, accel=accel,
        host_cpus=host_cpus, clock=args.clock, guest_host_name=context.get("host_name", "")))
    return (dumps(parsed, indent=2) + "\n").encode()


def run_guest(args, command):
    """Boots `args` (a Machine) and runs `command` (BINARY FLAGS...) in it; returns the
    command's exit status. Raises VmError (KernelDidNotBoot where the kernel did not)."""
    guest_kernel = (kernel.kernel_at(args.vmlinuz, args.kernel) if args.vmlinuz
                    else kernel.resolve_kernel(args.kernel))
    vmlinuz, label = guest_kernel.vmlinuz, guest_kernel.label
    if args.clock == "instructions":
        accel, why = "tcg", "the instruction clock is QEMU's emulator's: -icount " + ICOUNT
    else:
        accel, why = choose_accelerator(vmlinuz)
    host_cpus = os.cpu_count() or 1
    threads = "" if accel == "kvm" else ", %s-threaded" % args.tcg_threads
    print("perfscale vm: %s, %d vCPUs, %d MiB, %s%s (%s)%s"
          % (label, args.cpus, args.mem, accel.upper(), threads, why,
             ", kernel arguments: " + args.append if args.append else ""), file=sys.stderr)
    outputs, flags = _split_out_flags(command[1:])
    # A failed guest's console is kept beside its results file.
    results_path = next((host for prefix, host in outputs.values()
                         if prefix == "--benchmark_out="), None)
    keep_console = (results_path + ".console.log" if results_path else
                    os.path.join(CACHE, "vm-console", time.strftime("%Y%m%dT%H%M%S.log")))
    env = {k: v for k, v in os.environ.items() if k == "PERFSCALE_REVISION"}
    scratch = tempfile.mkdtemp(prefix="perfscale-vm-")
    try:
        initrd = os.path.join(scratch, "initrd")
        with open(initrd, "wb") as f:
            f.write(build_initramfs(command[0], flags, env))
        def echo(text):
            sys.stdout.write(KERNEL_LINE.sub("", text.replace("\r", "")))
            sys.stdout.flush()

        _, results = boot(vmlinuz, initrd, args.cpus, args.mem, accel, args.timeout, scratch,
                          echo=echo, append=args.append, tcg_threads=args.tcg_threads,
                          keep_console=keep_console, clock=args.clock)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    code, files = decode_results(results)
    for name, (prefix, host_path) in outputs.items():
        results_file = prefix == "--benchmark_out="
        if name not in files and not results_file:
            continue  # e.g. no profile when profiling could not start: the run says why
        if name not in files:
            raise VmError("the guest's command exited %d without writing %s (did "
                          "--benchmark_filter match anything at this size?)"
                          % (code, host_path))
        data = files[name]
        if results_file:
            data = guest_results(data, args, guest_kernel, accel, host_cpus,
                                 files.get(KERNEL_CONFIG),
                                 {GUEST_OUT_DIR + "/" + guest: host
                                  for guest, (_prefix, host) in outputs.items()})
        with open(host_path, "wb") as f:
            f.write(data)
    return code
