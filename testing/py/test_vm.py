"""`vm`, `bisect`, `plot --vs-cpus` and compare's comparability check.

The unit tests need nothing but Python. The guest tests boot Debian's 6.12 cloud kernel
with 4 vCPUs in QEMU (TCG here: KVM guests hang on this nested host) and run the quick
suite inside with the attributed counters, then Debian's 6.1 cloud kernel for the
older-kernel paths; tools/setup installs QEMU and busybox-static, and `vm` fetches the
kernels with apt, so they run wherever `tools/perfscale test` runs. They skip, saying
why, only where QEMU cannot run at all.
"""

import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import warnings

import pytest

from conftest import REPO_ROOT, data
from perfscale.plots import cpus as plot_cpus
from perfscale.results import io as results_io
from perfscale.gate import comparability
from perfscale.machine import identity
from perfscale.vm import errors, initramfs, kernel, qemu as vm

PERFSCALE = os.path.join(REPO_ROOT, "tools", "perfscale")


# --- initramfs and the results port ----------------------------------------------------

def cpio_names(gzipped):
    """(name, mode) of each member of a newc archive."""
    blob, at, members = gzip.decompress(gzipped), 0, []
    while True:
        assert blob[at:at + 6] == b"070701"
        fields = [int(blob[at + 6 + 8 * i:at + 14 + 8 * i], 16) for i in range(13)]
        mode, size, name_size = fields[1], fields[6], fields[11]
        name = blob[at + 110:at + 110 + name_size - 1].decode()
        at = (at + 110 + name_size + 3) & ~3
        at = (at + size + 3) & ~3
        if name == "TRAILER!!!":
            return members
        members.append((name, mode))


def test_cpio_holds_directories_before_files_and_a_console():
    archive = initramfs.Cpio()
    archive.char_device("dev/console", 5, 1)
    archive.file("lib/x86_64-linux-gnu/libfoo.so", b"abc")
    archive.symlink("bin/sh", "busybox")
    names = cpio_names(archive.gzipped())
    assert [n for n, _ in names] == ["dev/console", "lib", "lib/x86_64-linux-gnu",
                                     "lib/x86_64-linux-gnu/libfoo.so", "bin", "bin/sh"]
    assert dict(names)["dev/console"] == 0o20600


def test_initramfs_takes_the_binary_its_libraries_and_busybox_only():
    if not os.path.isfile(initramfs.BUSYBOX):
        pytest.skip("no %s (tools/setup vm installs busybox-static)" % initramfs.BUSYBOX)
    binary = shutil.which("true")
    members = cpio_names(initramfs.build_initramfs(binary, ["--x"], {}))
    files = {name for name, mode in members if mode & 0o170000 == 0o100000}
    libraries = {lib.lstrip("/") for lib in initramfs.shared_libraries(binary)}
    assert libraries and any("ld-linux" in lib for lib in libraries)
    assert files == libraries | {"perfscale/true", "bin/busybox", "init"}


def test_init_quotes_arguments_and_reports_the_exit_code():
    script = initramfs.init_script(["/perfscale/all", "--benchmark_filter=a'b c"], {}, "vm-on-x")
    assert "'/perfscale/all' '--benchmark_filter=a'\\''b c'" in script
    assert "mount -t tracefs" in script and "mount -t debugfs" in script
    assert '"%s $rc"' % initramfs.END in script
    # A kernel that carries its config sends it home with the results.
    assert "cat /proc/config.gz >%s/%s" % (initramfs.GUEST_OUT_DIR, initramfs.KERNEL_CONFIG) \
        in script


def test_results_are_decoded_from_the_port_and_truncation_is_said():
    import base64
    import io
    import tarfile
    blob = io.BytesIO()
    with tarfile.open(fileobj=blob, mode="w") as archive:
        info = tarfile.TarInfo("./0-r.json")
        info.size = 2
        archive.addfile(info, io.BytesIO(b"{}"))
    payload = base64.encodebytes(blob.getvalue()).decode()
    text = "noise\r\n%s\r\n%s%s 3\r\n" % (initramfs.BEGIN, payload, initramfs.END)
    assert vm.decode_results(text) == (3, {"0-r.json": b"{}"})
    with pytest.raises(vm.VmError, match="cut off"):
        vm.decode_results("%s\n%s" % (initramfs.BEGIN, payload))
    with pytest.raises(vm.VmError, match="corrupt"):
        vm.decode_results("%s\nAAAA\n%s 0\n" % (initramfs.BEGIN, initramfs.END))
    with pytest.raises(vm.VmError, match="no results"):
        vm.decode_results("")


