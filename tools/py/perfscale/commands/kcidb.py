"""`tools/perfscale kcidb`: a run as a KCIDB v5.3 report (perfscale.labs.kcidb).

    tools/perfscale kcidb --origin NAME RESULT.json [--out F] [--submit URL [--token-file F]]
    tools/perfscale kcidb --origin NAME --run ID [--history DB] [--out F] [--submit URL ...]

A result file reports DONE and SKIP tests; a run of the history also carries the gate's
verdicts (FAIL where it judged a regression). The report goes to --out, else stdout.
--submit posts it to URL (kcidb-ng's /submit) with the bearer token from --token-file or
PERFSCALE_KCIDB_TOKEN; the token is never an option's value and never printed.
Exit 0: written (and submitted); 2: bad input, the history or the server failed.
"""

import argparse
import sys

from perfscale import options
from perfscale.history import store
from perfscale.labs import deadline, kcidb


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="tools/perfscale kcidb",
        description="Write a run as a KCIDB I/O v5.3 report (docs/labs.md).")
    parser.add_argument("--origin", required=True, metavar="NAME",
                        help="the submitting CI system's KCIDB origin ([a-z0-9_]+); every id "
                             "starts with it")
    parser.add_argument("results", nargs="?", metavar="RESULT.json",
                        help="a result file (else --run)")
    parser.add_argument("--run", type=int, metavar="ID", help="a run of the history, with "
                        "the gate's verdicts")
    options.add_history_option(parser)
    parser.add_argument("--out", metavar="FILE", help="write the report here (default: "
                        "stdout)")
    parser.add_argument("--submit", metavar="URL", help="POST the report to URL, e.g. "
                        "kcidb-ng's https://HOST/submit")
    parser.add_argument("--token-file", metavar="FILE", help="the bearer token for "
                        "--submit (else the environment's PERFSCALE_KCIDB_TOKEN)")
    args = parser.parse_args(argv)
    if (args.results is None) == (args.run is None):
        parser.error("give either RESULT.json or --run ID")
    if args.token_file and not args.submit:
        parser.error("--token-file is for --submit")
    return args


def main(argv):
    args = parse_args(argv)
    try:
        kcidb.check_origin(args.origin)
        token = kcidb.read_token(args.token_file) if args.submit else None
        if args.results is not None:
            document = kcidb.from_results_file(args.origin, args.results)
        else:
            with store.open_history(args.history, read_only=True) as conn:
                document = kcidb.from_history(args.origin, conn, args.run)
        text = kcidb.dumps(document)
        if args.out:
            with open(args.out, "w", encoding="utf-8") as f:
                f.write(text)
        else:
            sys.stdout.write(text)
        if args.submit:
            kcidb.submit(args.submit, text.encode(), token)
            print("kcidb: %d test(s) submitted to %s" % (len(document["tests"]),
                                                         deadline.shown_url(args.submit)),
                  file=sys.stderr)
    except kcidb.KcidbError as err:
        print("kcidb: %s" % err, file=sys.stderr)
        return 2
    except store.HistoryError as err:
        print("kcidb: %s" % store.redact(err, args.history), file=sys.stderr)
        return 2
    except OSError as err:
        print("kcidb: cannot write %s: %s" % (args.out, err.strerror or err), file=sys.stderr)
        return 2
    return 0
