"""Runs: their keys, recording one (a single transaction), reading one back, the
lineages and their baselines, and copying runs between histories.

A run is written in a single transaction, after it succeeded and was judged, so the
history never holds half a run and a failed run never becomes anyone's baseline. Runs
form lineages (host, machine identity, online CPUs, config): only runs of one lineage are
ever compared, since a figure from another machine or another parameter set says nothing
about a regression. Each run has a stable key (run_key): a run sent twice (a spool synced
again, an import repeated) is stored once. A benchmark's repetitions are packed into its
row (perfscale.history.packed).
"""

import dataclasses
import datetime
import hashlib
import json
import math
import statistics
import uuid

from perfscale.history import packed
from perfscale.history.connection import HistoryError
from perfscale.machine import identity
from perfscale.results import io, names


def new_run_key():
    """A new run's key: made once, when the nightly has the run, and kept with it (in the
    history or the spool), so the same run is always the same key."""
    return "run-" + uuid.uuid4().hex


def derived_run_key(parts):
    """The key of a run that never had one (older histories, loose result files), from
    what identifies it: the same parts always give the same key."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256-" + hashlib.sha256(text.encode()).hexdigest()


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
    run_key: str = dataclasses.field(default_factory=new_run_key)
    recorded_at: str = ""

    @classmethod
    def from_results(cls, results, config, run_args, repetitions):
        return cls(results.host, results.cpus, config, list(run_args), repetitions,
                   results.context, results.source)

    @property
    def machine(self):
        return identity.digest(self.context)

    def key(self):
        """The lineage as find_baseline's arguments."""
        return (self.host, self.cpus, self.config)

    def lineage(self):
        machine = self.machine
        return "host %s, %d CPUs, config '%s'%s" % (
            self.host, self.cpus, self.config, ", machine %s" % machine if machine else "")


LINEAGE = "host = ? AND machine = ? AND cpus = ? AND config = ?"


def get_run(conn, run_id):
    """The run's row, or None; an id no 64-bit column holds is no run (the drivers raise
    OverflowError for it, outside any history error)."""
    if not 0 < run_id < 1 << 63:
        return None
    with conn._errors():
        rows = conn.engine.execute("SELECT * FROM runs WHERE id = ?", (run_id,))
    return rows[0] if rows else None


def find_baselines(conn, host, cpus, config, limit, machine=""):
    """The lineage's latest `limit` runs that could be baselines (see find_baseline),
    newest first: the nightly judges against their mean, since one run shifts."""
    with conn._errors():
        return conn.engine.execute(
            "SELECT * FROM runs WHERE " + LINEAGE + " AND regressions = 0 AND complete = 1 "
            "ORDER BY id DESC LIMIT ?", (host, machine, cpus, config, limit))


def find_baseline(conn, host, cpus, config, machine=""):
    """The latest run of the lineage that passed its own gate, or None.

    A run judged slower is not a baseline: comparing tomorrow against it would accept the
    regression silently after one night. To accept a slowdown on purpose, run nightly
    with --baseline naming the slower run; that run then passes and leads the lineage.
    A run is no baseline either until it is complete (mark_complete): a nightly killed
    between recording and its report leaves a run that is never compared against.
    """
    rows = find_baselines(conn, host, cpus, config, 1, machine)
    return rows[0] if rows else None


def passing_run_ids(conn, host, cpus, config, limit, machine=""):
    """Ids of the lineage's latest `limit` complete, passing runs, newest first."""
    return [r["id"] for r in find_baselines(conn, host, cpus, config, limit, machine)]


def latest_of_other_machine(conn, host, cpus, config, machine):
    """The latest run of this host, CPUs and config recorded under another machine
    identity, or None: what the nightly compares identities with."""
    with conn._errors():
        rows = conn.engine.execute(
            "SELECT * FROM runs WHERE host = ? AND cpus = ? AND config = ? AND machine <> ? "
            "ORDER BY id DESC LIMIT 1", (host, cpus, config, machine))
        if not rows:
            return None
        mine = conn.engine.execute(
            "SELECT id FROM runs WHERE " + LINEAGE + " ORDER BY id DESC LIMIT 1",
            (host, machine, cpus, config))
    return rows[0] if not mine or mine[0]["id"] < rows[0]["id"] else None


