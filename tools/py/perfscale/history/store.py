"""The nightly history: every recorded run, its context and samples, in one SQLite file.

A run is written in a single transaction, after it succeeded and was judged, so the file
never holds half a run and a failed run never becomes anyone's baseline. Runs form
lineages (host, online CPUs, config): only runs of one lineage are ever compared, since
a figure from another machine or another parameter set says nothing about a regression.

    conn = history.open_history("results/history.sqlite")
    base = history.find_baseline(conn, "host", 2, "--quick")
"""

import dataclasses
import datetime
import json
import math
import os
import sqlite3
import statistics
import urllib.parse

from perfscale.results import io, names

SCHEMA_VERSION = 2

_RUNS_SCHEMA = """
CREATE TABLE runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    recorded_at TEXT NOT NULL,          -- UTC, ISO 8601
    host TEXT NOT NULL,
    cpus INTEGER NOT NULL,              -- online CPUs
    config TEXT NOT NULL,               -- what makes two runs comparable besides the machine
    run_args TEXT NOT NULL,             -- JSON list passed to `tools/perfscale run`
    repetitions INTEGER NOT NULL,
    kernel_release TEXT,
    perf_event_paranoid TEXT,
    perfscale_revision TEXT,
    context TEXT NOT NULL,              -- Google Benchmark's whole context, JSON
    results_path TEXT,
    baseline_id INTEGER REFERENCES runs(id),
    regressions INTEGER NOT NULL,       -- benchmarks judged slower than the baseline
    complete INTEGER NOT NULL DEFAULT 0 -- 1 once its report is written: only then a baseline
);
CREATE INDEX runs_by_lineage ON runs(host, cpus, config, id);
CREATE TABLE benchmarks (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    name TEXT NOT NULL,
    time_unit TEXT NOT NULL,            -- as the benchmark reported it
    counters TEXT NOT NULL,             -- JSON: counter -> median over repetitions
    errors TEXT NOT NULL,               -- JSON list of error messages
    verdict TEXT,                       -- against the baseline; NULL without one
    change REAL,
    pvalue REAL,
    PRIMARY KEY (run_id, name)
);
CREATE TABLE samples (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    name TEXT NOT NULL,
    repetition INTEGER NOT NULL,
    real_ns REAL NOT NULL,
    cpu_ns REAL,
    PRIMARY KEY (run_id, name, repetition)
);
"""

# Version 2: runs.complete, and what `tools/perfscale calibrate` learned per benchmark.
_CALIBRATION_SCHEMA = """
CREATE TABLE calibration (
    host TEXT NOT NULL,
    cpus INTEGER NOT NULL,
    config TEXT NOT NULL,
    name TEXT NOT NULL,
    metric TEXT NOT NULL,               -- 'real_time' or an attributed counter's name
    noise_floor REAL NOT NULL,          -- a change below this is A/A noise (fraction)
    mdc REAL NOT NULL,                  -- minimum detectable change at the nightly default
    sigma REAL NOT NULL,                -- spread of log(median) between runs
    runs INTEGER NOT NULL,              -- runs it was learned from
    injected_change REAL,               -- change the injector caused (fraction), if measured
    calibrated_at TEXT NOT NULL,
    PRIMARY KEY (host, cpus, config, name, metric)
);
"""

_SCHEMA = _RUNS_SCHEMA + _CALIBRATION_SCHEMA
_MIGRATE_1_TO_2 = ("ALTER TABLE runs ADD COLUMN complete INTEGER NOT NULL DEFAULT 1;"
                   + _CALIBRATION_SCHEMA)  # runs of version 1 were recorded whole

# How long to wait for another writer (a second nightly on the same file) before failing.
_LOCK_TIMEOUT_S = 60


class HistoryError(Exception):
    """The history file cannot be used; the message says why."""


@dataclasses.dataclass
class RunInfo:
    """What identifies and describes a run, besides its samples."""
    host: str
    cpus: int
    config: str
    run_args: list
    repetitions: int
    context: dict
    results_path: str = ""

    @classmethod
    def from_results(cls, results, config, run_args, repetitions):
        return cls(results.host, results.cpus, config, list(run_args), repetitions,
                   results.context, results.source)

    def lineage(self):
        return "host %s, %d CPUs, config '%s'" % (self.host, self.cpus, self.config)