def test_output_files_point_into_the_guest():
    outputs, flags = vm._split_out_flags(["--a", "--benchmark_out=/host/r.json",
                                          "--profile_out=/host/r.json.profile.json"])
    assert outputs == {"0-r.json": ("--benchmark_out=", "/host/r.json"),
                       "1-r.json.profile.json": ("--profile_out=", "/host/r.json.profile.json")}
    assert flags == ["--a", "--benchmark_out=/tmp/out/0-r.json",
                     "--profile_out=/tmp/out/1-r.json.profile.json"]


def test_the_profile_file_a_guests_results_name_is_the_one_brought_home(tmp_path):
    # It named the guest's /tmp/out/1-r.json.profile.json, which no host command found
    # (the bisect demo of 2026-12-07 mailed no profile difference for it).
    outputs, _flags = vm._split_out_flags(["--benchmark_out=/host/r.json",
                                           "--profile_out=/host/r.json.profile.json"])
    homes = {vm.GUEST_OUT_DIR + "/" + guest: host for guest, (_p, host) in outputs.items()}
    vmlinuz = tmp_path / "vmlinuz"
    vmlinuz.write_bytes(b"kernel")
    with open(data("base.json")) as f:
        document = json.load(f)
    document["context"]["profile_file"] = "/tmp/out/1-r.json.profile.json"
    guest_kernel = kernel.Kernel("debian:6.12-cloud", str(vmlinuz), "debian:6.12-cloud", {})
    context = json.loads(vm.guest_results(json.dumps(document).encode(),
                                          vm.Machine("debian:6.12-cloud", 2), guest_kernel,
                                          "tcg", 2, None, homes))["context"]
    assert context["profile_file"] == "/host/r.json.profile.json"


def guest_context(vmlinuz, machine, carried=None, **context):
    with open(data("base.json")) as f:
        document = json.load(f)
    document["context"].update(context)
    guest_kernel = kernel.Kernel("debian:6.12-cloud", str(vmlinuz), "debian:6.12-cloud",
                                 {"kernel_tree_commit": "c0ffee"})
    return json.loads(vm.guest_results(json.dumps(document).encode(), machine, guest_kernel,
                                       "tcg", 2, carried))["context"]


def test_a_guests_run_records_its_kernels_config_and_its_hosts_identity(tmp_path):
    # The guest has no /boot: the digest comes from the kernel package's boot/ folder
    # beside the vmlinuz it booted, by the function that digests this machine's config.
    release = "6.12.9+deb12-cloud-amd64"
    boot = tmp_path / "linux-image" / "boot"
    boot.mkdir(parents=True)
    (boot / ("vmlinuz-" + release)).write_bytes(b"kernel")
    (boot / ("config-" + release)).write_text("CONFIG_PERF_EVENTS=y\n")
    vmlinuz = boot / ("vmlinuz-" + release)
    guest = dict(kernel_release=release, host_name="vm-on-lab", kernel_cmdline="console=ttyS0",
                 machine_cpu_model="QEMU TCG CPU version 2.5+")
    real_clock = vm.Machine("debian:6.12-cloud", 2)
    context = guest_context(vmlinuz, real_clock, **guest)
    assert context["kernel_config_sha256"] == hashlib.sha256(
        b"CONFIG_PERF_EVENTS=y\n").hexdigest()
    assert context["kernel_cmdline"] == "console=ttyS0"  # the guest's own, kept
    assert context["kernel_tree_commit"] == "c0ffee"  # where the kernel came from
    # The config the kernel carries (/proc/config.gz, sent home) is the one it runs.
    carried = guest_context(vmlinuz, real_clock, gzip.compress(b"CONFIG_X=y\n"), **guest)
    assert carried["kernel_config_sha256"] == hashlib.sha256(b"CONFIG_X=y\n").hexdigest()
    other = guest_context(vmlinuz, real_clock, **dict(guest, kernel_release="6.1.0-9-amd64"))
    assert other["kernel_config_sha256"] == "unknown"
    # On the real clock the guest runs at its host's pace: the host is in its identity, so
    # the same guest on another host is another lineage, and the nightly names why.
    here = identity.collect()
    assert context["machine_cpu_model"] == "QEMU TCG CPU version 2.5+"
    assert context["machine_host_cpu_model"] == here["machine_cpu_model"]
    assert context["machine_host_mitigations"] == here["machine_mitigations"]
    moved = dict(context, machine_host_microcode="0xdead")
    assert identity.digest(moved) != identity.digest(context)
    assert identity.changes(context, moved) == [
        "host's microcode: %s -> 0xdead" % context["machine_host_microcode"]]
    # The instruction clock's figures are the same on every host: its lineage spans them.
    counted = guest_context(vmlinuz, vm.Machine("debian:6.12-cloud", 2, clock="instructions"),
                            **guest)
    assert not [k for k in counted if k.startswith("machine_host_")]
    assert counted["kernel_config_sha256"] == context["kernel_config_sha256"]


