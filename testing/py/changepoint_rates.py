"""How often E-Divisive (gate/changepoints.py) finds a step, and where, and how often it
finds one in A/A series: the figures docs/measurements/2026-12-02-dashboard.md records.

    tools/py/python testing/py/changepoint_rates.py [--series 100]
"""

import argparse
import os
import sys

import numpy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tools", "py"))
from perfscale.gate import changepoints  # noqa: E402


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--series", type=int, default=100)
    parser.add_argument("--length", type=int, default=60, help="runs each side of a step")
    parser.add_argument("--noise", type=float, default=0.03, help="lognormal sigma")
    args = parser.parse_args(argv)
    print("%d series per row, %d runs each side, lognormal noise %.0f%%, alpha %.2f, "
          "%d permutations, min segment %d" % (
              args.series, args.length, 100 * args.noise, changepoints.DEFAULT_ALPHA,
              changepoints.DEFAULT_PERMUTATIONS, changepoints.DEFAULT_MIN_SIZE))
    print("| step | series with a step found at +-3 runs | with any point found | "
          "false points (away from the step) | median offset |")
    print("|---|---|---|---|---|")
    for step in (0.0, 0.03, 0.05, 0.10, 0.20):
        rng = numpy.random.default_rng(int(step * 1000) + 17)
        near = anything = false = 0
        offsets = []
        for _ in range(args.series):
            series = numpy.concatenate([
                numpy.exp(rng.normal(0, args.noise, args.length)),
                (1 + step) * numpy.exp(rng.normal(0, args.noise, args.length))])
            points = changepoints.detect(series)
            anything += bool(points)
            hits = [p for p in points if abs(p.index - args.length) <= 3]
            near += bool(hits) and step > 0
            false += len(points) - (1 if hits and step > 0 else 0)
            offsets += [abs(p.index - args.length) for p in hits]
        print("| %s | %s | %d of %d | %d | %s |" % (
            "A/A (none)" if step == 0 else "%+.0f%%" % (100 * step),
            "-" if step == 0 else "%d of %d" % (near, args.series), anything, args.series,
            false, "%.0f" % numpy.median(offsets) if offsets else "-"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
