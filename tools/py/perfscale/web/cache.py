"""What the dashboard computes from the history, computed once per change of the history
and shared by every worker process and thread of one server (`tools/perfscale serve`).

A page is a function of the history and its URL, and the history only changes when a
night is recorded, a run completed, a calibration stored or an alert triaged: each of
those writes renews the history's change stamp in its own transaction
(perfscale.history.changes). So a page is kept under (stamp, URL): the first request after
a change computes it, and every other request, in any worker, reads it until the stamp
moves. A request reads the stamp before anything else, so it never gets a page older than
the last write it could see.

The entries are files in one private folder made before gunicorn forks its workers
(mode 0700, removed when the server stops), one subfolder per stamp; when a newer stamp
appears, the older subfolders are removed. One maker per entry: the others wait on its
lock (fcntl.flock, across processes and threads) and read what it wrote, so 32 clients
arriving after a change cost one computation, not 32. A stamp's folder holds at most
MAX_ENTRIES; past that a page is computed for its request and not kept (a client asking
for endless distinct URLs fills no disk).
"""

import fcntl
import hashlib
import os
import shutil
import tempfile
import threading
import time
import weakref

MAX_ENTRIES = 4096


class SharedCache:
    """Entries (bytes) under (stamp, key), in `directory` or a new private folder that
    is removed when the object is collected or the process that made it exits."""

    def __init__(self, directory=None):
        self.owned = directory is None
        self.directory = directory or tempfile.mkdtemp(prefix="perfscale-serve-cache-")
        if self.owned:  # only by the process that made it: a forked worker's exit keeps it
            self._remove = weakref.finalize(self, _remove_folder, self.directory, os.getpid())

    def close(self):
        if self.owned:
            self._remove()

    def _stamp_folder(self, stamp):
        """The folder of `stamp` ("<changes>-<random>"), made if new; a new one removes
        the folders of older changes (lower counts)."""
        folder = os.path.join(self.directory, stamp)
        if os.path.isdir(folder):
            return folder
        os.makedirs(folder, exist_ok=True)
        count = _changes(stamp)
        for name in os.listdir(self.directory):
            if name != stamp and _changes(name) < count:
                shutil.rmtree(os.path.join(self.directory, name), ignore_errors=True)
        return folder

    def get_or_make(self, stamp, key, make, fresh_for=None):
        """The bytes kept under (stamp, key), or make()'s, kept for the next request.
        make() runs at most once per entry at a time, in any process; an exception from
        it reaches the caller and keeps nothing. fresh_for: seconds an entry is good for
        besides its stamp (a page that also reads the clock); past them one request makes
        it again while the others take the one kept (same stamp: the same history)."""
        name = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
        try:
            folder = self._stamp_folder(stamp)
            path = os.path.join(folder, name)
            found = _read(path, fresh_for)
            if found is not None and found[1]:
                return found[0]
            lock = open(path + ".lock", "a")
        except FileNotFoundError:  # the folder removed by a newer change meanwhile
            return make()
        with lock:
            if found is not None:  # only old: whoever holds the lock makes it again
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return found[0]
            else:
                fcntl.flock(lock, fcntl.LOCK_EX)
            found = _read(path, fresh_for)
            if found is not None and found[1]:
                return found[0]
            made = make()
            try:
                if len(os.listdir(folder)) < 2 * MAX_ENTRIES:  # an entry and its lock
                    _write(path, made)
            except FileNotFoundError:
                pass
            return made

    def at(self, stamp):
        """This cache as seen at `stamp`: get_or_make(key, make)."""
        return _AtStamp(self, stamp)


class _AtStamp:
    def __init__(self, cache, stamp):
        self.cache, self.stamp = cache, stamp

    def get_or_make(self, key, make):
        return self.cache.get_or_make(self.stamp, key, make)


def _changes(name):
    count, _sep, _random = name.partition("-")
    return int(count) if count.isdigit() else -1


def _read(path, fresh_for=None):
    """(bytes, whether younger than fresh_for seconds) of the entry at `path`, or None."""
    try:
        with open(path, "rb") as f:
            young = fresh_for is None or time.time() - os.fstat(f.fileno()).st_mtime < fresh_for
            return f.read(), young
    except FileNotFoundError:
        return None


def _write(path, data):
    """Whole or not at all: readers never see a half-written entry."""
    work = "%s.%d.%d" % (path, os.getpid(), threading.get_ident())
    with open(work, "wb") as f:
        f.write(data)
    os.replace(work, path)


def _remove_folder(directory, owner):
    if os.getpid() == owner:
        shutil.rmtree(directory, ignore_errors=True)
