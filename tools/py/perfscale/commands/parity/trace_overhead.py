"""`tools/perfscale parity trace_overhead`: its options (--loops, perf bench sched pipe's
round trips, and perfscale.options.parity_settings'); the parity itself is
perfscale.parity.trace_overhead."""

import argparse
import sys

from perfscale import options
from perfscale.parity import trace_overhead


def main(argv):
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--loops", type=int, default=trace_overhead.DEFAULT_LOOPS)
    known, rest = pre.parse_known_args(argv)
    if "-h" in rest or "--help" in rest:
        print(trace_overhead.__doc__)
    args = options.parity_settings(rest, trace_overhead.DESCRIPTION)
    if not trace_overhead.MIN_LOOPS <= known.loops <= trace_overhead.MAX_LOOPS:
        print("perfscale parity: --loops must be in %d..%d"
              % (trace_overhead.MIN_LOOPS, trace_overhead.MAX_LOOPS), file=sys.stderr)
        return 2
    return trace_overhead.run(args, known.loops)
