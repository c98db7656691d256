"""`tools/perfscale alerts`: the history's alerts, one per change (docs/dashboard.md).

    tools/perfscale alerts [--history DB] [--state new] [--json]
    tools/perfscale alerts set N --state acknowledged --who NAME --why TEXT [--history DB]
    PERFSCALE_TRIAGE_TOKEN=... tools/perfscale alerts set N ... --dashboard http://HOST:PORT
    tools/perfscale alerts scan [--history DB]

The list: each alert with its state, the change that opened it, how many benchmarks and
lineages moved with it and for how many nights. `set` changes one alert's state with the
dashboard's rules (who and why required; every change logged). A history the user may only
read (a reader's URL) refuses the change: --dashboard sends it to the dashboard instead,
with its triage token, as the alert page's form does. `scan` runs change-point detection
over every lineage x benchmark: a step whose nightlies each passed opens an alert of kind
'changepoint' (a lab runs it after the nightlies, as it would a report).
Exit 2 for bad input or an unusable history.
"""

import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

from perfscale import options
from perfscale.gate import alerting
from perfscale.history import alerts, store, triage
from perfscale.labs import deadline
from perfscale.web.app import TOKEN_HEADER


def parse_args(argv):
    if argv[:1] == ["scan"]:
        parser = argparse.ArgumentParser(
            prog="tools/perfscale alerts scan",
            description="Change points over every lineage x benchmark: a step whose "
                        "nightlies each passed opens a changepoint alert.")
        options.add_history_option(parser)
        args = parser.parse_args(argv[1:])
        args.action = "scan"
        return args
    if argv[:1] == ["set"]:
        parser = argparse.ArgumentParser(prog="tools/perfscale alerts set",
                                         description="Change one alert's state (logged).")
        parser.add_argument("alert", type=int, metavar="N", help="the alert's number")
        parser.add_argument("--state", required=True, choices=triage.STATES)
        parser.add_argument("--who", required=True)
        parser.add_argument("--why", required=True)
        options.add_history_option(parser)
        parser.add_argument("--dashboard", metavar="URL",
                            help="set it through this dashboard (`tools/perfscale serve`) "
                            "instead of the history: with its triage token, from "
                            "--token-file or $PERFSCALE_TRIAGE_TOKEN, for a history the "
                            "user may only read")
        parser.add_argument("--token-file", metavar="FILE",
                            help="with --dashboard: the file holding the triage token")
        args = parser.parse_args(argv[1:])
        if args.dashboard is not None:
            try:
                args.dashboard = dashboard_url(args.dashboard)
            except ValueError as err:
                parser.error(str(err))
        args.action = "set"
        return args
    parser = argparse.ArgumentParser(
        prog="tools/perfscale alerts",
        description="List the history's alerts (one per change); `alerts set N ...` "
                    "changes one.")
    parser.add_argument("--state", action="append", choices=triage.STATES,
                        help="only alerts in this state (repeatable; default all)")
    parser.add_argument("--json", action="store_true", help="one JSON document")
    options.add_history_option(parser)
    args = parser.parse_args(argv)
    args.action = "list"
    return args


def dashboard_url(text):
    """`text` once it is a dashboard's address, http(s)://HOST[:PORT][/PATH], without a
    trailing slash; ValueError otherwise. urllib would open a file:// URL as a file, and
    a malformed one (no scheme, an unclosed [IPv6) raises deep in the request."""
    try:
        deadline.check_url(text)
    except ValueError as err:
        raise ValueError("--dashboard wants the dashboard's address, http://HOST:PORT: %s"
                         % err) from None
    url = urllib.parse.urlsplit(text)
    if url.query or url.fragment:
        raise ValueError("--dashboard wants the dashboard's address, http://HOST:PORT, "
                         "without a query")
    return text.rstrip("/")


def _change(row):
    return alerts.Change(*(row[f] or "" for f in (
        "good_kernel", "bad_kernel", "good_config", "bad_config", "good_commit",
        "bad_commit", "good_revision", "bad_revision"))).describe()


def _through_dashboard(args):
    """POSTs the change to the dashboard's /alert/N/state with the token, as its form
    does; the dashboard applies the same rules. Returns the exit status."""
    try:
        token = options.read_token(args.token_file)
    except ValueError as err:
        print("alerts: %s" % err, file=sys.stderr)
        return 2
    if not token:
        print("alerts: --dashboard needs the triage token (--token-file or $%s)"
              % options.TOKEN_ENV, file=sys.stderr)
        return 2
    try:
        triage.checked(args.state, args.who, args.why)  # the dashboard's rules, said here
    except triage.TriageError as err:
        print("alerts: %s" % err, file=sys.stderr)
        return 2
    data = urllib.parse.urlencode({"state": args.state, "who": args.who,
                                   "why": args.why}).encode()
    request = urllib.request.Request("%s/alert/%d/state" % (args.dashboard, args.alert),
                                     data=data, headers={TOKEN_HEADER: token})
    try:
        deadline.read(request, 30)  # a redirect to another host is not followed
    except urllib.error.HTTPError as err:
        print("alerts: %s answered %d: %s" % (deadline.shown_url(args.dashboard), err.code,
                                              err.reason),
              file=sys.stderr)
        return 2
    except (urllib.error.URLError, OSError) as err:
        print("alerts: cannot reach %s: %s" % (deadline.shown_url(args.dashboard),
                                                getattr(err, "reason", err)),
              file=sys.stderr)
        return 2
    print("alert #%d: %s (%s: %s)" % (args.alert, args.state, args.who.strip(),
                                      args.why.strip()))
    return 0


def main(argv):
    args = parse_args(argv)
    if args.action == "set" and args.dashboard:
        return _through_dashboard(args)
    if args.action == "list" and not store.is_server(args.history) \
            and not os.path.exists(args.history):
        print("alerts: no history at %s" % args.history, file=sys.stderr)
        return 2
    try:
        # Only a nightly starts a history: alerts change or scan one that is there, and
        # never write perfscale's tables into another file.
        with store.open_history(args.history, read_only=args.action == "list",
                                create=False) as conn:
            if args.action == "scan":
                found = alerting.scan(conn, lambda line: print(line, flush=True))
                print("%d changepoint alert(s) opened, %d joined" % (
                    sum(1 for _, opened in found if opened),
                    sum(1 for _, opened in found if not opened)))
                return 0
            if args.action == "set":
                alerts.set_state(conn, args.alert, args.state, args.who, args.why)
                print("alert #%d: %s (%s: %s)" % (args.alert, args.state, args.who.strip(),
                                                  args.why.strip()))
                return 0
            found = alerts.listing(conn, args.state)
    except (triage.TriageError, store.HistoryError) as err:
        print("alerts: %s" % err, file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([dict(r, change=_change(r)) for r in found], indent=1, default=str))
        return 0
    if not found:
        print("no alerts%s" % (" in state %s" % ", ".join(args.state) if args.state else ""))
        return 0
    print("%-5s %-12s %-11s %10s %8s %6s  %s" % ("alert", "state", "kind", "benchmarks",
                                                  "machines", "nights", "change"))
    for row in found:
        print("#%-4d %-12s %-11s %10d %8d %6d  %s" % (
            row["id"], row["state"], row["kind"], row["benchmarks"], row["lineages"],
            row["nights"] or 0, _change(row)))
    return 0