# What Linux 6.1 printed for a soft lockup in a 4-vCPU TCG guest (loglevel=5), abridged.
SOFT_LOCKUP_CONSOLE = """\
[   60.111111] watchdog: BUG: soft lockup - CPU#3 stuck for 22s! [psyn0.9:140]
[   60.111111] Modules linked in:
[   60.111111] CPU: 3 PID: 140 Comm: psyn0.9 Not tainted 6.1.0-57-cloud-amd64 #1  Debian 6.1.158-1
[   60.111111] RIP: 0010:smp_call_function_single+0xe5/0x130
[   60.111111] Code: 8b 4c 24 08 65 48 2b 0c 25 28 00 00 00 75 43 c9 c3 cc cc cc cc 8b 55 e8 <f3> 90
[   60.111111] Call Trace:
[   60.111111]  <TASK>
[   60.111111]  ? remote_function+0x40/0x40
[   60.111111]  event_function_call+0x9e/0x160
[   60.111111]  perf_event_for_each_child+0x3a/0x80
[   60.111111]  _perf_ioctl+0x1c0/0x9a0
[   60.111111]  perf_ioctl+0x44/0x60
[   60.111111]  </TASK>
[   86.111111] watchdog: BUG: soft lockup - CPU#3 stuck for 48s! [psyn0.9:140]
"""


def test_a_soft_lockup_is_read_from_the_console():
    assert vm.lockup_report("[    1.0] ok\n") is None
    seconds, line = vm.lockup_report(SOFT_LOCKUP_CONSOLE)
    assert seconds == 48
    assert line == ("CPU#3 stuck for 48s in task psyn0.9:140 at smp_call_function_single+0xe5/"
                    "0x130 (called from event_function_call < perf_event_for_each_child < "
                    "_perf_ioctl < perf_ioctl)")


def test_a_lockup_under_multi_threaded_tcg_names_the_way_out():
    hint = vm.lockup_hint(SOFT_LOCKUP_CONSOLE + " text_poke_bp_batch+0x29f/0x300\n", "tcg",
                          "multi", 4)
    assert "int3" in hint and "--tcg-threads single" in hint
    assert "--tcg-threads single" in vm.lockup_hint(SOFT_LOCKUP_CONSOLE, "tcg", "multi", 4)
    assert vm.lockup_hint(SOFT_LOCKUP_CONSOLE, "tcg", "single", 4) == ""
    assert vm.lockup_hint(SOFT_LOCKUP_CONSOLE, "kvm", "multi", 4) == ""


def test_the_instruction_clock_reaches_qemu():
    command = vm.qemu_command("vmlinuz", "initrd", 2, 1024, "tcg", "c", "r",
                              clock="instructions")
    assert command[command.index("-icount") + 1] == "shift=0,sleep=off,align=off"
    assert command[command.index("-cpu") + 1] == "max,-cx16"  # QEMU's cmpxchg16b: vm.ICOUNT_CPU
    assert command[command.index("-accel") + 1] == "tcg,thread=single"
    real = vm.qemu_command("vmlinuz", "initrd", 2, 1024, "tcg", "c", "r")
    assert "-icount" not in real and real[real.index("-cpu") + 1] == "max"


def test_kernel_arguments_and_tcg_threads_reach_qemu():
    command = vm.qemu_command("vmlinuz", "initrd", 4, 1024, "tcg", "c", "r",
                              append="nowatchdog idle=poll", tcg_threads="single")
    assert command[command.index("-accel") + 1] == "tcg,thread=single"
    assert command[command.index("-append") + 1].endswith(" nowatchdog idle=poll")
    assert "loglevel=5" in command[command.index("-append") + 1]  # a lockup's call trace
    kvm = vm.qemu_command("vmlinuz", "initrd", 4, 1024, "kvm", "c", "r")
    assert kvm[kvm.index("-accel") + 1] == "kvm"