def open_history(path, read_only=False):
    """Opens the history at `path` and checks that it is whole; refuses a file that is not
    one. read_only: for readers (plot, report): the file must exist, and no write lock is
    taken, so a reader neither creates a history at a mistyped path nor waits for a
    writer."""
    if os.path.exists(path) and not os.path.isfile(path):
        raise HistoryError("%s: not a regular file, so not a history (a history is an SQLite "
                           "file; give its path)" % path)
    if read_only and not os.path.isfile(path):
        raise HistoryError("%s: no such history (check the path; `tools/perfscale nightly "
                           "--history PATH` creates one)" % path)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        if read_only:
            uri = "file:%s?mode=ro" % urllib.parse.quote(os.path.abspath(path))
            conn = sqlite3.connect(uri, uri=True, timeout=_LOCK_TIMEOUT_S)
        else:
            os.makedirs(directory, exist_ok=True)
            conn = sqlite3.connect(path, timeout=_LOCK_TIMEOUT_S)
    except (OSError, sqlite3.Error) as err:
        raise HistoryError("%s: cannot open the history: %s" % (path, err)) from None
    conn.row_factory = sqlite3.Row
    conn.isolation_level = None  # we say where transactions begin and end
    try:
        _create_or_check(conn, path, read_only)
        _check_usable(conn, path, read_only)
    except sqlite3.DatabaseError as err:
        conn.close()
        raise HistoryError(unusable_reason(path, err)) from None
    except BaseException:
        conn.close()
        raise
    conn.isolation_level = ""  # back to the module's default for `with conn:`
    return conn


# What the engine's errors mean to the person who has to act on them. A second engine
# maps its own errors here.
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


