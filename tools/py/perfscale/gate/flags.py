"""The gate's command-line options (--alpha, --threshold, --min-repetitions): compare,
nightly and calibrate take the same ones."""

from perfscale.gate import stats


def add_gate_options(parser):
    """The options that define a regression; nightly takes the same ones."""
    parser.add_argument("--alpha", type=float, default=stats.DEFAULT_ALPHA,
                        help="significance level of the U test (default %(default)s)")
    parser.add_argument("--threshold", type=float, default=stats.DEFAULT_THRESHOLD_PCT,
                        metavar="PCT", help="smallest slowdown of the median real time "
                        "that counts, in percent (default %(default)s)")
    parser.add_argument("--min-repetitions", type=int,
                        default=stats.DEFAULT_MIN_REPETITIONS, metavar="N",
                        help="fewest repetitions on each side for the U test "
                        "(default %(default)s, as compare.py recommends)")


def gate_options(args):
    return stats.Options(alpha=args.alpha, threshold_pct=args.threshold,
                                 min_repetitions=args.min_repetitions)


def check_gate_options(parser, args):
    if not 0 < args.alpha < 1:
        parser.error("--alpha must be between 0 and 1")
    if not 0 <= args.threshold < float("inf"):  # NaN fails too
        parser.error("--threshold must be a number of percent, 0 or more (an infinite "
                     "threshold would pass every slowdown)")
    if args.min_repetitions < 2:
        parser.error("--min-repetitions must be at least 2 (the U test needs two values)")
