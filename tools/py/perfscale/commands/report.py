"""`tools/perfscale report RESULTS.json -o DIR`: one page with the figures that matter
(the page is perfscale.plots.report's)."""

import argparse
import sys

from perfscale.history import store
from perfscale.plots import report
from perfscale.results import io


def main(argv):
    parser = argparse.ArgumentParser(
        prog="tools/perfscale report",
        description="A Markdown and HTML page with the headline figures and scaling plots.")
    parser.add_argument("results", metavar="RESULTS.json")
    parser.add_argument("-o", "--output", required=True, metavar="DIR")
    parser.add_argument("--no-plots", action="store_true", help="figures and tables only")
    parser.add_argument("--history", metavar="DB", help="also print the gate's calibration "
                        "for this host from the history (tools/perfscale calibrate)")
    args = parser.parse_args(argv)
    try:
        results = io.load_results(args.results)
        paths = report.write_report(results, args.output, plots=not args.no_plots,
                                    history_path=args.history)
    except io.ResultsError as err:
        print("perfscale report: %s" % err, file=sys.stderr)
        return 2
    except store.HistoryError as err:
        print("perfscale report: %s" % err, file=sys.stderr)
        return 2
    except OSError as err:
        print("perfscale report: cannot write %s: %s" % (args.output, err), file=sys.stderr)
        return 2
    for path in paths:
        print(path)
    return 0