def _check_usable(conn, path, read_only):
    """Refuses a history that would fail later: damaged pages (found before a run of
    hours, not after), and for a writer a file, folder or filesystem it cannot write."""
    problems = [row[0] for row in conn.execute("PRAGMA quick_check(5)")]
    if problems != ["ok"]:
        raise sqlite3.DatabaseError("quick_check: " + "; ".join(problems))
    if read_only:
        return
    directory = os.path.dirname(os.path.abspath(path))
    for target in (path, directory):  # the folder holds the journal of every write
        if not os.access(target, os.W_OK):
            raise sqlite3.OperationalError("attempt to write a readonly database: %s is "
                                           "not writable" % target)
    stat = os.statvfs(directory)
    if stat.f_bavail * stat.f_frsize < MIN_FREE_BYTES:
        raise sqlite3.OperationalError("No space left on device: %d KiB free, a run needs "
                                       "about %d KiB" % (stat.f_bavail * stat.f_frsize // 1024,
                                                         MIN_FREE_BYTES // 1024))


# A run's rows plus the journal of its transaction: generous for a suite of ~100 rows.
MIN_FREE_BYTES = 4 << 20


def _create_or_check(conn, path, read_only=False):
    """Creates the schema of a new file, or checks an existing one, as one step.

    BEGIN IMMEDIATE takes the write lock before looking, so two nightlies opening a new
    file at once never both create it, nor does one see the other's half-made schema:
    the second waits, then finds a complete history. A reader only looks."""
    conn.execute("BEGIN" if read_only else "BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if read_only and version < SCHEMA_VERSION:  # a reader migrates nothing
            raise HistoryError("%s: not a perfscale history of this version (schema %d); "
                               "open it once with `tools/perfscale nightly`" % (path, version)
                               if "runs" in tables else
                               "%s: an SQLite file, but not a perfscale history" % path)
        if version == 0 and not tables:
            _script(conn, _SCHEMA)
            conn.execute("PRAGMA user_version = %d" % SCHEMA_VERSION)
        elif version == 1 and "runs" in tables:
            _script(conn, _MIGRATE_1_TO_2)
            conn.execute("PRAGMA user_version = %d" % SCHEMA_VERSION)
        elif version > SCHEMA_VERSION:
            raise HistoryError("%s: written by a newer perfscale (schema %d, this one knows "
                               "%d)" % (path, version, SCHEMA_VERSION))
        elif version != SCHEMA_VERSION or "runs" not in tables:
            raise HistoryError("%s: an SQLite file, but not a perfscale history" % path)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _script(conn, script):
    """Runs `script` inside the open transaction (executescript would commit first)."""
    code = "\n".join(line.split("--")[0] for line in script.splitlines())
    for statement in code.split(";"):
        if statement.strip():
            conn.execute(statement)


def get_run(conn, run_id):
    return conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()


def find_baselines(conn, host, cpus, config, limit):
    """The lineage's latest `limit` runs that could be baselines (see find_baseline),
    newest first: the nightly judges against their mean, since one run shifts."""
    return conn.execute(
        "SELECT * FROM runs WHERE host = ? AND cpus = ? AND config = ? AND regressions = 0 "
        "AND complete = 1 ORDER BY id DESC LIMIT ?", (host, cpus, config, limit)).fetchall()


def find_baseline(conn, host, cpus, config):
    """The latest run of the lineage that passed its own gate, or None.

    A run judged slower is not a baseline: comparing tomorrow against it would accept the
    regression silently after one night. To accept a slowdown on purpose, run nightly
    with --baseline naming the slower run; that run then passes and leads the lineage.
    A run is no baseline either until it is complete (mark_complete): a nightly killed
    between recording and its report leaves a run that is never compared against.
    """
    return conn.execute(
        "SELECT * FROM runs WHERE host = ? AND cpus = ? AND config = ? AND regressions = 0 "
        "AND complete = 1 ORDER BY id DESC LIMIT 1", (host, cpus, config)).fetchone()


def load_entries(conn, run_id):
    """The run's benchmarks as io.Entry objects, for comparison and plots."""
    entries = {}
    for row in conn.execute("SELECT * FROM benchmarks WHERE run_id = ? ORDER BY rowid",
                            (run_id,)):
        entry = io.Entry(row["name"], names.parse_name(row["name"]),
                                 row["time_unit"], errors=json.loads(row["errors"]))
        entry.counters = {k: [v] for k, v in json.loads(row["counters"]).items()
                          if v is not None}
        entries[row["name"]] = entry
    for row in conn.execute("SELECT * FROM samples WHERE run_id = ? ORDER BY name, repetition",
                            (run_id,)):
        entry = entries.get(row["name"])
        if entry is not None:
            entry.real_ns.append(row["real_ns"])
            entry.cpu_ns.append(row["cpu_ns"] if row["cpu_ns"] is not None else math.nan)
    return entries


def check_attribution(info, rows):
    """Raises HistoryError (one line) when the runs `rows` of the lineage were timed
    otherwise than `info`: with the attribution counters attached against without
    (io.attribution_mismatch). A lineage never mixes the two."""
    for row in rows:
        try:
            context = json.loads(row["context"])
        except ValueError:
            context = {}
        reason = io.attribution_mismatch(context, info.context)
        if reason:
            raise HistoryError(
                "run %d of %s: %s; nothing recorded (give this run a lineage of its own with "
                "--config NAME, or time it as the lineage was: --attribution=timed only for a "
                "lineage timed with the counters)" % (row["id"], info.lineage(), reason))


def record_run(conn, info, results, verdicts, baseline_id):
    """Stores a judged run in one transaction; returns its id. Refuses (HistoryError) a
    run timed otherwise than its lineage's latest run (check_attribution)."""
    latest = conn.execute("SELECT * FROM runs WHERE host = ? AND cpus = ? AND config = ? "
                          "ORDER BY id DESC LIMIT 1",
                          (info.host, info.cpus, info.config)).fetchone()
    check_attribution(info, [latest] if latest is not None else [])
    by_name = {v.name: v for v in verdicts}
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    context = info.context
    with conn:  # commits on success, rolls everything back on any exception
        cursor = conn.execute(
            "INSERT INTO runs (recorded_at, host, cpus, config, run_args, repetitions, "
            "kernel_release, perf_event_paranoid, perfscale_revision, context, results_path, "
            "baseline_id, regressions) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (now, info.host, info.cpus, info.config, io.dumps(info.run_args),
             info.repetitions, context.get("kernel_release"), context.get("perf_event_paranoid"),
             context.get("perfscale_revision"), io.dumps(context), info.results_path,
             baseline_id, sum(1 for v in verdicts if v.regression)))
        run_id = cursor.lastrowid
        for name, entry in results.entries.items():
            verdict = by_name.get(name)
            counters = {k: statistics.median(v) for k, v in entry.counters.items() if v}
            conn.execute(
                "INSERT INTO benchmarks (run_id, name, time_unit, counters, errors, verdict, "
                "change, pvalue) VALUES (?,?,?,?,?,?,?,?)",
                (run_id, name, entry.time_unit, io.dumps(counters),
                 io.dumps(entry.errors), verdict.verdict if verdict else None,
                 _finite(verdict.change) if verdict else None,
                 _finite(verdict.pvalue) if verdict else None))
            conn.executemany(
                "INSERT INTO samples (run_id, name, repetition, real_ns, cpu_ns) "
                "VALUES (?,?,?,?,?)",
                [(run_id, name, i, real, _finite(cpu))
                 for i, (real, cpu) in enumerate(zip(entry.real_ns, entry.cpu_ns))])
    return run_id


def mark_complete(conn, run_id):
    """The run's report is written: from now on it may be a baseline."""
    with conn:
        conn.execute("UPDATE runs SET complete = 1 WHERE id = ?", (run_id,))


@dataclasses.dataclass
class Calibration:
    """What `tools/perfscale calibrate` learned about one metric of one benchmark."""
    name: str
    metric: str
    noise_floor: float
    mdc: float
    sigma: float
    runs: int
    injected_change: float = None
    calibrated_at: str = ""


def store_calibration(conn, host, cpus, config, calibrations):
    """Replaces the lineage's calibration with `calibrations`, in one transaction."""
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    with conn:
        conn.execute("DELETE FROM calibration WHERE host = ? AND cpus = ? AND config = ?",
                     (host, cpus, config))
        conn.executemany(
            "INSERT INTO calibration (host, cpus, config, name, metric, noise_floor, mdc, "
            "sigma, runs, injected_change, calibrated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            [(host, cpus, config, c.name, c.metric, c.noise_floor, c.mdc, c.sigma, c.runs,
              _finite(c.injected_change), now) for c in calibrations])


