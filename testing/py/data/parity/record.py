"""Records the parity sessions of this folder from real runs: perf bench and our binaries.

    tools/py/python testing/py/data/parity/record.py [FAMILY...]   # as root, after a build

Each FAMILY.json holds what `tools/perfscale parity FAMILY` ran (with the arguments of
parity_replay.ARGS), what each command printed, and the table and rows it gave; the
tests replay them (testing/py/test_parity.py). The files are committed: the tests must
not depend on this machine's perf or kernel.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))  # testing/py

import parity_replay  # noqa: E402
from perfscale.parity import common as pc  # noqa: E402


def main(families):
    for family in families or sorted(parity_replay.ARGS):
        pc.require_perf()
        binary = pc.build_binary(family)
        session = parity_replay.record(family, binary)
        path = os.path.join(HERE, family + ".json")
        with open(path, "w") as f:
            json.dump(session, f, indent=1)
            f.write("\n")
        print("%s: %d commands, exit %d -> %s" % (family, len(session["calls"]),
                                                  session["exit_code"], path))
        print(session["table"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
