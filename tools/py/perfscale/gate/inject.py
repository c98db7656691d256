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
"""

import argparse
import ctypes
import errno
import os
import signal
import statistics
import sys
import time

TRACEPOINTS = ("raw_syscalls/sys_enter", "raw_syscalls/sys_exit")
_TRACEFS = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")
_PERF_TYPE_TRACEPOINT = 2
_PERF_EVENT_IOC_SET_FILTER = 0x40082406  # _IOW('$', 6, char *)
_SYS_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}
_PR_SET_PDEATHSIG = 1


class _Attr(ctypes.Structure):
    """struct perf_event_attr up to PERF_ATTR_SIZE_VER5 (112 bytes); the rest stays 0."""
    _fields_ = [("type", ctypes.c_uint32), ("size", ctypes.c_uint32),
                ("config", ctypes.c_uint64), ("sample_period", ctypes.c_uint64),
                ("sample_type", ctypes.c_uint64), ("read_format", ctypes.c_uint64),
                ("flags", ctypes.c_uint64), ("wakeup_events", ctypes.c_uint32),
                ("bp_type", ctypes.c_uint32), ("config1", ctypes.c_uint64),
                ("config2", ctypes.c_uint64), ("branch_sample_type", ctypes.c_uint64),
                ("sample_regs_user", ctypes.c_uint64), ("sample_stack_user", ctypes.c_uint32),
                ("clockid", ctypes.c_int32), ("sample_regs_intr", ctypes.c_uint64),
                ("aux_watermark", ctypes.c_uint32), ("sample_max_stack", ctypes.c_uint16),
                ("reserved_2", ctypes.c_uint16)]


class InjectError(Exception):
    """The environment does not allow the injection; the message says why."""


_libc = ctypes.CDLL(None, use_errno=True)


def _tracepoint_id(name):
    for root in _TRACEFS:
        path = os.path.join(root, "events", name, "id")
        try:
            with open(path, encoding="ascii") as f:
                return int(f.read())
        except FileNotFoundError:
            continue
        except OSError as err:
            raise InjectError("cannot read %s: %s" % (path, os.strerror(err.errno))) from None
    raise InjectError("tracepoint %s not found: tracefs is not mounted (as root: mount -t "
                      "tracefs nodev /sys/kernel/tracing)" % name.replace("/", ":"))


def _online_cpus():
    return sorted(os.sched_getaffinity(0) | set(range(os.cpu_count() or 1)))


def open_events(count, filter_expr=None):
    """Opens `count` counting events per CPU on each syscall tracepoint; returns the fds.

    The caller closes them (close_events) to switch the injection off."""
    machine = os.uname().machine
    if machine not in _SYS_PERF_EVENT_OPEN:
        raise InjectError("perf_event_open syscall number unknown on %s" % machine)
    ids = [_tracepoint_id(name) for name in TRACEPOINTS]
    fds = []
    try:
        for tp_id in ids:
            for cpu in _online_cpus():
                for _ in range(count):
                    attr = _Attr(type=_PERF_TYPE_TRACEPOINT, size=ctypes.sizeof(_Attr),
                                 config=tp_id)
                    fd = _libc.syscall(_SYS_PERF_EVENT_OPEN[machine], ctypes.byref(attr),
                                       -1, cpu, -1, 0)
                    if fd < 0:
                        raise InjectError(_open_failure(ctypes.get_errno()))
                    fds.append(fd)
                    if filter_expr:
                        text = ctypes.create_string_buffer(filter_expr.encode())
                        if _libc.ioctl(fd, _PERF_EVENT_IOC_SET_FILTER, text) < 0:
                            raise InjectError("filter '%s' refused: %s" % (
                                filter_expr, os.strerror(ctypes.get_errno())))
    except BaseException:
        close_events(fds)
        raise
    return fds


def _open_failure(err):
    if err in (errno.EACCES, errno.EPERM):
        try:
            with open("/proc/sys/kernel/perf_event_paranoid", encoding="ascii") as f:
                paranoid = f.read().strip()
        except OSError:
            paranoid = "?"
        return ("system-wide tracepoint events refused (kernel.perf_event_paranoid is %s): "
                "run as root, with CAP_PERFMON, or at perf_event_paranoid <= 0" % paranoid)
    if err == errno.EMFILE:
        return "too many open files: lower --events or raise ulimit -n"
    return "perf_event_open failed: %s" % os.strerror(err)


def close_events(fds):
    for fd in fds:
        os.close(fd)
    del fds[:]


def bare_loop_ns(calls):
    """Nanoseconds per getppid() of a plain loop: a syscall with no work of its own."""
    getppid = os.getppid
    start = time.perf_counter_ns()
    for _ in range(calls):
        getppid()
    return (time.perf_counter_ns() - start) / calls


def measure(count, filter_expr=None, rounds=15, calls=100000):
    """(ns per syscall without, with the injection, added ns): medians of interleaved
    rounds, so that the machine's drift falls on both sides alike."""
    without, with_ = [], []
    for _ in range(rounds):
        without.append(bare_loop_ns(calls))
        fds = open_events(count, filter_expr)
        try:
            with_.append(bare_loop_ns(calls))
        finally:
            close_events(fds)
    base, slow = statistics.median(without), statistics.median(with_)
    return base, slow, slow - base