def load_calibration(conn, host, cpus, config):
    """{(name, metric): Calibration} of the lineage; empty if never calibrated."""
    rows = conn.execute("SELECT * FROM calibration WHERE host = ? AND cpus = ? AND config = ?",
                        (host, cpus, config))
    return {(r["name"], r["metric"]): Calibration(
        r["name"], r["metric"], r["noise_floor"], r["mdc"], r["sigma"], r["runs"],
        r["injected_change"], r["calibrated_at"]) for r in rows}


def as_results_document(conn, run_id):
    """A run rebuilt as Google Benchmark JSON, so compare.py can read a baseline whose
    results file is gone: per-repetition entries, then the aggregates compare.py shows."""
    run = get_run(conn, run_id)
    units = {r["name"]: r["time_unit"] for r in
             conn.execute("SELECT name, time_unit FROM benchmarks WHERE run_id = ?", (run_id,))}
    benchmarks, times = [], {}
    for row in conn.execute("SELECT * FROM samples WHERE run_id = ? ORDER BY rowid", (run_id,)):
        name, scale = row["name"], io.TIME_UNIT_NS[units[row["name"]]]
        real = row["real_ns"] / scale
        cpu = row["cpu_ns"] / scale if row["cpu_ns"] is not None else 0.0
        times.setdefault(name, []).append((real, cpu))
        benchmarks.append({
            "name": name, "run_name": name, "run_type": "iteration",
            "repetitions": run["repetitions"], "repetition_index": row["repetition"],
            "threads": 1, "iterations": 1, "real_time": real, "cpu_time": cpu,
            "time_unit": units[name]})
    for name, pairs in times.items():
        if len(pairs) < 2:
            continue  # Google Benchmark writes aggregates only for repeated runs
        for aggregate, fn in _AGGREGATES:
            benchmarks.append({
                "name": "%s_%s" % (name, aggregate), "run_name": name,
                "run_type": "aggregate", "repetitions": len(pairs), "threads": 1,
                "aggregate_name": aggregate, "iterations": len(pairs),
                "real_time": fn([r for r, _ in pairs]), "cpu_time": fn([c for _, c in pairs]),
                "time_unit": units[name]})
    return {"context": json.loads(run["context"]), "benchmarks": benchmarks}


def _cv(values):
    mean = statistics.mean(values)
    return statistics.stdev(values) / mean if mean else 0.0


# The aggregates Google Benchmark 1.7 adds after repetitions, in its order.
_AGGREGATES = (("mean", statistics.mean), ("median", statistics.median),
               ("stddev", statistics.stdev), ("cv", _cv))


def trends(conn, host=None, config=None):
    """Per benchmark, its runs in order: the figures plot --history draws.

    Returns {name: [dict(run_id, recorded_at, lineage, real_ns (list), counters,
    verdict)]}, oldest first.
    """
    where, params = [], []
    if host:
        where.append("r.host = ?")
        params.append(host)
    if config is not None:
        where.append("r.config = ?")
        params.append(config)
    query = ("SELECT r.id, r.recorded_at, r.host, r.cpus, r.config, b.name, b.counters, "
             "b.verdict FROM runs r JOIN benchmarks b ON b.run_id = r.id"
             + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY r.id, b.rowid")
    out = {}
    rows = conn.execute(query, params).fetchall()
    samples = {}
    run_ids = sorted({row["id"] for row in rows})
    for run_id in run_ids:
        for s in conn.execute("SELECT name, real_ns FROM samples WHERE run_id = ?", (run_id,)):
            samples.setdefault((run_id, s["name"]), []).append(s["real_ns"])
    for row in rows:
        out.setdefault(row["name"], []).append({
            "run_id": row["id"], "recorded_at": row["recorded_at"],
            "lineage": "%s/%dcpu/%s" % (row["host"], row["cpus"], row["config"] or "default"),
            "real_ns": samples.get((row["id"], row["name"]), []),
            "counters": json.loads(row["counters"]), "verdict": row["verdict"]})
    return out


def _finite(value):
    return value if value is not None and math.isfinite(value) else None