def test_unknown_kernels_are_refused(tmp_path):
    with pytest.raises(errors.VmUsageError, match="not a Debian kernel name"):
        kernel.resolve_kernel("debian:4.19.x")
    with pytest.raises(errors.VmUsageError, match="no such kernel image"):
        kernel.resolve_kernel(str(tmp_path / "missing"))
    with pytest.raises(errors.VmUsageError, match="no such folder"):
        kernel.resolve_kernel("tree:%s@v1" % (tmp_path / "missing"))


# --- comparability ----------------------------------------------------------------------

def labelled(tmp_path, name, **vm_args):
    with open(data("base.json")) as f:
        document = json.load(f)
    if vm_args:
        document["context"].update(comparability.vm_context(**vm_args))
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return path


TCG = dict(kernel="debian:6.1", vcpus=2, mem_mib=1024, accel="tcg", host_cpus=2)


def test_tcg_and_oversubscribed_guests_are_labelled():
    assert comparability.vm_context(**TCG)["timings_comparable"] == "no"
    wide = comparability.vm_context(kernel="k", vcpus=16, mem_mib=1, accel="kvm", host_cpus=2)
    assert wide["timings_comparable"] == "no" and "16 vCPUs" in wide["timings_note"]
    fair = comparability.vm_context(kernel="k", vcpus=2, mem_mib=1, accel="kvm", host_cpus=2)
    assert fair["timings_comparable"] == "yes"


INSTRUCTIONS = dict(TCG, clock="instructions", guest_host_name="vm-on-vm")


def test_instruction_clock_runs_are_labelled_and_named_after_their_clock():
    context = comparability.vm_context(**INSTRUCTIONS)
    assert context["vm_clock"] == "instructions" and context["timings_comparable"] == "no"
    assert "1 ns per guest instruction" in context["timings_note"]
    # The lineage's machine is the clock, not the host: a nightly never mixes the two.
    assert context["host_name"] == comparability.INSTRUCTION_CLOCK_HOST
    assert context["vm_guest_host_name"] == "vm-on-vm"
    wide = comparability.vm_context(**dict(INSTRUCTIONS, vcpus=16))
    assert "time-sliced" not in wide["timings_note"]  # one host thread runs them all anyway
    assert comparability.vm_context(**TCG)["vm_clock"] == "real"
    assert "host_name" not in comparability.vm_context(**TCG)


def test_compare_judges_instruction_clock_runs_on_their_timings_and_only_those(tmp_path,
                                                                              cli):
    def guest(name, scale, **vm_args):
        with open(data("base.json")) as f:
            document = json.load(f)
        document["context"].update(comparability.vm_context(**vm_args))
        for bench in document["benchmarks"]:
            if "BM_BreakpointEnable" in bench["name"] and bench.get("real_time"):
                bench["real_time"] *= scale
        path = tmp_path / name
        path.write_text(json.dumps(document))
        return path
    base = guest("a.json", 1.0, **INSTRUCTIONS)
    code, out, _ = cli("compare", base, guest("b.json", 1.5, **INSTRUCTIONS))
    assert code == 1 and "instruction clock" in out and "judged against each other" in out
    assert "slower" in out and "timings not judged" not in out
    code, out, _ = cli("compare", base, guest("c.json", 1.0, **TCG))
    assert code == 2 and "refusing to compare timings" in out and "instruction clock" in out
    code, out, _ = cli("compare", labelled(tmp_path, "bare.json"), base)
    assert code == 2 and "refusing to compare timings" in out


def test_compare_refuses_a_tcg_run_against_bare_metal(tmp_path, cli):
    code, out, _ = cli("compare", labelled(tmp_path, "bare.json"),
                       labelled(tmp_path, "tcg.json", **TCG))
    assert code == 2 and "refusing to compare timings" in out and "TCG" in out