class Injector:
    """A child process holding the events: `with Injector(n):` is the slowdown switched
    on. The child dies with us (PDEATHSIG), so a killed test never leaves it behind."""

    def __init__(self, count, filter_expr=None):
        self.count, self.filter_expr, self.pid = count, filter_expr, None

    def __enter__(self):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: open, say so, hold until told to stop
            os.close(read_end)
            status = 0
            try:
                _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
                fds = open_events(self.count, self.filter_expr)
                os.write(write_end, b"on\n")
                signal.sigwait({signal.SIGTERM})
                close_events(fds)
            except InjectError as err:
                os.write(write_end, ("SKIPPED: %s\n" % err).encode())
                status = 2
            finally:
                os._exit(status)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as reader:
            answer = reader.readline().decode().strip()
        self.pid = pid
        if answer != "on":
            self.__exit__(None, None, None)
            raise InjectError(answer.replace("SKIPPED: ", "") or "the injector died")
        return self

    def __exit__(self, *_exc):
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            os.waitpid(self.pid, 0)
            self.pid = None


MAX_EVENTS = 4096


def add_strength_option(parser, default):
    """--inject-events E, as calibrate and trials take it."""
    parser.add_argument("--inject-events", type=int, default=default, metavar="E",
                        help="injector strength: events per CPU and syscall tracepoint "
                        "(default %(default)s)")


def check_strength(parser, events, flag="--inject-events"):
    if not 1 <= events <= MAX_EVENTS:
        parser.error("%s must be in 1..%d" % (flag, MAX_EVENTS))


def main(argv):
    parser = argparse.ArgumentParser(prog="tools/perfscale inject", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=8, metavar="N",
                        help="events per CPU and tracepoint (default %(default)s)")
    parser.add_argument("--filter", metavar="EXPR",
                        help="tracepoint filter on each event, e.g. 'id >= 0' (more work)")
    parser.add_argument("--seconds", type=float, metavar="S",
                        help="switch off after S seconds (default: when killed)")
    parser.add_argument("--measure", action="store_true",
                        help="print the added nanoseconds per syscall, from a bare loop")
    args = parser.parse_args(argv)
    check_strength(parser, args.events, "--events")
    if args.seconds is not None and not args.seconds > 0:
        parser.error("--seconds must be positive")
    # Signals end the wait below; the events close with the process either way.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGHUP})
    try:
        if args.measure:
            base, slow, added = measure(args.events, args.filter)
            print("inject: getppid() %.0f ns bare, %.0f ns with %d events per CPU on %s: "
                  "+%.0f ns per syscall (+%.0f%%)" % (
                      base, slow, args.events, ", ".join(t.replace("/", ":")
                                                         for t in TRACEPOINTS),
                      added, 100 * added / base))
            return 0
        fds = open_events(args.events, args.filter)
    except InjectError as err:
        print("SKIPPED: %s" % err)
        return 2
    print("inject: on: %d events (%d per CPU on each of %s); stop with SIGTERM or Ctrl-C"
          % (len(fds), args.events, ", ".join(t.replace("/", ":") for t in TRACEPOINTS)),
          flush=True)
    signal.sigtimedwait({signal.SIGTERM, signal.SIGINT, signal.SIGHUP},
                        args.seconds if args.seconds is not None else 10 ** 9)
    close_events(fds)
    print("inject: off")
    return 0
