"""The history in one SQLite file: a single machine, no server (the default).

Writers take SQLite's write lock (BEGIN IMMEDIATE) for one run's transaction; readers see
the file as of their transaction's start.
"""

import contextlib
import os
import sqlite3
import urllib.parse

from perfscale.history import packed, schema

# How long to wait for another writer (a second nightly on the same file) before failing.
_LOCK_TIMEOUT_S = 60
_TYPES = {"id": "INTEGER PRIMARY KEY AUTOINCREMENT", "real": "REAL", "blob": "BLOB"}

Error = sqlite3.Error


class Engine:
    name = "sqlite"

    def __init__(self, path, failure, read_only=False, create=True):
        """failure(message) -> the exception to raise (store.HistoryError). read_only: for
        readers (plot, report): the file must exist, and no write lock is ever taken, so a
        reader neither creates a history at a mistyped path nor waits for a writer.
        create=False: a writer that must find the history there (alerts, an import)."""
        self.target = path
        self.described = path
        self.read_only = read_only
        if os.path.exists(path) and not os.path.isfile(path):
            raise failure("%s: not a regular file, so not a history (a history is an SQLite "
                          "file; give its path)" % path)
        if (read_only or not create) and not os.path.isfile(path):
            raise failure("%s: no such history (check the path; `tools/perfscale nightly "
                          "--history PATH` creates one)" % path)
        magic = _magic(path)
        if magic and not SQLITE_MAGIC.startswith(magic[:len(SQLITE_MAGIC)]):
            raise failure("%s: not an SQLite file, so not a history (nothing was written "
                          "to it; give the history's path)" % path)
        directory = os.path.dirname(os.path.abspath(path))
        try:
            if read_only:
                uri = "file:%s?mode=ro" % urllib.parse.quote(os.path.abspath(path))
                self._conn = sqlite3.connect(uri, uri=True, timeout=_LOCK_TIMEOUT_S)
            else:
                os.makedirs(directory, exist_ok=True)
                self._conn = sqlite3.connect(path, timeout=_LOCK_TIMEOUT_S)
        except (OSError, sqlite3.Error) as err:
            raise failure("%s: cannot open the history: %s" % (path, err)) from None
        self._conn.row_factory = sqlite3.Row
        self._conn.isolation_level = None  # we say where transactions begin and end
        self._conn.create_aggregate("perfscale_pack", 2, packed.Aggregate)
        self._depth = 0

    def close(self):
        self._conn.close()

    def script(self, text):
        return [s.format(**_TYPES) for s in schema.statements(text)]

    def execute(self, sql, params=()):
        return [dict(row) for row in self._conn.execute(sql, params)]

    def executemany(self, sql, rows):
        self._conn.executemany(sql, rows)

    @staticmethod
    def packed(column):
        """SQL packing a group's `column` in repetition order (perfscale.history.packed)."""
        return "perfscale_pack(repetition, %s)" % column

    @contextlib.contextmanager
    def transaction(self):
        """One write transaction, the history's change stamp renewed with it
        (perfscale.history.changes); rolled back whole on any exception."""
        if self._depth:
            yield
            return
        self._conn.execute("BEGIN IMMEDIATE")
        self._depth += 1
        try:
            yield
            self._conn.execute(*schema.new_change())
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
        """[] when SQLite's integrity_check finds the whole file sound (every page, every
        index against its table), else its first complaints."""
        problems = [next(iter(row.values())) for row in self.execute("PRAGMA integrity_check(5)")]
        return [] if problems == ["ok"] else problems

    def file_size(self):
        return os.path.getsize(self.target)

    def check_usable(self, pages=True):
        """Refuses a history that would fail later: damaged pages (found before a run of
        hours, not after; pages=False skips that read of the whole file), and for a writer
        a file, folder or filesystem it cannot write. Raises sqlite3 errors, which
        unusable_reason explains."""
        if pages:
            problems = [next(iter(row.values()))
                        for row in self.execute("PRAGMA quick_check(5)")]
            if problems != ["ok"]:
                raise sqlite3.DatabaseError("quick_check: " + "; ".join(problems))
        if self.read_only:
            return
        directory = os.path.dirname(os.path.abspath(self.target))
        for target in (self.target, directory):  # the folder holds the journal of every write
            if not os.access(target, os.W_OK):
                raise sqlite3.OperationalError("attempt to write a readonly database: %s is "
                                               "not writable" % target)
        stat = os.statvfs(directory)
        if stat.f_bavail * stat.f_frsize < MIN_FREE_BYTES:
            raise sqlite3.OperationalError(
                "No space left on device: %d KiB free, a run needs about %d KiB"
                % (stat.f_bavail * stat.f_frsize // 1024, MIN_FREE_BYTES // 1024))


SQLITE_MAGIC = b"SQLite format 3\x00"  # the first bytes of every SQLite 3 file


def _magic(path):
    """The first bytes of the file at `path` (b"" when empty or absent)."""
    try:
        with open(path, "rb") as f:
            return f.read(len(SQLITE_MAGIC))
    except OSError:
        return b""


def is_sqlite_file(path):
    """Whether the file at `path` starts as every SQLite 3 file does."""
    return _magic(path) == SQLITE_MAGIC


# A run's rows plus the journal of its transaction: generous for a suite of ~100 rows.
MIN_FREE_BYTES = 4 << 20


def unusable_reason(path, err):
    """The message for an sqlite3 error on the history at `path`: its cause and what to do.
    A locked or full history is healthy: moving it away would throw away its lineages."""
    text = str(err)
    if isinstance(err, sqlite3.OperationalError) and "locked" in text:
        return ("%s: locked by another writer (a nightly or calibrate still running?) for "
                "more than %d s; wait for it to finish and run again" % (path, _LOCK_TIMEOUT_S))
    if "readonly" in text or "read-only" in text:
        return ("%s: read-only (%s); make it and its folder writable, or pass another "
                "--history" % (path, text))
    if "disk is full" in text or "No space" in text:
        return ("%s: the filesystem is full (%s); free space there and run again; the "
                "history is as it was" % (path, text))
    return ("%s: damaged, not a usable history (%s); keep a copy, then try `sqlite3 %s "
            ".recover`, or move it away to start a new one" % (path, text, path))