def test_compare_of_two_guests_judges_counts_only(tmp_path, cli):
    def guest(name, switches_in_enable):
        with open(data("base.json")) as f:
            document = json.load(f)
        document["context"].update(comparability.vm_context(**TCG))
        for bench in document["benchmarks"]:
            enable = "BM_BreakpointEnable" in bench["name"]
            bench["ctx_switches/op"] = switches_in_enable if enable else 2.0
            if enable and switches_in_enable > 2:
                bench["real_time"] /= 10  # faster, yet not judged
        path = tmp_path / name
        path.write_text(json.dumps(document))
        return path
    base, new = guest("a.json", 2.0), guest("b.json", 6.0)
    code, out, _ = cli("compare", base, new)
    assert code == 1 and "timings not judged" in out
    assert "COUNTS UP" in out and "REGRESSION: counts up" in out
    assert all("BM_BreakpointEnable" in line for line in out.splitlines()
               if "COUNTS UP" in line)
    assert "ipis_system/op" in out and "usecs/op" not in out  # shown, not judged; times left out
    code, out, _ = cli("compare", base, base)
    assert code == 0 and "no count regression" in out


def test_compare_of_two_guests_with_too_few_repetitions_fails_closed(tmp_path, cli):
    with open(data("base.json")) as f:
        document = json.load(f)
    document["context"].update(comparability.vm_context(**TCG))
    kept, seen = [], {}
    for bench in document["benchmarks"]:  # two repetitions of each, as a short A/B has
        if bench.get("run_type") == "iteration":
            seen[bench["run_name"]] = seen.get(bench["run_name"], 0) + 1
            if seen[bench["run_name"]] > 2:
                continue
        bench["ctx_switches/op"] = 2.0
        kept.append(bench)
    document["benchmarks"] = kept
    path = tmp_path / "short.json"
    path.write_text(json.dumps(document))
    code, out, _ = cli("compare", path, path)
    assert code == 2 and "cannot judge the counts: 2 repetition(s), need >= 9" in out


def test_report_says_a_tcg_runs_timings_are_not_comparable(tmp_path, cli):
    code, _, _ = cli("report", labelled(tmp_path, "tcg.json", **TCG), "-o", tmp_path / "r",
                     "--no-plots")
    page = (tmp_path / "r" / "report.md").read_text()
    assert code == 0 and "Timings not comparable with bare metal** (emulated by QEMU TCG" in page
    assert "| vm_accelerator | tcg |" in page
    code, _, _ = cli("report", labelled(tmp_path, "icount.json", **INSTRUCTIONS), "-o",
                     tmp_path / "i", "--no-plots")
    page = (tmp_path / "i" / "report.md").read_text()
    assert code == 0 and "Timed on QEMU's instruction clock**: every figure is a path length" in page
    assert "| vm_clock | instructions |" in page and "not comparable with bare" not in page


# --- plot --vs-cpus -----------------------------------------------------------------------

def test_plot_vs_cpus_joins_cpu_sized_parameters(tmp_path):
    sets = []
    for cpus in (2, 4, 8):
        text = json.dumps({"context": {"vm_vcpus": str(cpus)}, "benchmarks": [
            {"name": "BM_BreakpointEnable/passive:%d/real_time" % (4 * cpus),
             "run_type": "iteration", "real_time": 1.0, "cpu_time": 1.0, "time_unit": "us",
             "iterations": 1, "ipis_system/op": 8.0 * cpus, "usecs/op": 1.0}]})
        sets.append(results_io.parse_results(text, "cpus%d" % cpus))
    curves = plot_cpus.collect(sets, {"passive"})
    assert curves == {("BM_BreakpointEnable", "ipis_system/op"): {
        "BM_BreakpointEnable/passive:4xCPUs": [(2, [16.0]), (4, [32.0]), (8, [64.0])]}}
    written = plot_cpus.plots(sets, str(tmp_path), ["passive"])
    assert len(written) == 1 and os.path.getsize(written[0][0]) > 0


# --- guests ---------------------------------------------------------------------------------

def qemu_missing():
    if not shutil.which("qemu-system-x86_64"):
        return "qemu-system-x86_64 is not installed (tools/setup vm installs it)"
    if not os.path.isfile(initramfs.BUSYBOX):
        return "%s is missing (tools/setup vm installs busybox-static)" % initramfs.BUSYBOX
    return None


def qemu_processes_under(directory):
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if str(directory).encode() in f.read():
                    found.append(pid)
        except OSError:
            pass
    return found


def perfscale_vm(tmp_path, *args, timeout):
    env = dict(os.environ, TMPDIR=str(tmp_path))
    return subprocess.run([PERFSCALE, "vm"] + list(args), capture_output=True, text=True,
                          env=env, timeout=timeout)


