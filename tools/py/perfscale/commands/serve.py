"""`tools/perfscale serve --history DB [--listen 127.0.0.1:8080]`: the dashboard.

    tools/perfscale serve --history results/history.sqlite
    PERFSCALE_TRIAGE_TOKEN=... tools/perfscale serve --history DB   # triage allowed
    tools/perfscale serve --history DB --token-file /etc/perfscale/triage-token

Read-only (the history is opened read-only) unless a triage token is given, by
--token-file or $PERFSCALE_TRIAGE_TOKEN (never on the command line, where `ps` shows it);
then a POST to /triage with that token (form field `token` or header X-Perfscale-Token)
sets a regression's or a change point's state. --listen 127.0.0.1:0 picks a free port;
the first line printed says where it listens. Pages: docs/dashboard.md.
"""

import argparse
import ipaddress
import os
import signal
import sys

from perfscale.history import store
from perfscale.options import TOKEN_ENV, read_token

DEFAULT_LISTEN = "127.0.0.1:8080"


def parse_listen(text):
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ValueError("--listen wants HOST:PORT, e.g. 127.0.0.1:8080, got '%s'" % text)
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if host != "localhost":
            raise ValueError("--listen wants an IP address (or localhost), got '%s'"
                             % host) from None
    return host, int(port)


def _stop(_signum, _frame):
    """SIGTERM ends serve_forever as Ctrl-C does, so the socket is closed on the way out."""
    raise KeyboardInterrupt


def main(argv):
    parser = argparse.ArgumentParser(
        prog="tools/perfscale serve",
        description="The dashboard over the nightly history: fleet, trends, runs, "
                    "comparisons, scaling, change points and triage (docs/dashboard.md).")
    parser.add_argument("--history", required=True, metavar="DB",
                        help="the history the nightly writes (an SQLite file, a "
                        "postgresql:// URL or service=NAME)")
    parser.add_argument("--listen", default=DEFAULT_LISTEN, metavar="HOST:PORT",
                        help="address to listen on (default %(default)s; port 0: any free)")
    parser.add_argument("--token-file", metavar="FILE",
                        help="file holding the triage token (else $%s); without one the "
                        "dashboard is read-only" % TOKEN_ENV)
    args = parser.parse_args(argv)
    try:
        host, port = parse_listen(args.listen)
        token = read_token(args.token_file)
    except ValueError as err:
        parser.error(str(err))
    if not store.is_server(args.history) and not os.path.isfile(args.history):
        print("perfscale serve: %s: no such history (the nightly writes it: tools/perfscale "
              "nightly --history %s)" % (args.history, args.history), file=sys.stderr)
        return 2
    from werkzeug import serving
    from perfscale.web.app import create_app
    try:
        app = create_app(args.history, token)
    except store.HistoryError as err:
        print("perfscale serve: %s" % err, file=sys.stderr)
        return 2
    try:
        server = serving.make_server(host, port, app, threaded=True)
    except OSError as err:
        print("perfscale serve: cannot listen on %s: %s" % (args.listen, err.strerror or err),
              file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _stop)
    shown = "[%s]" % host if ":" in host else host
    print("perfscale serve: http://%s:%d/ (%s)" % (
        shown, server.server_port, "triage token set" if token else "read-only"), flush=True)
    if token and not ipaddress.ip_address(
            "127.0.0.1" if host == "localhost" else host).is_loopback:
        print("perfscale serve: warning: the token travels in plain HTTP; put a TLS proxy in "
              "front of this address", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
