"""Shared setup of the results-tooling tests: imports from tools/py, recorded data paths.

Run with perfscale's interpreter (tools/py/python: Debian's, it has scipy and matplotlib):
    tools/py/python -m pytest -q testing/py
"""

import contextlib
import json
import math
import http.server
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO_ROOT, "tools", "py"))

DATA = os.path.join(HERE, "data")
# PERFSCALE_BINARY: stands in for the family binary, the rest of `run` is the real one.
FAKE_RUN = "%s %s" % (sys.executable, os.path.join(HERE, "fake_run.py"))


def pytest_configure(config):
    def interrupt(_signum, _frame):
        raise KeyboardInterrupt
    # A runner's timeout or a job limit ends pytest with SIGTERM, whose default leaves the
    # PostgreSQL clusters, servers and browsers the fixtures started running. As an
    # interrupt, pytest still runs every fixture's teardown, which stops them by PID.
    signal.signal(signal.SIGTERM, interrupt)


def data(name):
    return os.path.join(DATA, name)


@pytest.fixture
def cli(capsys):
    """Runs `tools/perfscale COMMAND ARGS` in-process; returns (exit code, stdout, stderr)."""
    from perfscale import cli as dispatcher

    def run(*argv):
        code = dispatcher.main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return code, out, err
    return run


def alive(pid):
    """True while `pid` exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid, encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone before the open, or the read
        return False


def wait_for(predicate, seconds):
    """True once predicate() is, polling for at most `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def postgres_missing():
    """Why the PostgreSQL tests cannot run here ('' when they can)."""
    from perfscale.history import cluster as db
    try:
        import psycopg  # noqa: F401  (the driver the store's PostgreSQL engine needs)
    except ImportError:
        return ("psycopg 3 is not installed (tools/setup test installs python3-psycopg)")
    if not os.path.exists(os.path.join(db.BIN, "pg_ctl")):
        return "PostgreSQL 15 is not installed (tools/setup test installs postgresql-15)"
    return ""


@pytest.fixture(scope="module")
def pg_server():
    """A PostgreSQL cluster for one test module (`tools/perfscale db start`), stopped by
    its PID at the module's end; each test makes its own database in it (pg_history)."""
    import shutil
    import tempfile
    from perfscale.history import cluster as db
    missing = postgres_missing()
    if missing:
        pytest.skip(missing)
    parent = tempfile.mkdtemp(prefix="perfscale-pg-")
    os.chmod(parent, 0o755)  # the server's user must reach its folder
    directory = os.path.join(parent, "cluster")
    state = db.start(directory)
    old = os.environ.get("PGPASSFILE")
    os.environ["PGPASSFILE"] = db.pgpass_path(directory)
    try:
        yield {"dir": directory, "pid": state["pid"]}
    finally:
        if old is None:
            os.environ.pop("PGPASSFILE", None)
        else:
            os.environ["PGPASSFILE"] = old
        pid = db.stop(directory)
        assert pid is None or not alive(pid)
        shutil.rmtree(parent)


def pg_history(server, name):
    """{role: url} of a new history database `name` in the cluster `server`, plus its dir."""
    from perfscale.history import cluster as db
    return dict(db.create_history(server["dir"], name), dir=server["dir"])


def as_schema_5(conn, digest_of=None):
    """Rewrites a schema-7 history (an open store) as schema 5 stored it: a row per
    sample; with `digest_of(context)`, the machine digests of runs, calibration, triage
    and alert members as that gives them (schema 5's took the mitigations in). The tests
    of older histories start from it."""
    from perfscale.history import packed
    engine = conn.engine
    with engine.transaction():
        engine.execute(engine.script(
            "CREATE TABLE samples (run_id BIGINT NOT NULL REFERENCES runs(id), name TEXT NOT "
            "NULL, repetition INTEGER NOT NULL, real_ns {real} NOT NULL, cpu_ns {real}, "
            "PRIMARY KEY (run_id, name, repetition))")[0])
        for row in engine.execute("SELECT run_id, name, real_ns, cpu_ns FROM benchmarks"):
            real = packed.unpack(row["real_ns"])
            cpu = packed.unpack(row["cpu_ns"]) or [math.nan] * len(real)
            engine.executemany("INSERT INTO samples VALUES (?, ?, ?, ?, ?)", [
                (row["run_id"], row["name"], i, r, None if math.isnan(c) else c)
                for i, (r, c) in enumerate(zip(real, cpu))])
        engine.execute("ALTER TABLE benchmarks DROP COLUMN real_ns")
        engine.execute("ALTER TABLE benchmarks DROP COLUMN cpu_ns")
        engine.execute("CREATE INDEX benchmarks_by_name ON benchmarks(name, run_id)")
        for row in engine.execute("SELECT id, machine, context FROM runs"):
            if digest_of is None:
                break
            old = digest_of(json.loads(row["context"]))
            engine.execute("UPDATE runs SET machine = ? WHERE id = ?", (old, row["id"]))
            for table in ("calibration", "triage", "triage_log", "alert_members"):
                engine.execute("UPDATE %s SET machine = ? WHERE machine = ?" % table,
                               (old, row["machine"]))
        engine.set_version(5)
    # Schema 7's change stamp, which schema 5 had not: dropped after the transaction above,
    # whose commit renews it.
    engine.execute("DROP TABLE perfscale_changes")


@contextlib.contextmanager
def http_server(handler, threaded=False):
    """A real HTTP server on a free 127.0.0.1 port, serving `handler` from a thread until
    the block ends: yields the server (its port is server.server_port)."""
    kind = http.server.ThreadingHTTPServer if threaded else http.server.HTTPServer
    httpd = kind(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        thread.join()
        httpd.server_close()


class Server:
    """`tools/perfscale serve` as a child on a free loopback port (self.url, self.port),
    with the triage token `token` or none, `workers` gunicorn workers (None: serve's
    default); stopped by its PID."""

    def __init__(self, history_path, token=None, workers=None):
        env = dict(os.environ)
        env.pop("PERFSCALE_TRIAGE_TOKEN", None)
        if token:
            env["PERFSCALE_TRIAGE_TOKEN"] = token
        self.proc = subprocess.Popen(
            [os.path.join(REPO_ROOT, "tools", "py", "python"), "-m", "perfscale.cli", "serve",
             "--history", history_path, "--listen", "127.0.0.1:0"]
            + ([] if workers is None else ["--workers", str(workers)]), env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line = self.proc.stdout.readline()
        if "http://" not in line:
            self.stop()
            raise AssertionError("serve did not start: %r" % line)
        self.url = line.split()[2].rstrip("/")
        self.port = int(self.url.rsplit(":", 1)[1])

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:  # gunicorn waits up to 10 s for its workers; a loaded machine takes longer
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc.stdout.close()