def test_a_kernel_that_does_not_boot_is_said_and_leaves_no_qemu(tmp_path):
    reason = qemu_missing()
    if reason:
        pytest.skip(reason)
    bogus = tmp_path / "vmlinuz-bogus"
    bogus.write_bytes(b"\0" * 4096)
    result = perfscale_vm(tmp_path, "--kernel", str(bogus), "--cpus", "1,2", "--timeout", "60",
                          "--", "run", "--quick", timeout=300)
    # Skipped, with the reason, at each size: `vm` and whoever runs it tell it from a failure.
    assert result.returncode == errors.DID_NOT_BOOT_STATUS, result.stderr
    assert result.stderr.count("perfscale vm: the kernel did not boot (TCG, real time, 1 vCPU)"
                               ": QEMU failed") == 1, result.stderr
    assert "the kernel did not boot (TCG, real time, 2 vCPUs)" in result.stderr
    assert "perfscale vm: skipped --cpus 1,2: %s did not boot there" % bogus in result.stderr
    assert qemu_processes_under(tmp_path) == []


def test_usage_errors_name_the_flag(tmp_path):
    result = perfscale_vm(tmp_path, "--kernel", "debian:6.1", "--cpus", "0", "--", "run",
                          timeout=60)
    assert result.returncode == 2 and "--cpus" in result.stderr
    result = perfscale_vm(tmp_path, "--cpus", "2", "--", "run", timeout=60)
    assert result.returncode == 2 and "--kernel is required" in result.stderr
    result = perfscale_vm(tmp_path, "--kernel", "debian:6.1", "--cpus", "2", timeout=60)
    assert result.returncode == 2 and "-- run" in result.stderr
    result = perfscale_vm(tmp_path, "--kernel", "debian:6.1", "--cpus", "2", "--clock", "tsc",
                          "--", "run", timeout=60)
    assert result.returncode == 2 and "--clock must be real or instructions" in result.stderr
    result = perfscale_vm(tmp_path, "--kernel", "debian:6.1", "--cpus", "2", "--clock",
                          "instructions", "--tcg-threads", "multi", "--", "run", timeout=60)
    assert result.returncode == 2 and "needs --tcg-threads single" in result.stderr


