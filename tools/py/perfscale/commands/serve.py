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
import socket
import sys

from perfscale.history import store
from perfscale.options import TOKEN_ENV, read_token

DEFAULT_LISTEN = "127.0.0.1:8080"
DEFAULT_WORKERS = 4
THREADS = 4  # per worker (gunicorn's gthread): a slow page does not hold a whole worker


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
    parser.add_argument("--workers", type=int, default=DEFAULT_WORKERS, metavar="N",
                        help="gunicorn worker processes, %d threads each (default "
                        "%%(default)s); 0: Werkzeug's development server, one process "
                        "(Flask's own documentation says not to deploy it)" % THREADS)
    args = parser.parse_args(argv)
    if args.workers < 0:
        parser.error("--workers must not be negative")
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
        if args.workers:
            # Bound here, so a port in use is one line (gunicorn's own bind retries and
            # logs it for five seconds, eleven lines, then exits 1).
            listener = socket.create_server((host, port), family=socket.AF_INET6 if ":" in
                                            host else socket.AF_INET, backlog=2048)
        else:
            server = serving.make_server(host, port, app, threaded=True)
    except OSError as err:
        print("perfscale serve: cannot listen on %s: %s" % (args.listen, err.strerror or err),
              file=sys.stderr)
        return 2
    if args.workers:  # gunicorn takes the descriptor over, and closes it
        return _gunicorn(app, listener.detach(), host, args, token)
    signal.signal(signal.SIGTERM, _stop)
    _listening(host, server.server_port, token)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def _listening(host, port, token):
    """The first line: where it listens (tests and scripts read the port from it)."""
    shown = "[%s]" % host if ":" in host else host
    print("perfscale serve: http://%s:%d/ (%s)" % (
        shown, port, "triage token set" if token else "read-only"), flush=True)
    if token and not ipaddress.ip_address(
            "127.0.0.1" if host == "localhost" else host).is_loopback:
        print("perfscale serve: warning: the token travels in plain HTTP; put a TLS proxy in "
              "front of this address", flush=True)


def _gunicorn(app, listener, host, args, token):
    """Serves `app` (made and checked here, before the fork) on the listening socket whose
    descriptor is `listener`, through Debian's gunicorn: `args.workers` processes of
    THREADS threads, each request read whole before a thread takes it
    (perfscale.web.worker); each request opens its own history connection in its worker.
    SIGTERM or Ctrl-C stops the master, which stops its workers."""
    from gunicorn.app.base import BaseApplication

    class Application(BaseApplication):
        def load_config(self):
            # The worker: gthread reading each request whole first (web/worker.py).
            for key, value in {"bind": "fd://%d" % listener,
                               "workers": args.workers, "threads": THREADS,
                               "worker_class": "perfscale.web.worker.Worker",
                               "loglevel": "warning",
                               "accesslog": None, "timeout": 120, "graceful_timeout": 10,
                               "when_ready": self.ready}.items():
                self.cfg.set(key, value)

        def load(self):
            return app

        @staticmethod
        def ready(server):
            _listening(host, server.LISTENERS[0].sock.getsockname()[1], token)

    try:
        Application().run()
    except SystemExit as stop:  # gunicorn exits through sys.exit: its status is ours
        return stop.code if isinstance(stop.code, int) else 2
    return 0
