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

from perfscale import options
from perfscale.gate import stats
from perfscale.results import comparepy, io
from perfscale.gate import comparability


def summary(verdicts, gate):
    """The closing lines: what failed the gate, and what could not be judged."""
    lines = []
    too_few = [v.name for v in verdicts if v.verdict == stats.TOO_FEW]
    if too_few:
        lines.append("%d benchmark(s) had too few repetitions to judge; run with "
                     "--repetitions %d or more" % (len(too_few), gate.min_repetitions))
    errors = [v.name for v in verdicts if v.verdict == stats.ERROR]
    if errors:
        lines.append("error in the new run (not judged): " + ", ".join(errors))
    lines.append(stats.gate_status(verdicts)[1])
    return lines


def main(argv):
    parser = argparse.ArgumentParser(
        prog="tools/perfscale compare",
        description="Compare two Google Benchmark JSON results; exit 1 on a regression.")
    parser.add_argument("base", metavar="BASE.json")
    parser.add_argument("new", metavar="NEW.json")
    options.add_gate_options(parser)
    parser.add_argument("--no-table", action="store_true",
                        help="skip compare.py's table, print only the verdicts")
    parser.add_argument("--all-repetitions", action="store_true",
                        help="compare.py's table with a row per repetition, not only "
                        "the aggregates")
    args = parser.parse_args(argv)
    options.check_gate_options(parser, args)
    gate = options.gate_options(args)
    try:
        base = io.load_results(args.base)
        new = io.load_results(args.new)
    except io.ResultsError as err:
        print("perfscale compare: %s" % err, file=sys.stderr)
        return 2
    judged = comparability.judge(base, new, sys.stdout, gate)
    if judged is not None:
        return judged
    if not args.no_table:
        sys.stdout.write(comparepy.table(
            args.base, args.new, args.alpha, comparepy.stdout_wants_color(),
            args.all_repetitions))
        print()
    if (base.host, base.cpus) != (new.host, new.cpus):
        print("note: comparing results from different machines (%s, %d CPUs vs %s, %d CPUs)"
              % (base.host, base.cpus, new.host, new.cpus))
    for line in io.count_notes([base.context], new.context, [base.entries], new.entries):
        print(line)
    verdicts = stats.compare_entries(base.entries, new.entries, gate)
    for verdict in verdicts:
        print(verdict.line())
    for line in summary(verdicts, gate):
        print(line)
    return stats.gate_status(verdicts)[0]