def load_entries(conn, run_id):
    """The run's benchmarks as io.Entry objects, for comparison and plots."""
    entries = {}
    with conn._errors():
        for row in conn.engine.execute("SELECT * FROM benchmarks WHERE run_id = ? "
                                       "ORDER BY position", (run_id,)):
            entry = io.Entry(row["name"], names.parse_name(row["name"]),
                                     row["time_unit"], errors=json.loads(row["errors"]))
            entry.counters = {k: [v] for k, v in json.loads(row["counters"]).items()
                              if v is not None}
            entry.real_ns, entry.cpu_ns = _times(conn, row)
            entries[row["name"]] = entry
    return entries


def unpacked(conn, row, column):
    try:
        return packed.unpack(row[column])
    except packed.Damaged as err:
        raise HistoryError("%s: run %s's %s of %s are damaged (%s)" % (
            conn.name, row.get("run_id", "?"), column, row.get("name", "?"), err)) from None


def _times(conn, row):
    """(real_ns, cpu_ns) of a benchmark row: the CPU times NaN where none was measured."""
    real = unpacked(conn, row, "real_ns")
    cpu = unpacked(conn, row, "cpu_ns") or [math.nan] * len(real)
    return real, cpu


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


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


# A benchmark row as run_rows, run_content and copy_run pass it: the table's columns but
# the run's id.
BENCHMARK_COLUMNS = ("position", "name", "time_unit", "counters", "errors", "verdict",
                     "change", "pvalue", "real_ns", "cpu_ns")


def run_rows(info, results, verdicts):
    """The benchmark rows of a run ({column: value}, BENCHMARK_COLUMNS), without its id:
    what record_run inserts."""
    by_name = {v.name: v for v in verdicts}
    benchmarks = []
    for position, (name, entry) in enumerate(results.entries.items()):
        verdict = by_name.get(name)
        counters = {k: statistics.median(v) for k, v in entry.counters.items() if v}
        cpu = list(entry.cpu_ns[:len(entry.real_ns)])
        benchmarks.append(dict(
            position=position, name=name, time_unit=entry.time_unit,
            counters=io.dumps(counters), errors=io.dumps(entry.errors),
            verdict=verdict.verdict if verdict else None,
            change=finite(verdict.change) if verdict else None,
            pvalue=finite(verdict.pvalue) if verdict else None,
            real_ns=packed.pack(entry.real_ns),
            cpu_ns=packed.pack(cpu + [math.nan] * (len(entry.real_ns) - len(cpu)))))
    return benchmarks


def record_run(conn, info, results, verdicts, baseline_id, complete=False):
    """Stores a judged run in one transaction; returns its id. A run whose key is already
    stored (sent twice) is not stored again: its stored id is returned. Refuses
    (HistoryError) a run timed otherwise than its lineage's latest run
    (check_attribution)."""
    benchmarks = run_rows(info, results, verdicts)
    context = info.context
    info.recorded_at = info.recorded_at or utc_now()
    with conn._errors(), conn.engine.transaction():  # all of it, or nothing
        stored = conn.engine.execute("SELECT id FROM runs WHERE run_key = ?", (info.run_key,))
        if stored:  # sent twice: judged against its lineage when it was first stored
            return stored[0]["id"]
        check_attribution(info, conn.engine.execute(
            "SELECT id, context FROM runs WHERE " + LINEAGE + " ORDER BY id DESC LIMIT 1",
            (info.host, info.machine, info.cpus, info.config)))
        rows = conn.engine.execute(
            "INSERT INTO runs (run_key, recorded_at, host, machine, cpus, config, run_args, "
            "repetitions, kernel_release, perf_event_paranoid, perfscale_revision, context, "
            "results_path, baseline_id, regressions, complete) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (run_key) DO NOTHING "
            "RETURNING id",
            (info.run_key, info.recorded_at, info.host, info.machine, info.cpus, info.config,
             io.dumps(info.run_args), info.repetitions,
             _text(context.get("kernel_release")), _text(context.get("perf_event_paranoid")),
             _text(context.get("perfscale_revision")), io.dumps(context),
             info.results_path, baseline_id, sum(1 for v in verdicts if v.regression),
             1 if complete else 0))
        if not rows:
            return conn.engine.execute("SELECT id FROM runs WHERE run_key = ?",
                                       (info.run_key,))[0]["id"]
        run_id = rows[0]["id"]
        _insert_benchmarks(conn, run_id, benchmarks)
    return run_id


def _insert_benchmarks(conn, run_id, benchmarks, bulk=False):
    columns = ("run_id",) + BENCHMARK_COLUMNS
    rows = [(run_id,) + tuple(b[c] for c in BENCHMARK_COLUMNS) for b in benchmarks]
    if bulk and hasattr(conn.engine, "copy"):
        conn.engine.copy("benchmarks", columns, rows)
    else:
        conn.engine.executemany("INSERT INTO benchmarks (%s) VALUES (%s)" % (
            ", ".join(columns), ",".join("?" * len(columns))), rows)


