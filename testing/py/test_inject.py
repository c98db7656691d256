"""The injector adds real kernel work: its events fire on every syscall, on and off at will.

Kernel-backed (system-wide tracepoint events need root or CAP_PERFMON, and tracefs); skipped
with the reason elsewhere. Counts, not times: its size is measured by `inject --measure`.
"""

import os
import struct

import pytest

from perfscale.gate import inject


def _events_or_skip(count):
    try:
        return inject.open_events(count)
    except inject.InjectError as err:
        pytest.skip(str(err))


def test_every_syscall_goes_through_the_injected_events():
    fds = _events_or_skip(2)
    try:
        cpus = len(inject._online_cpus())
        assert len(fds) == 2 * len(inject.TRACEPOINTS) * cpus
        before = [struct.unpack("Q", os.read(fd, 8))[0] for fd in fds]
        for _ in range(1000):
            os.getppid()
        after = [struct.unpack("Q", os.read(fd, 8))[0] for fd in fds]
        # Each of our 1000 syscalls entered and left on some CPU: every copy of the event
        # on that CPU counted it, so per copy index the CPUs together saw >= 1000.
        per_copy = {}
        for index, (old, new) in enumerate(zip(before, after)):
            tracepoint, copy = index // (2 * cpus), index % 2
            per_copy[(tracepoint, copy)] = per_copy.get((tracepoint, copy), 0) + new - old
        assert all(total >= 1000 for total in per_copy.values()), per_copy
    finally:
        inject.close_events(fds)
    assert fds == []


def test_the_injector_process_switches_off_and_leaves_nothing_behind():
    _events_or_skip(1)  # skip where the kernel refuses
    with inject.Injector(1) as injector:
        pid = injector.pid
        assert os.path.exists("/proc/%d" % pid)
    assert not os.path.exists("/proc/%d" % pid)


def test_a_refused_injection_says_why(monkeypatch):
    monkeypatch.setattr(inject, "_TRACEFS", ("/nonexistent",))
    with pytest.raises(inject.InjectError, match="tracefs is not mounted"):
        inject.open_events(1)
