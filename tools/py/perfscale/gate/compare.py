"""`tools/perfscale compare BASE.json NEW.json`: compare.py's table plus a regression gate.

Prints Google Benchmark's compare.py table, then one verdict line per benchmark (change of
the median with its bootstrap interval, U test p before and after Holm's correction over
the suite, the attributed counters that moved), and exits 1 when any benchmark is slower
(see perfscale.gate.stats) or an attributed count rose, so a script or CI job can stop
on it (compare.py itself always exits 0). Exit 2: unusable input, or something that should
have been judged could not be (every timing NaN, a benchmark errored, too few
repetitions, a benchmark of the baseline absent from the new run): a gate never passes
what it could not judge.
"""

import argparse
import sys

from perfscale.gate import stats as results_stats
from perfscale.results import comparepy as results_comparepy, io as results_io
from perfscale.vm import comparability


def add_gate_options(parser):
    """The options that define a regression; nightly takes the same ones."""
    parser.add_argument("--alpha", type=float, default=results_stats.DEFAULT_ALPHA,
                        help="significance level of the U test (default %(default)s)")
    parser.add_argument("--threshold", type=float, default=results_stats.DEFAULT_THRESHOLD_PCT,
                        metavar="PCT", help="smallest slowdown of the median real time "
                        "that counts, in percent (default %(default)s)")
    parser.add_argument("--min-repetitions", type=int,
                        default=results_stats.DEFAULT_MIN_REPETITIONS, metavar="N",
                        help="fewest repetitions on each side for the U test "
                        "(default %(default)s, as compare.py recommends)")


def gate_options(args):
    return results_stats.Options(alpha=args.alpha, threshold_pct=args.threshold,
                                 min_repetitions=args.min_repetitions)


def check_gate_options(parser, args):
    if not 0 < args.alpha < 1:
        parser.error("--alpha must be between 0 and 1")
    if not 0 <= args.threshold < float("inf"):  # NaN fails too
        parser.error("--threshold must be a number of percent, 0 or more (an infinite "
                     "threshold would pass every slowdown)")
    if args.min_repetitions < 2:
        parser.error("--min-repetitions must be at least 2 (the U test needs two values)")


def summary(verdicts, options):
    """The closing lines: what failed the gate, and what could not be judged."""
    lines = []
    too_few = [v.name for v in verdicts if v.verdict == results_stats.TOO_FEW]
    if too_few:
        lines.append("%d benchmark(s) had too few repetitions to judge; run with "
                     "--repetitions %d or more" % (len(too_few), options.min_repetitions))
    errors = [v.name for v in verdicts if v.verdict == results_stats.ERROR]
    if errors:
        lines.append("error in the new run (not judged): " + ", ".join(errors))
    lines.append(results_stats.gate_status(verdicts)[1])
    return lines


def main(argv):
    parser = argparse.ArgumentParser(
        prog="tools/perfscale compare",
        description="Compare two Google Benchmark JSON results; exit 1 on a regression.")
    parser.add_argument("base", metavar="BASE.json")
    parser.add_argument("new", metavar="NEW.json")
    add_gate_options(parser)
    parser.add_argument("--no-table", action="store_true",
                        help="skip compare.py's table, print only the verdicts")
    parser.add_argument("--all-repetitions", action="store_true",
                        help="compare.py's table with a row per repetition, not only "
                        "the aggregates")
    args = parser.parse_args(argv)
    check_gate_options(parser, args)
    try:
        base = results_io.load_results(args.base)
        new = results_io.load_results(args.new)
    except results_io.ResultsError as err:
        print("perfscale compare: %s" % err, file=sys.stderr)
        return 2
    judged = comparability.judge(base, new, sys.stdout, gate_options(args))
    if judged is not None:
        return judged
    if not args.no_table:
        sys.stdout.write(results_comparepy.table(
            args.base, args.new, args.alpha, results_comparepy.stdout_wants_color(),
            args.all_repetitions))
        print()
    if (base.host, base.cpus) != (new.host, new.cpus):
        print("note: comparing results from different machines (%s, %d CPUs vs %s, %d CPUs)"
              % (base.host, base.cpus, new.host, new.cpus))
    options = gate_options(args)
    verdicts = results_stats.compare_entries(base.entries, new.entries, options)
    for verdict in verdicts:
        print(verdict.line())
    for line in summary(verdicts, options):
        print(line)
    return results_stats.gate_status(verdicts)[0]
