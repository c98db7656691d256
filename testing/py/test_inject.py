"""`tools/perfscale inject` end to end: the front door builds and runs the C++ injector
(//tools/inject:inject, lib/syscall_injector.h), whose output and exit status are the
command's, and which switches off by itself (--seconds), on SIGTERM passed on by the front
door, and when the front door dies.

Kernel-backed (system-wide tracepoint events need root or CAP_PERFMON, and tracefs); those
tests skip with the injector's own SKIPPED reason elsewhere. That every copy of the events
counts every syscall, and that closing them leaves no fd, is lib/syscall_injector's kernel
test. Counts, not times: the one figure checked is that the added cost is positive.
"""

import os
import re
import shutil
import signal
import subprocess

import pytest

from conftest import REPO_ROOT, alive, wait_for
from perfscale.suite import guard, inject

FRONT_DOOR = os.path.join(REPO_ROOT, "tools", "perfscale")
needs_bazel = pytest.mark.skipif(shutil.which("bazel") is None,
                                 reason="the front door builds the injector with bazel")


def _inject(*args, timeout=300):
    return subprocess.run([FRONT_DOOR, "inject"] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=timeout)


def _skip_if_refused(code, out):
    if code == 2 and out.startswith("SKIPPED: "):
        pytest.skip(out[len("SKIPPED: "):].strip())


def _started(*args):
    """The front door running `inject ARGS`, once the injector says it is on; with the
    injector's pid (the front door's child)."""
    front = subprocess.Popen([FRONT_DOOR, "inject"] + [str(a) for a in args],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = front.stdout.readline()
    if not first.startswith("inject: on: "):
        rest, err = front.communicate(timeout=60)
        _skip_if_refused(front.returncode, first + rest)
        pytest.fail("inject did not switch on (exit %s): %r %r" % (front.returncode,
                                                                 first + rest, err[-2000:]))
    children = guard.children_of(front.pid)
    assert len(children) == 1, children
    return front, first, children[0]






def _perf_fds(pid):
    count = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            count += os.readlink("/proc/%d/fd/%s" % (pid, fd)) == "anon_inode:[perf_event]"
        except OSError:
            pass
    return count




def _cpus():
    with open("/sys/devices/system/cpu/online", encoding="ascii") as f:
        text = f.read().strip()
    total = 0
    for part in text.split(","):
        low, _, high = part.partition("-")
        total += int(high or low) - int(low) + 1
    return total


@needs_bazel
def test_measure_prints_the_added_cost_per_syscall():
    result = _inject("--measure", "--events", 8)
    _skip_if_refused(result.returncode, result.stdout)
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    match = re.fullmatch(
        r"inject: getppid\(\) (\d+) ns bare, (\d+) ns with 8 events per CPU on "
        r"raw_syscalls:sys_enter, raw_syscalls:sys_exit: \+(\d+) ns per syscall \(\+\d+%\)\n",
        result.stdout)
    assert match, result.stdout
    bare, injected, added = map(int, match.groups())
    assert added > 0 and injected > bare > 0


@needs_bazel
def test_seconds_switches_it_on_then_off_and_leaves_nothing_behind():
    front, first, injector = _started("--events", 2, "--seconds", 1)
    try:
        assert first == ("inject: on: %d events (2 per CPU on each of raw_syscalls:sys_enter, "
                         "raw_syscalls:sys_exit); stop with SIGTERM or Ctrl-C\n"
                         % (2 * 2 * _cpus()))
        assert _perf_fds(injector) == 2 * 2 * _cpus()
        rest, _ = front.communicate(timeout=60)
    finally:
        if front.poll() is None:
            front.kill()
            front.wait()
    assert front.returncode == 0
    assert rest == "inject: off\n"
    assert wait_for(lambda: not alive(injector), 10), "the injector outlived the command"


@needs_bazel
def test_sigterm_to_the_command_switches_the_injector_off():
    front, _first, injector = _started("--events", 1)
    try:
        front.send_signal(signal.SIGTERM)
        rest, _ = front.communicate(timeout=60)
    finally:
        if front.poll() is None:
            front.kill()
            front.wait()
    assert (front.returncode, rest) == (0, "inject: off\n")
    assert wait_for(lambda: not alive(injector), 10)


@needs_bazel
def test_the_injector_dies_with_a_killed_command():
    front, _first, injector = _started("--events", 1)
    front.kill()
    front.wait()
    # Bounded wait for the kernel to deliver PDEATHSIG, not a speed check.
    assert wait_for(lambda: not alive(injector), 20), "left on after the command died"


@needs_bazel
def test_bad_arguments_exit_2_with_the_usage_line():
    for args, message in [(["--events", 0], "--events must be in 1..4096"),
                          (["--events", 4097], "--events must be in 1..4096"),
                          (["--seconds", 0], "--seconds must be positive"),
                          (["--strength", 3], "unrecognized arguments: --strength")]:
        result = _inject(*args)
        assert result.returncode == 2, (args, result.stdout, result.stderr[-2000:])
        assert "usage: tools/perfscale inject" in result.stderr
        assert "tools/perfscale inject: error: " + message in result.stderr
        assert result.stdout == ""


@needs_bazel
def test_a_filter_the_kernel_refuses_is_skipped_with_the_reason():
    result = _inject("--filter", "no_such_field == 1", "--seconds", 1)
    assert result.returncode == 2, result.stdout + result.stderr[-2000:]
    if "filter" not in result.stdout:  # refused before the filter (privileges, tracefs)
        _skip_if_refused(result.returncode, result.stdout)
    assert result.stdout.startswith("SKIPPED: tracepoint filter 'no_such_field == 1' refused")


def test_calibrate_and_trials_hear_the_hosts_refusal_before_they_run(monkeypatch, tmp_path):
    from perfscale.suite import runner as suite
    refusing = tmp_path / "inject"
    refusing.write_text("#!/bin/sh\necho 'SKIPPED: tracefs is not mounted, and mounting it "
                        "needs CAP_SYS_ADMIN'\nexit 2\n")
    refusing.chmod(0o755)
    monkeypatch.setattr(suite, "build_target", lambda _label, setup=None: str(refusing))
    assert inject.refusal_here(1) == ("tracefs is not mounted, and mounting it needs "
                                      "CAP_SYS_ADMIN")
    refusing.write_text("#!/bin/sh\necho broken >&2\nexit 3\n")
    assert inject.refusal_here(1) == "inject --measure failed with exit status 3: broken"
    refusing.write_text("#!/bin/sh\necho 'inject: getppid() 150 ns bare ...'\n")
    assert inject.refusal_here(1) is None
