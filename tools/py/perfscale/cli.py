"""Dispatches `tools/perfscale <command>` to the Python module that implements it.

Each command lives in a module exposing `main(argv) -> int`, in the subpackage of its
job (MODULES below); `parity FAMILY` maps to `perfscale.parity.<family>`.
"""

import importlib
import os
import sys

COMMANDS = ("run", "parity", "compare", "nightly", "plot", "report", "vm", "bisect",
            "calibrate", "trials", "inject", "serve")
MODULES = {
    "run": "perfscale.run",
    "compare": "perfscale.gate.compare",
    "calibrate": "perfscale.gate.calibrate",
    "trials": "perfscale.gate.trials",
    "inject": "perfscale.gate.inject",
    "nightly": "perfscale.history.nightly",
    "plot": "perfscale.plots.plot",
    "report": "perfscale.plots.report",
    "vm": "perfscale.vm.qemu",
    "bisect": "perfscale.vm.bisect",
    "serve": "perfscale.web.serve",
}
PARITY_FAMILIES = ("breakpoint", "event_open", "synthesize", "trace_overhead")


def _usage() -> str:
    return "usage: tools/perfscale {%s} ..." % "|".join(COMMANDS)


def main(argv):
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
    return module.main(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
