"""`tools/perfscale inject`: add real kernel work to every syscall, switchable at will.

    tools/perfscale inject [--events N] [--filter EXPR] [--seconds S]   # on until killed
    tools/perfscale inject --measure [--events N] [--filter EXPR]       # its true size

While it runs, N counting perf events per CPU sit on raw_syscalls:sys_enter and
raw_syscalls:sys_exit, system-wide: every syscall on every CPU then walks 2N events in
the kernel's tracepoint handler (perf_tp_event: filter match, count update), and the
work stops the moment the process exits. No rebuild, no reboot, no change to the code
being measured: the gate's own tests and `calibrate` use it as a known, real slowdown.

`--measure` sizes it independently of Google Benchmark: a bare getppid() loop timed with
and without the events, interleaved, and prints the added nanoseconds per syscall.
Needs what system-wide tracepoint events need: root, CAP_PERFMON or
perf_event_paranoid <= 0, and tracefs. Otherwise it prints `SKIPPED: reason`, exit 2.

The command is the C++ program //tools/inject:inject (lib/syscall_injector.h, the same
injector the benchmark binaries switch on with --inject_syscall_events=N): main() builds
it and runs it with the same arguments; its output and exit status are the command's.
calibrate and trials switch the injector on through the binary instead (injected_run_args):
so it slows the kernel the suite runs on, a --guest's too, and each injected run sizes it
with its bare loop first, where it runs (run_cost).
"""

import ctypes
import math
import signal
import subprocess
import sys

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


MAX_EVENTS = 4096


INJECT_TARGET = "//tools/inject:inject"
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def run_passing_signals(command):
    sys.stdout.flush()
    sys.stderr.flush()
    waited = _STOP_SIGNALS + (signal.SIGCHLD,)
    # Blocked from before the start, so that none is lost; the program starts with the
    # stop signals still blocked (it sets its own mask) and dies with us.
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, waited)

    def in_child():
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)

    try:
        try:
            child = subprocess.Popen(command, preexec_fn=in_child)
        except OSError as err:
            print("perfscale inject: cannot start %s: %s" % (command[0], err.strerror or err),
                  file=sys.stderr)
            return 127
        while child.poll() is None:
            got = signal.sigtimedwait(waited, 1.0)
            if got is not None and got.si_signo != signal.SIGCHLD:
                child.send_signal(got.si_signo)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
    return child.returncode if child.returncode >= 0 else 128 - child.returncode


# --- the injector inside the suite's own runs --------------------------------------------
# The binary (benchmarks/harness/syscall_injection.h) measures its bare loop before its
# benchmarks and records the figures in the run's context under these keys.
INJECTOR_FLAG = "--inject_syscall_events"
_CONTEXT_BARE, _CONTEXT_SLOW = "injector_bare_ns", "injector_ns"
_CONTEXT_ADDED = "injector_added_ns"


def injected_run_args(run_args, events):
    """RUN_ARGS with the binary's injector flag added among the flags after --."""
    run_args = list(run_args)
    if "--" not in run_args:
        run_args.append("--")
    return run_args + ["%s=%d" % (INJECTOR_FLAG, events)]


def _context_ns(results, key):
    try:
        value = float(results.context.get(key, "nan"))
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def run_cost(results):
    """ns the injector added per syscall in a run (its bare loop); None: not injected."""
    return _context_ns(results, _CONTEXT_ADDED)


def describe_cost(results):
    """'<injector>: getppid() B -> I ns, +A ns per syscall (bare loop)' of an injected run."""
    what = results.context.get("injector", "the injector")
    bare, slow = _context_ns(results, _CONTEXT_BARE), _context_ns(results, _CONTEXT_SLOW)
    if bare is None or slow is None:
        return "%s: not measured (the run's context has no injector figures)" % what
    return "%s: getppid() %.0f -> %.0f ns, %+.0f ns per syscall (bare loop)" % (
        what, bare, slow, slow - bare)


def refusal_here(events):
    """Why this host refuses the injector's events (a sentence), or None. calibrate and
    trials ask before their runs, so that a refusal is said at once, not at the injected
    run an hour in. One `inject --measure`: a second here."""
    from perfscale.suite import runner
    try:
        binary = runner.build_target(INJECT_TARGET)
    except runner.BuildError as err:
        return str(err)
    result = subprocess.run([binary, "--measure", "--events", str(events)],
                            capture_output=True, text=True, errors="replace")
    if result.returncode == 0:
        return None
    for line in (result.stdout + result.stderr).splitlines():
        if line.startswith("SKIPPED: "):
            return line[len("SKIPPED: "):]
    return "inject --measure failed with exit status %d: %s" % (
        result.returncode, (result.stderr or result.stdout).strip()[-500:])
