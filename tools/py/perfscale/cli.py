"""Dispatches `tools/perfscale <command>` to the module that implements it.

Each command is a module of perfscale.commands exposing `main(argv) -> int` that parses
its own options (one argparse, one --help); `parity FAMILY` maps to
perfscale.commands.parity.<family>. `test` is the front door's own (tools/perfscale).
"""

import importlib
import os
import sys

# (command, what it does), in the order `tools/perfscale --help` lists them.
COMMANDS = (
    ("run", "build and run the benchmark suite; JSON under results/, table on stdout,\n"
            "plan and progress on stderr; --plan prints the plan only (--cpus N: for a\n"
            "machine with N CPUs); --budget caps the planned wall time (default 10m)"),
    ("vm", "boot a kernel in QEMU (KVM when it works, else TCG) and run the suite inside;\n"
           "several --cpus sizes give one result file each; --clock instructions\n"
           "times the guest in instructions (QEMU -icount): figures the host cannot move"),
    ("bisect", "the first bad commit of a kernel tree (or kernel of a list), judged by the\n"
               "gate; resumable; writes the mail the commit's author reads"),
    ("series", "the suite on every kernel release (default: each Debian line's newest),\n"
               "each judged against the one before; every step profiled, looked up in\n"
               "the sources and written up (docs/series.md)"),
    ("test", "build and run every test (bazel test //..., then under ASan+UBSan, the\n"
             "Python tools' tests, and each fuzz target for 10 s under libFuzzer); lists\n"
             "every skipped test with its reason, then ends with\n"
             "\"N passed, N failed, N skipped\""),
    ("parity", "hold a family's figures against perf bench: parity breakpoint|event_open|..."),
    ("compare", "A/B two result files with a U test; exits 1 on a significant slowdown"),
    ("nightly", "run, store in history, compare with the baseline; exits 1 on a regression"),
    ("calibrate", "learn each benchmark's noise floor and detectable change on this host"),
    ("trials", "check the calibrated gate: A/A and injected-slowdown nightlies, false alarms\n"
               "and power per benchmark"),
    ("inject", "add real kernel work to every syscall while it runs (the gate's test slowdown)"),
    ("plot", "PNG scaling curves, counts against vCPUs (--vs-cpus), history trends"),
    ("report", "one page with the headline figures of a run"),
    ("history", "sync spooled runs, import SQLite histories and result files\n"
                "(docs/fleet-history.md)"),
    ("db", "start|stop DIR: a local PostgreSQL for a lab's shared history"),
    ("lava", "job|run: perfscale as a LAVA job, and run with lava-run (docs/labs.md)"),
    ("kcidb", "a run as a KCIDB v5.3 report (KernelCI's results database); --submit posts it\n"
              "(docs/labs.md)"),
    ("alerts", "the history's alerts, one per change (not per night); `alerts set N\n"
               "--state acknowledged --who W --why T` triages one"),
    ("serve", "the dashboard over the history: fleet, trends, runs, compare, scaling,\n"
              "change points and triage (docs/dashboard.md)"),
)
PARITY_FAMILIES = ("breakpoint", "event_open", "synthesize", "trace_overhead", "uprobe")


def usage() -> str:
    lines = ["usage: tools/perfscale COMMAND [OPTIONS]   (tools/perfscale COMMAND --help: "
             "its options)", ""]
    for name, what in COMMANDS:
        first, *rest = what.split("\n")
        lines.append("  %-10s %s" % (name, first))
        lines.extend("  %-10s %s" % ("", line) for line in rest)
    return "\n".join(lines)


def main(argv):
    _reopen_closed_standard_fds()
    # tools/perfscale runs from the repository root; the user's relative paths are
    # relative to where the user was (the modules find the repository by __file__).
    if os.environ.get("PERFSCALE_CWD"):
        os.chdir(os.environ["PERFSCALE_CWD"])
    if argv[:1] in (["-h"], ["--help"], ["help"]):
        print(usage())
        return 0
    names = [name for name, _ in COMMANDS if name != "test"]
    if not argv or argv[0] not in names:
        if argv:
            print("perfscale: unknown command '%s'" % argv[0], file=sys.stderr)
        print(usage(), file=sys.stderr)
        return 2
    command, rest = argv[0], argv[1:]
    module_name = "perfscale.commands." + command
    if command == "parity":
        if not rest or rest[0] not in PARITY_FAMILIES:
            print("usage: tools/perfscale parity FAMILY [options]  (FAMILY: %s)"
                  % ", ".join(PARITY_FAMILIES), file=sys.stderr)
            return 2
        module_name = "perfscale.commands.parity." + rest[0]
        rest = rest[1:]
    try:
        module = importlib.import_module(module_name)
        return module.main(rest)
    except ModuleNotFoundError as err:
        if err.name == module_name:
            print("perfscale: '%s' is not available in this checkout" %
                  " ".join(argv[:2] if command == "parity" else argv[:1]),
                  file=sys.stderr)
            return 2
        if not err.name or err.name.split(".")[0] == "perfscale":
            raise
        print(missing_module(command, err.name), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # The children are gone with the terminal's process group; what is left to say is
        # that it stopped, not where Python was at that moment.
        print("perfscale %s: interrupted" % command, file=sys.stderr)
        return 130
    except BrokenPipeError:  # our own output's reader went away (`| head`)
        _quiet_stdout()
        return 141


def missing_module(command, name):
    """The line for a Python module a command needs that is not installed: its --help
    too imports the command's library (numpy and scipy for the gate), and the front door
    installs nothing for --help."""
    top = name.split(".")[0]
    return ("perfscale %s: Python's %s is not installed; `tools/perfscale %s` without "
            "--help installs what it needs (tools/setup, as root), or apt-get install "
            "python3-%s" % (command, top, command, top.lower()))


def _reopen_closed_standard_fds():
    """Started with stdout (or stdin, stderr) closed (`>&-`): /dev/null in its place, or
    the first file we or the binary open would become fd 1 and take the table."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            if getattr(sys, name) is None:
                setattr(sys, name, open(fd, "r" if fd == 0 else "w", closefd=False))


def _quiet_stdout(stream=None):
    """Points stdout (or `stream`) at /dev/null, so that flushing at exit does not fail
    again."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), (stream or sys.stdout).fileno())
    except OSError:
        pass


def exit_status(argv):
    """main(argv)'s status, with what is still buffered flushed here: Python's own flush
    at exit turns a reader gone by then into status 120 and an 'Exception ignored' line;
    here it is 141, what main says for any write to a closed pipe."""
    try:
        status = main(argv)
    except SystemExit as stop:  # argparse's --help and usage errors end this way
        status = stop.code
    except BrokenPipeError:  # main's own --help and usage lines, unbuffered
        status = 141
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            _quiet_stdout(stream)
            status = 141
    return status


if __name__ == "__main__":
    sys.exit(exit_status(sys.argv[1:]))