def perfscale_to_a_gone_reader(tmp_path, stream, *args):
    """`tools/perfscale ARGS` with `stream` (stdout or stderr) a pipe whose reader has
    closed, buffered as it is wherever PYTHONUNBUFFERED is not set; (status, the other
    stream's text)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["TMPDIR"] = str(tmp_path)
    reader, writer = os.pipe()
    os.close(reader)
    try:
        other = "stderr" if stream == "stdout" else "stdout"
        result = subprocess.run([PERFSCALE] + list(args), env=env, text=True, timeout=60,
                                **{stream: writer, other: subprocess.PIPE})
    finally:
        os.close(writer)
    return result.returncode, getattr(result, other)


def test_a_reader_gone_before_the_exit_flush_is_a_closed_pipe_not_status_120(tmp_path):
    # Output still buffered when the command returned was flushed by Python's exit,
    # which turns a failed flush into status 120 ("Exception ignored ... BrokenPipeError"):
    # how a `vm` whose reader had gone could end.
    for args in (["vm", "--help"], ["--help"]):
        code, err = perfscale_to_a_gone_reader(tmp_path, "stdout", *args)
        assert (code, err) == (141, ""), args
    code, _ = perfscale_to_a_gone_reader(tmp_path, "stderr", "vm", "--kernel", "debian:6.1",
                                         "--cpus", "0", "--", "run")
    assert code == 141


def test_a_hung_guest_times_out_and_leaves_no_qemu(tmp_path):
    reason = qemu_missing()
    if reason:
        pytest.skip(reason)
    out = tmp_path / "hung.json"
    result = perfscale_vm(tmp_path, "--kernel", "debian:6.1-cloud", "--cpus", "1",
                          "--timeout", "3", "--", "run", "--quick", "--out", str(out),
                          timeout=300)
    assert result.returncode == 1
    assert "did not finish in 3 s (--timeout)" in result.stderr
    # The whole console is kept beside the results file it did not write.
    assert "whole guest console: %s.console.log" % out in result.stderr
    # A 3 s guest may still be booting (quietly, so its console is empty) or already in
    # /init: the message says which, and the kept file holds every line it quoted (the
    # file is copied once QEMU is gone, so it may hold more).
    kept = (tmp_path / "hung.json.console.log").read_text()
    quoted = [line[4:] for line in result.stderr.splitlines() if line.startswith("  | ")]
    if quoted == ["(nothing)"]:
        assert "its kernel had not reached /init yet" in result.stderr
    else:
        assert quoted and all(line in kept for line in quoted)
    assert qemu_processes_under(tmp_path) == []


def test_a_killed_vm_takes_its_guest_with_it(tmp_path):
    reason = qemu_missing()
    if reason:
        pytest.skip(reason)
    import signal
    import time
    env = dict(os.environ, TMPDIR=str(tmp_path))
    process = subprocess.Popen([PERFSCALE, "vm", "--kernel", "debian:6.1-cloud", "--cpus", "1",
                                "--", "run", "--quick"], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not qemu_processes_under(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert qemu_processes_under(tmp_path), "no guest started"
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    deadline = time.monotonic() + 10
    while qemu_processes_under(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert qemu_processes_under(tmp_path) == []


def quick_suite_in_guest(tmp_path, kernel, cpus, clock="real"):
    """Runs the quick suite in a guest; returns its results after the checks every guest
    passes: its kernel, its vCPUs, each family present, each row measured or saying why.

    The suite takes 1-3 minutes in these guests under TCG here. A guest that locks up or
    hangs must end cleanly (no QEMU left), and is tried once more, said as a warning
    (multi-threaded TCG hung them; the default single-threaded TCG has not: docs/vm.md,
    "Guests that lock up"); any other failure fails at once, and so do two hangs.
    """
    reason = qemu_missing()
    if reason:
        pytest.skip(reason)
    out = tmp_path / "guest.json"
    hangs = []
    for _ in range(2):
        result = perfscale_vm(tmp_path, "--kernel", kernel, "--cpus", str(cpus),
                              "--clock", clock, "--timeout", "400", "--", "run", "--quick",
                              "--out", str(out), timeout=600)
        assert qemu_processes_under(tmp_path) == []
        hung = "did not finish in" in result.stderr or "locked up" in result.stderr
        if result.returncode == 0 or not hung:
            break
        hangs.append(next(line for line in result.stderr.splitlines()
                          if "perfscale vm:" in line and ("locked" in line or "did not" in line)))
    assert result.returncode == 0, result.stderr[-3000:]
    if hangs:
        warnings.warn("the %s guest hung %d time(s) before a run finished: %s"
                      % (kernel, len(hangs), hangs))
    results = results_io.load_results(str(out))
    context = results.context
    assert context["num_online_cpus"] == str(cpus) and context["vm_vcpus"] == str(cpus)
    assert context["vm_accelerator"] in ("kvm", "tcg") and context["vm_memory_mib"] == "1024"
    assert context["timings_comparable"] in ("yes", "no")
    families = {e.family for e in results.entries.values()}
    for family in ("BM_BreakpointThread", "BM_BreakpointEnable", "BM_EventOpen",
                   "BM_Synthesize", "BM_PipePingPong"):
        assert family in families, "no %s row in the guest's results" % family
    for entry in results.entries.values():
        # A row either measured something or says why it did not.
        assert entry.real_ns or all(entry.errors), entry.name
    return results


def test_debian_guest_runs_quick_suite_with_attribution(tmp_path):
    """4 vCPUs, Debian 6.12, on the instruction clock the noisy-host nightly uses: the
    quick suite with the attributed counters on."""
    results = quick_suite_in_guest(tmp_path, "debian:6.12-cloud", 4, clock="instructions")
    context = results.context
    assert context["kernel_release"].startswith("6.12.")
    assert context["vm_clock"] == "instructions" and context["vm_accelerator"] == "tcg"
    assert results.host == comparability.INSTRUCTION_CLOCK_HOST
    assert context["vm_guest_host_name"]  # the guest's own name, kept beside
    # 6.12 has ipi:ipi_send_cpu and csd:csd_queue_cpu (6.4+) and cpumask filters (6.6+).
    sources = json.loads(context["counter_sources"])
    assert "ipi:ipi_send_cpumask" in sources["ipis_sent"], sources["ipis_sent"]
    assert sources["xcalls"].startswith("tracepoint csd:csd_queue_cpu"), sources["xcalls"]
    toggles = [e for e in results.entries.values()
               if e.name.startswith("BM_BreakpointEnable/passive:16/active:0/placement:other")]
    assert toggles and all(e.counters.get("ipis_sent/op", [0])[0] > 0 for e in toggles)


def test_older_kernel_runs_or_skips_every_family(tmp_path):
    """4 vCPUs, Debian 6.1 (no ipi:ipi_send_cpu): every family runs or skips with its
    reason, and the counters fall back."""
    results = quick_suite_in_guest(tmp_path, "debian:6.1-cloud", 4)
    context = results.context
    assert context["kernel_release"].startswith("6.1.0-")
    # Linux 6.1 has no ipi:ipi_send_cpu (6.4+), and attribution is off there by default
    # (docs/counters.md, "Before Linux 6.4"): the attributed IPI count says why it is missing, and
    # the system-wide one stands in, under its own name.
    sources = json.loads(context["counter_sources"])
    assert sources["ipis_sent"].startswith("unavailable: ")
    assert "ipi_send_cpu" in sources["ipis_sent"]
    assert any("ipis_system/op" in e.counters for e in results.entries.values())


def test_a_guest_nightly_is_judged_on_the_instruction_clock(tmp_path):
    """nightly --guest end to end, on one row: the first run is the baseline of the
    instruction clock's own lineage, the second is judged on its timings against it."""
    reason = qemu_missing()
    if reason:
        pytest.skip(reason)
    db = tmp_path / "h.sqlite"
    env = dict(os.environ, TMPDIR=str(tmp_path),
               PERFSCALE_COMPARE_PY=str(tmp_path / "no-compare.py"))
    nightly = [PERFSCALE, "nightly", "--guest", "debian:6.12-cloud", "--guest-cpus", "1",
               "--history", str(db), "--report-dir", str(tmp_path / "n"), "--no-plots",
               "--", "--quick", "--", "--benchmark_filter=BM_PipePingPong/set:none"]
    first = subprocess.run(nightly, capture_output=True, text=True, env=env, timeout=600)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert "--clock instructions -- run --repetitions 10" in first.stdout
    assert "no baseline yet for host qemu-instruction-clock, 1 CPUs" in first.stdout
    second = subprocess.run(nightly, capture_output=True, text=True, env=env, timeout=600)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert re.search(r"^BM_PipePingPong/set:none/\S*real_time: no significant change ",
                     second.stdout, re.M), second.stdout[-3000:]
    assert "nightly: no regression against run 1" in second.stdout
    assert qemu_processes_under(tmp_path) == []


