"""A history opened on one engine (Store), and the errors every history function raises.

The seam of perfscale.history: `conn.engine` runs the SQL (sqlite_engine, postgres_engine),
and `with conn._errors():` turns an engine's errors into HistoryError (a server's message
redacted), or HistoryUnavailable when a server is lost mid-way, which the nightly spools.
"""

from perfscale.history import sqlite_engine, targets


class HistoryError(Exception):
    """The history cannot be used; the message says why."""


class HistoryUnavailable(HistoryError):
    """The history's server cannot be reached now (down, network, credentials): the
    nightly spools its run (perfscale.history.spool) instead of losing it."""


def is_server(target):
    """True for a PostgreSQL target; from its text alone, no driver needed (targets)."""
    return targets.is_server(target)


def redact(text, target=""):
    """`text` with passwords (of URLs, key=value strings, `target`) replaced by ***."""
    if target and targets.is_server(target):
        try:
            from perfscale.history import postgres_engine
        except ImportError:  # no driver, so no server message can quote the password
            return targets.redact(text)
        return postgres_engine.redact(text, target)
    return targets.redact(text)


def is_sqlite_file(path):
    """Whether `path` is an SQLite file (its first bytes), a history or not."""
    return sqlite_engine.is_sqlite_file(path)


def describe(target):
    """The history's name for messages: a server URL's password redacted."""
    return redact(str(target))


class Store:
    """A history opened on one engine. Pass it to the functions below."""

    def __init__(self, engine):
        self.engine = engine
        self.name = engine.described

    def close(self):
        self.engine.close()

    def __enter__(self):
        return self

    def __exit__(self, *_exc):
        self.close()

    def snapshot(self):
        """Reads that see one state of the history, whatever other writers commit."""
        return self.engine.snapshot()

    def _errors(self):
        return _Translate(self)


class _Translate:
    """Engine errors as HistoryError; a server lost mid-way as HistoryUnavailable."""

    def __init__(self, store):
        self.store = store

    def __enter__(self):
        return self

    def __exit__(self, kind, err, _tb):
        if err is None or isinstance(err, HistoryError):
            return False
        if self.store.engine.name == "postgresql":
            import psycopg
            if isinstance(err, psycopg.OperationalError):
                raise HistoryUnavailable("%s: lost the server: %s" % (
                    self.store.name, " ".join(redact(err, self.store.engine.target).split())))
            if isinstance(err, psycopg.Error):
                raise HistoryError("%s: %s" % (self.store.name, " ".join(
                    redact(err, self.store.engine.target).split())))
        elif isinstance(err, sqlite_engine.Error):
            raise HistoryError(sqlite_engine.unusable_reason(self.store.name, err)) from None
        return False
