"""Runs a command so that it, and everything it starts, dies with the process that asked.

    python3 -m perfscale.suite.guard PARENT_PID -- COMMAND...

nightly starts its runner through this guard. The guard gets SIGTERM when nightly dies
however it dies (PR_SET_PDEATHSIG, set by `popen` below before exec; SIGKILL included)
and then kills the command's whole process group: the runner script and the benchmark
binary it started, which would otherwise run on reparented to pid 1, writing into the
report folder of a nightly that is gone. The command runs in its own session so that one
killpg reaches all of it; the guard is a child subreaper so that nothing it started can
slip out from under it either.
"""

import ctypes
import os
import signal
import subprocess
import sys

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_GRACE_S = 2.0  # between SIGTERM and SIGKILL: lets the binary leave a valid partial file
_libc = ctypes.CDLL(None, use_errno=True)


def popen(command, **kwargs):
    """subprocess.Popen of `command` under a guard tied to this process."""
    parent = os.getpid()
    tools_py = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    env = dict(kwargs.pop("env", None) or os.environ)
    env["PYTHONPATH"] = tools_py + (os.pathsep + env["PYTHONPATH"]
                                    if env.get("PYTHONPATH") else "")

    def die_with_parent():
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)

    return subprocess.Popen([sys.executable, "-m", "perfscale.suite.guard", str(parent), "--"]
                            + list(command), preexec_fn=die_with_parent, env=env, **kwargs)


def _kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def children_of(pid):
    """The pids whose parent is `pid`, from /proc."""
    mine = str(pid)
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry, encoding="ascii", errors="replace") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == mine:
                found.append(int(entry))
    return found


def _reap_orphans():
    """Kills and reaps what was reparented to us (it had left the command's group)."""
    for pid in children_of(os.getpid()):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break


def main(argv):
    if len(argv) < 3 or argv[1] != "--" or not argv[0].isdigit():
        print("usage: python3 -m perfscale.suite.guard PARENT_PID -- COMMAND...",
              file=sys.stderr)
        return 2
    parent, command = int(argv[0]), argv[2:]
    _libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    signals = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    if os.getppid() != parent:  # the parent died before PDEATHSIG was armed
        return 128 + signal.SIGTERM
    try:
        child = subprocess.Popen(command, start_new_session=True,
                                 preexec_fn=lambda: signal.pthread_sigmask(
                                     signal.SIG_UNBLOCK, signals))
    except OSError as err:
        print("cannot start %s: %s" % (command[0], err.strerror or err), file=sys.stderr)
        return 127
    status = None
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
    signal.signal(signal.SIGCHLD, lambda *_: None)  # so that sigwait below wakes on exit
    while status is None:
        got = signal.sigtimedwait(signals, 0.2)
        if got is not None:
            try:
                os.killpg(child.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                child.wait(_GRACE_S)
            except subprocess.TimeoutExpired:
                pass
            _kill_group(child.pid)
            child.wait()
            status = 128 + got.si_signo
        else:
            status = child.poll()
    _kill_group(child.pid)  # whatever the command left running in its group
    _reap_orphans()
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
