"""A process of ours, told apart from whatever program holds its number now.

A PID names a process only while it runs: once it has exited and been reaped, the kernel
gives the number to the next program that starts. A PID kept in a state file (`lava
start`'s lava.json, PostgreSQL's postmaster.pid) is therefore checked before anything is
sent to it, and the signal goes through a pidfd opened before the check, so that it
reaches the process that was checked even if the number is reused in between:

    with processes.held(pid) as pidfd:
        if pidfd is not None and processes.started_at(pid) == started:
            processes.send(pidfd, signal.SIGTERM)

A process is ours when it has the start time recorded when we started it (clock ticks
since boot, field 22 of /proc/PID/stat), which no other process with that PID can have.
A PID recorded without its start time is never taken for ours: that is what let `lava
stop` kill an unrelated program once its state file had lost the time.
"""

import contextlib
import os
import select
import time


def stat(pid):
    """(state letter, start time in clock ticks since boot) of `pid`, or None when no such
    process is there (or `pid` is no process number)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return None
    try:
        with open("/proc/%d/stat" % pid, encoding="ascii", errors="replace") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def started_at(pid):
    """The start time of `pid` (clock ticks since boot), or None."""
    found = stat(pid)
    return found[1] if found else None


def is_ours(pid, started):
    """Whether `pid` runs (not a zombie) and is the process that started at `started`. A
    start time that is unknown (None, or not a number) is never ours."""
    if not isinstance(started, int) or isinstance(started, bool):
        return False
    found = stat(pid)
    return bool(found) and found[0] != "Z" and found[1] == started


@contextlib.contextmanager
def held(pid):
    """A pidfd of `pid` for the block, or None when no such process is there: while it is
    held, a signal through it reaches this process, never a later one with its number."""
    try:
        pidfd = os.pidfd_open(pid) if stat(pid) else None
    except (ProcessLookupError, ValueError, OverflowError):
        pidfd = None
    try:
        yield pidfd
    finally:
        if pidfd is not None:
            os.close(pidfd)


def send(pidfd, signum):
    """Sends `signum` to the held process; False when it had already exited."""
    import signal
    try:
        signal.pidfd_send_signal(pidfd, signum)
    except ProcessLookupError:
        return False
    return True


def wait_exit(pidfd, timeout_s):
    """Whether the held process exits within `timeout_s` seconds."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        if select.select([pidfd], [], [], max(0.0, min(left, 0.1)))[0]:
            return True
        if left <= 0:
            return False


def signal_if_ours(pid, started, signum):
    """Sends `signum` to `pid` when it is the process that started at `started`; whether
    it was sent."""
    with held(pid) as pidfd:
        return pidfd is not None and is_ours(pid, started) and send(pidfd, signum)
