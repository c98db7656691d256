"""The history in one SQLite file: a single machine, no server (the default).

Writers take SQLite's write lock (BEGIN IMMEDIATE) for one run's transaction; readers see
the file as of their transaction's start.
"""

import contextlib
import os
import sqlite3

from perfscale.history import schema

# How long to wait for another writer (a second nightly on the same file) before failing.
_LOCK_TIMEOUT_S = 60
_TYPES = {"id": "INTEGER PRIMARY KEY AUTOINCREMENT", "real": "REAL"}

Error = sqlite3.Error


class Engine:
    name = "sqlite"

    def __init__(self, path, failure):
        """failure(message) -> the exception to raise (store.HistoryError)."""
        self.target = path
        self.described = path
        directory = os.path.dirname(os.path.abspath(path))
        try:
            os.makedirs(directory, exist_ok=True)
            self._conn = sqlite3.connect(path, timeout=_LOCK_TIMEOUT_S)
        except (OSError, sqlite3.Error) as err:
            raise failure("%s: cannot open the history: %s" % (path, err)) from None
        self._conn.row_factory = sqlite3.Row
        self._conn.isolation_level = None  # we say where transactions begin and end
        self._depth = 0

    def close(self):
        self._conn.close()

    def script(self, text):
        return [s.format(**_TYPES) for s in schema.statements(text)]

    def execute(self, sql, params=()):
        return [dict(row) for row in self._conn.execute(sql, params)]

    def executemany(self, sql, rows):
        self._conn.executemany(sql, rows)

    @contextlib.contextmanager
    def transaction(self):
        """One write transaction; rolled back whole on any exception."""
        if self._depth:
            yield
            return
        self._conn.execute("BEGIN IMMEDIATE")
        self._depth += 1
        try:
            yield
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        finally:
            self._depth -= 1

    @contextlib.contextmanager
    def snapshot(self):
        """Reads that see one state of the file: a deferred transaction holds the shared
        lock, so no writer commits between them."""
        if self._depth:
            yield
            return
        self._conn.execute("BEGIN")
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            self._conn.execute("COMMIT")

    def tables(self):
        return {r["name"] for r in self.execute(
            "SELECT name FROM sqlite_master WHERE type='table'")}

    def version(self):
        return self.execute("PRAGMA user_version")[0]["user_version"]

    def set_version(self, version):
        self._conn.execute("PRAGMA user_version = %d" % int(version))

    def check(self):
        return self.execute("PRAGMA integrity_check")[0]["integrity_check"] == "ok"

    def file_size(self):
        return os.path.getsize(self.target)
