"""Dispatches `tools/perfscale <command>` to the Python module that implements it.

Each command lives in a module exposing `main(argv) -> int`, in the subpackage of its
job (MODULES below); `parity FAMILY` maps to `perfscale.parity.<family>`.
"""

import importlib
import os
import sys

COMMANDS = ("run", "parity", "compare", "nightly", "plot", "report", "vm", "bisect",
            "calibrate", "trials", "inject", "history", "db", "serve")
MODULES = {
    "run": "perfscale.run",
    "compare": "perfscale.gate.compare",
    "calibrate": "perfscale.gate.calibrate",
    "trials": "perfscale.gate.trials",
    "inject": "perfscale.gate.inject",
    "nightly": "perfscale.history.nightly",
    "history": "perfscale.history.history_cmd",
    "db": "perfscale.history.db",
    "plot": "perfscale.plots.plot",
    "report": "perfscale.plots.report",
    "vm": "perfscale.vm.qemu",
    "bisect": "perfscale.vm.bisect",
    "serve": "perfscale.web.serve",
}
PARITY_FAMILIES = ("breakpoint", "event_open", "synthesize", "trace_overhead", "uprobe")


def _usage() -> str:
    return "usage: tools/perfscale {%s} ..." % "|".join(COMMANDS)


def main(argv):
    _reopen_closed_standard_fds()
    # tools/perfscale runs from the repository root; the user's relative paths are
    # relative to where the user was (the modules find the repository by __file__).
    if os.environ.get("PERFSCALE_CWD"):
        os.chdir(os.environ["PERFSCALE_CWD"])
    if not argv or argv[0] not in COMMANDS:
        print(_usage(), file=sys.stderr)
        return 2
    command, rest = argv[0], argv[1:]
    module_name = MODULES.get(command)
    if command == "parity":
        if not rest or rest[0] not in PARITY_FAMILIES:
            print("usage: tools/perfscale parity FAMILY [options]  (FAMILY: %s)"
                  % ", ".join(PARITY_FAMILIES), file=sys.stderr)
            return 2
        module_name = "perfscale.parity." + rest[0]
        rest = rest[1:]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name != module_name:
            raise
        print("perfscale: '%s' is not available in this checkout" %
              " ".join(argv[:2] if command == "parity" else argv[:1]),
              file=sys.stderr)
        return 2
    try:
        return module.main(rest)
    except KeyboardInterrupt:
        # The children are gone with the terminal's process group; what is left to say is
        # that it stopped, not where Python was at that moment.
        print("perfscale %s: interrupted" % command, file=sys.stderr)
        return 130
    except BrokenPipeError:  # our own output's reader went away (`| head`)
        _quiet_stdout()
        return 141


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


def _quiet_stdout():
    """Points stdout at /dev/null, so that flushing at exit does not fail again."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except OSError:
        pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