def test_several_sizes_give_one_result_file_each():
    # `vm --cpus 2,4 -- run --out r.json` writes r-cpus2.json and r-cpus4.json.
    from perfscale.commands import vm as vm_command
    assert vm_command.sized_out("r.json", 4) == "r-cpus4.json"
    assert vm_command.sized_out("/x/r", 2) == "/x/r-cpus2.json"
    machine = vm.Machine("debian:6.1", 2, clock="instructions")
    argv = vm.launcher(machine)
    assert argv[argv.index("guest") + 1:argv.index("--cpus")] == ["--kernel", "debian:6.1"]
    assert argv[argv.index("--clock") + 1] == "instructions"
    assert argv[argv.index("--tcg-threads") + 1] == "single" and argv[-1] == "--"


def test_vm_guest_checks_what_vm_checks(capsys):
    # `vm guest` (the runner's launcher) takes the same machine options with the same
    # checks: the instruction clock's need of single-threaded TCG is said once, in Python.
    from perfscale.commands import vm as vm_command
    with pytest.raises(SystemExit) as exit_info:
        vm_command.main(["guest", "--kernel", "k", "--cpus", "2", "--clock", "instructions",
                         "--tcg-threads", "multi", "--", "/bin/true"])
    assert exit_info.value.code == 2
    assert vm.INSTRUCTIONS_NEED_SINGLE in capsys.readouterr().err
    # bisect boots the same machines and refuses the same ones.
    from perfscale.commands import bisect as bisect_command
    with pytest.raises(SystemExit) as exit_info:
        bisect_command.main(["--good", "a", "--bad", "b", "--kernels", "a,b", "--benchmark", "x",
                     "--counter", "c", "--cpus", "0"])
    assert exit_info.value.code == 2
    assert "--cpus values must be in 1..255, got '0'" in capsys.readouterr().err
