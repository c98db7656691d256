"""`tools/perfscale plot`: scaling curves, counts against vCPUs, a kernel A/B, history
trends (the drawing is perfscale.plots.plot's, .cpus' and .kernels')."""

import argparse
import re
import sys

from perfscale.history import store
from perfscale.plots import cpus, kernels, plot
from perfscale.results import io


def main(argv):
    parser = argparse.ArgumentParser(
        prog="tools/perfscale plot",
        description="Scaling curves from results files, or trends from the nightly history.")
    parser.add_argument("results", nargs="*", metavar="RESULTS.json")
    parser.add_argument("--history", metavar="DB", help="plot trends from this history (an "
                        "SQLite file, a postgresql:// URL or service=NAME)")
    parser.add_argument("--host", help="with --history: only runs of this host")
    parser.add_argument("--config", help="with --history: only runs of this config")
    parser.add_argument("--filter", metavar="REGEX", help="only benchmarks matching REGEX")
    parser.add_argument("--vs-cpus", action="store_true",
                        help="counts against the runs' vCPUs, one results file per size")
    parser.add_argument("--relative", default="", metavar="PARAM,...",
                        help="with --vs-cpus: parameters sized from the CPUs, drawn as a "
                        "multiple of them (e.g. passive)")
    parser.add_argument("--vs-kernel", action="store_true",
                        help="files from guests of several kernels: with --x, a kernel A/B "
                        "(each benchmark against --x, one line per kernel, DIR/ab.md); "
                        "without, each benchmark against the kernel release, one line per "
                        "guest shape, each release judged against the one before and its "
                        "steps marked (DIR/releases.md)")
    parser.add_argument("--x", metavar="PARAM[*PARAM...]",
                        help="with --vs-kernel: the x axis, a parameter or a product of "
                        "them (threads*parallelism: BM_BreakpointThread's live threads)")
    parser.add_argument("--metric", metavar="COUNTER", default="",
                        help="with --vs-kernel: the figure drawn (default: the real time "
                        "in us; e.g. usecs/op)")
    parser.add_argument("--ratio", metavar="PARAM",
                        help="with --vs-kernel: per kernel, the largest value of PARAM "
                        "against the smallest at each point (breakpoints: 4 over 0)")
    parser.add_argument("-o", "--output", required=True, metavar="DIR")
    args = parser.parse_args(argv)
    if bool(args.results) == bool(args.history):
        parser.error("give RESULTS.json files or --history DB (one of them)")
    if args.vs_kernel and (args.history or args.vs_cpus):
        parser.error("--vs-kernel draws RESULTS.json files, without --history or --vs-cpus")
    if not args.vs_kernel and (args.x or args.metric or args.ratio):
        parser.error("--x, --metric and --ratio go with --vs-kernel")
    if args.vs_kernel and not args.x and (args.metric or args.ratio):
        parser.error("--metric and --ratio go with --vs-kernel --x (a kernel A/B)")
    x_params = [p for p in (args.x or "").split("*") if p]
    if args.x is not None and (not x_params or len(x_params) != len(args.x.split("*"))):
        parser.error("--x wants PARAM[*PARAM...], parameter names joined by *, got '%s'"
                     % args.x)
    try:
        pattern = re.compile(args.filter) if args.filter else None
    except re.error as err:
        parser.error("--filter: %s" % err)
    try:
        if args.history:
            conn = store.open_history(args.history, read_only=True)
            try:
                trend_map = store.trends(conn, args.host, args.config)
            finally:
                conn.close()
            if pattern:
                trend_map = {k: v for k, v in trend_map.items() if pattern.search(k)}
            written = plot.history_plots(trend_map, args.output)
        else:
            result_sets = [io.load_results(path) for path in args.results]
            if pattern:
                for results in result_sets:
                    results.entries = {k: v for k, v in results.entries.items()
                                       if pattern.search(k)}
            if args.vs_kernel and not x_params:
                written, lines = kernels.vs_release(result_sets, args.output)
                print("\n".join(lines))
            elif args.vs_kernel:
                written, lines = kernels.ab(result_sets, x_params, args.metric, args.output,
                                            args.ratio)
                print("\n".join(lines))
            elif args.vs_cpus:
                written = cpus.plots(result_sets, args.output,
                                     [p for p in args.relative.split(",") if p])
            else:
                written = plot.scaling_plots(result_sets, args.output)
    except (io.ResultsError, store.HistoryError, kernels.KernelPlotError) as err:
        print("perfscale plot: %s" % err, file=sys.stderr)
        return 2
    except OSError as err:  # the results were read: this is the output folder
        print("perfscale plot: cannot write the plots in -o %s: %s"
              % (args.output, err.strerror or err), file=sys.stderr)
        return 2
    if not written:
        print("perfscale plot: nothing to plot (no benchmark with timings matched)",
              file=sys.stderr)
        return 2
    for path, _ in written:
        print(path)
    return 0
