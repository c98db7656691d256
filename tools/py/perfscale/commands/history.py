"""`tools/perfscale history`: move runs into a history.

    tools/perfscale history sync [--history DB] [--spool DIR]
    tools/perfscale history import [--history DB] [--create] [--config NAME] SOURCE...

sync stores the runs a nightly spooled while its history's server could not be reached
(perfscale.history.spool). import brings SQLite histories (each with its lineages,
calibrations and verdicts) and loose result files (unjudged runs, never baselines) into
the history: a run already there (same run key) is skipped, so importing twice stores
each run once. import adds to a history that is there: --create starts a new one at a path
where there is none (else a mistyped path would quietly become a history of its own).
DB: an SQLite file, a postgresql:// URL or a libpq service (service=NAME);
docs/fleet-history.md. Exit 0: done; 2: bad input or the history cannot be used.
"""

import argparse
import os
import sys

from perfscale import options
from perfscale.suite import runner
from perfscale.history import spool, store, transfer
from perfscale.labs import lava
from perfscale.results import io

def parse_args(argv):
    parser = argparse.ArgumentParser(prog="tools/perfscale history",
                                     description="Move runs into a history.")
    sub = parser.add_subparsers(dest="action", required=True, metavar="{sync,import}")
    for name, text in (("sync", "store the runs spooled while the server was away"),
                       ("import", "bring SQLite histories and result files in")):
        action = sub.add_parser(name, help=text, description=text)
        options.add_history_option(action)
        if name == "sync":
            action.add_argument("--spool", default=spool.default_dir(runner.REPO_ROOT),
                                metavar="DIR", help="the nightly's spool (default "
                                "results/spool)")
        else:
            action.add_argument("--config", default="", metavar="NAME",
                                help="the config of loose result files (default '')")
            action.add_argument("--lava", metavar="URL|DIR",
                                help="import a LAVA job's result, judged against its "
                                     "lineage: URL JOB_ID of a LAVA server (token: "
                                     "--token-file or PERFSCALE_LAVA_TOKEN), or the DIR "
                                     "`tools/perfscale lava run` wrote (docs/labs.md)")
            action.add_argument("--token-file", metavar="FILE",
                                help="the LAVA server's API token, for --lava URL")
            action.add_argument("--create", action="store_true",
                                help="start a new history at --history if there is none "
                                "(else a missing one is refused: a mistyped path)")
            action.add_argument("sources", nargs="*", metavar="SOURCE",
                                help="an SQLite history or a results JSON file (with "
                                     "--lava URL: the job's id)")
    args = parser.parse_args(argv)
    if args.action == "import":
        if args.lava is None and not args.sources:
            parser.error("import needs a SOURCE (or --lava URL JOB_ID, --lava DIR)")
        if args.lava is not None and len(args.sources) != (1 if "://" in args.lava else 0):
            parser.error("--lava URL takes one JOB_ID; --lava DIR none")
        if args.token_file and (args.lava is None or "://" not in args.lava):
            parser.error("--token-file is for --lava URL")
    return args


IMPORT_TIMEOUT_S = 1800.0


def main(argv):
    args = parse_args(argv)
    prog = "history " + args.action
    try:
        # An import or sync may wait longer on a server than a nightly (a year's COPY),
        # but not forever on one that stopped answering.
        conn = store.open_history(args.history, answer_within_s=IMPORT_TIMEOUT_S,
                                  create=args.action == "sync" or args.create)
    except store.HistoryError as err:
        print("%s: %s%s" % (prog, err, "; --create starts a new one there"
                            if args.action == "import" and not store.is_server(args.history)
                            and not os.path.exists(args.history) else ""), file=sys.stderr)
        return 2
    try:
        if args.action == "sync":
            stored, again, unusable = spool.sync(args.spool, conn)
            print("history sync: %d run(s) stored, %d already there, in %s%s"
                  % (stored, again, conn.name, ", %d unusable run(s) set aside in the spool"
                     % unusable if unusable else ""))
            return 2 if unusable else 0
        if args.lava is not None:
            return _import_lava(args, conn)
        return _import(args, conn)
    except lava.LavaError as err:
        print("%s: %s" % (prog, err), file=sys.stderr)
        return 2
    except (store.HistoryError, io.ResultsError, OSError) as err:
        print("%s: %s" % (prog, store.redact(err, args.history)), file=sys.stderr)
        return 2
    finally:
        conn.close()


def _import_lava(args, conn):
    """A LAVA job's result into the history, judged like a nightly: exit 1 on a
    regression, as the nightly's."""
    if "://" in args.lava:
        token = lava.read_token(args.token_file, required=False)
        outcome, lineage = lava.fetch_job(args.lava, args.sources[0], token)
    else:
        outcome, lineage = lava.read_run_dir(args.lava)
    imported = lava.import_run(conn, outcome, lineage, args.config,
                               host_cpus=os.cpu_count() or 0 if lineage.source.startswith(
                                   "lava-run:") else 0)
    where = "LAVA job %s (device %s, worker %s)" % (lineage.job_id, lineage.device,
                                                    lineage.worker or "unknown")
    if not imported.added:
        print("history import: %s: already there as run %d" % (where, imported.run_id))
        return 0
    for verdict in imported.verdicts:
        print(verdict.line())
    print("history import: %s: added as run %d%s: %s" % (
        where, imported.run_id, ", judged against run %d" % imported.baseline_id
        if imported.baseline_id else "", imported.reason))
    return 1 if imported.status == 1 else 0


def _import(args, conn):
    for source in args.sources:
        if not os.path.isfile(source):
            print("history import: %s: no such file" % source, file=sys.stderr)
            return 2
    for source in args.sources:
        if store.is_sqlite_file(source):
            if os.path.abspath(source) == os.path.abspath(args.history):
                print("history import: %s is the history itself" % source, file=sys.stderr)
                return 2
            # A source is read, never written: another program's SQLite file must not
            # gain perfscale's tables, and a history the user can only read still imports.
            with store.open_history(source, read_only=True) as other:
                added, skipped, lineages = transfer.copy_history(other, conn, bulk=True)
            print("history import: %s: %d run(s) added, %d already there, calibrations of "
                  "%d lineage(s)" % (source, added, skipped, lineages))
        else:
            run_id, added = transfer.import_results_file(conn, source, args.config)
            print("history import: %s: %s run %d" % (source, "added as" if added else
                                                     "already there as", run_id))
    return 0
