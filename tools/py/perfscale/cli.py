"""Dispatches `tools/perfscale <command>` to the Python module that implements it.

Each command lives in its own module `perfscale.<command>` exposing `main(argv) -> int`.
`parity FAMILY` maps to `perfscale.parity_<family>`.
"""

import importlib
import os
import sys

COMMANDS = ("parity", "compare", "nightly", "plot", "report", "vm", "bisect", "calibrate",
            "inject")
# Modules not named after their command: a module named bisect would shadow the standard
# library's; inject lives in the gate's subpackage.
_MODULES = {"bisect": "perfscale.kernel_bisect", "inject": "perfscale.gate.inject"}


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
    module_name = _MODULES.get(command, "perfscale." + command)
    if command == "parity":
        if not rest or rest[0].startswith("-"):
            print("usage: tools/perfscale parity FAMILY [options]  "
                  "(FAMILY: breakpoint, event_open, synthesize, trace_overhead)",
                  file=sys.stderr)
            return 2
        module_name = "perfscale.parity_" + rest[0]
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