def has_run(conn, run_key):
    with conn._errors():
        return bool(conn.engine.execute("SELECT id FROM runs WHERE run_key = ?", (run_key,)))


def mark_complete(conn, run_id):
    """The run's report is written: from now on it may be a baseline."""
    with conn._errors(), conn.engine.transaction():
        conn.engine.execute("UPDATE runs SET complete = 1 WHERE id = ?", (run_id,))


def as_results_document(conn, run_id):
    """A run rebuilt as Google Benchmark JSON, so compare.py can read a baseline whose
    results file is gone: per-repetition entries, then the aggregates compare.py shows."""
    run = get_run(conn, run_id)
    with conn._errors():
        rows = conn.engine.execute(
            "SELECT run_id, name, time_unit, real_ns, cpu_ns FROM benchmarks WHERE run_id = ? "
            "ORDER BY position", (run_id,))
    benchmarks, times, units = [], {}, {}
    for row in rows:
        name, scale = row["name"], io.TIME_UNIT_NS[row["time_unit"]]
        units[name] = row["time_unit"]
        for repetition, (real, cpu) in enumerate(zip(*_times(conn, row))):
            real, cpu = real / scale, cpu / scale if math.isfinite(cpu) else 0.0
            times.setdefault(name, []).append((real, cpu))
            benchmarks.append({
                "name": name, "run_name": name, "run_type": "iteration",
                "repetitions": run["repetitions"], "repetition_index": repetition,
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


# --- Copying whole histories: `history import`, trials' private copy. -----------------

def all_runs(conn):
    with conn._errors():
        return conn.engine.execute("SELECT * FROM runs ORDER BY id")


def run_content(conn, run_id):
    """The benchmark rows of a stored run, as run_rows gives them."""
    with conn._errors():
        return conn.engine.execute("SELECT %s FROM benchmarks WHERE run_id = ? ORDER BY "
                                   "position" % ", ".join(BENCHMARK_COLUMNS), (run_id,))


_RUN_COLUMNS = ("run_key", "recorded_at", "host", "machine", "cpus", "config", "run_args",
                "repetitions", "kernel_release", "perf_event_paranoid", "perfscale_revision",
                "context", "results_path", "baseline_id", "regressions", "complete")


def copy_run(conn, run, benchmarks, baseline_id, bulk=False):
    """Stores a run read from another history (a row of all_runs and its run_content) in
    one transaction, keeping its verdicts; its baseline is `baseline_id` in this history.
    Returns (id, True) or, for a key already here, (stored id, False)."""
    values = dict(run, baseline_id=baseline_id)
    with conn._errors(), conn.engine.transaction():
        rows = conn.engine.execute(
            "INSERT INTO runs (%s) VALUES (%s) ON CONFLICT (run_key) DO NOTHING RETURNING id"
            % (", ".join(_RUN_COLUMNS), ",".join("?" * len(_RUN_COLUMNS))),
            [values[c] for c in _RUN_COLUMNS])
        if not rows:
            return conn.engine.execute("SELECT id FROM runs WHERE run_key = ?",
                                       (run["run_key"],))[0]["id"], False
        run_id = rows[0]["id"]
        _insert_benchmarks(conn, run_id, benchmarks, bulk)
    return run_id, True


def run_id_of(conn, run_key):
    with conn._errors():
        rows = conn.engine.execute("SELECT id FROM runs WHERE run_key = ?", (run_key,))
    return rows[0]["id"] if rows else None


def counts(conn):
    """{table: rows}: what tests and the import report check."""
    with conn._errors(), conn.snapshot():
        found = {t: conn.engine.execute("SELECT COUNT(*) AS n FROM %s" % t)[0]["n"]
                 for t in ("runs", "benchmarks", "calibration")}
        found["samples"] = stored_samples(conn.engine)
    return found


def size_bytes(conn):
    with conn._errors():
        return conn.engine.file_size()


def _text(value):
    return None if value is None else str(value)


def finite(value):
    """value, or None for a NaN or infinity (the history stores no such figure)."""
    return value if value is not None and math.isfinite(value) else None


def stored_samples(engine):
    """How many samples the history holds (each packed figure is one)."""
    return engine.execute("SELECT COALESCE(SUM(LENGTH(real_ns)), 0) / %d AS n FROM benchmarks"
                          % packed.SIZE)[0]["n"]
