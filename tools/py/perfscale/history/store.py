"""The nightly history: every recorded run, its context and samples; the one interface.

    conn = store.open_history("results/history.sqlite")        # SQLite: one machine
    conn = store.open_history("postgresql://writer@lab/perf")  # PostgreSQL: a fleet
    conn = store.open_history("service=perfscale")             # libpq's service file
    base = store.find_baseline(conn, "host", 2, "--quick", machine=digest)

Both engines (sqlite_engine, postgres_engine) share the schema and its migrations
(perfscale.history.schema); all of perfscale's SQL is in this module. A run is written in
a single transaction, after it succeeded and was judged, so the history never holds half a
run and a failed run never becomes anyone's baseline. Runs form lineages (host, machine
identity, online CPUs, config): only runs of one lineage are ever compared, since a figure
from another machine or another parameter set says nothing about a regression. Each run
has a stable key (run_key): a run sent twice (a spool synced again, an import repeated)
is stored once.
"""

import dataclasses
import datetime
import hashlib
import json
import math
import statistics
import uuid

from perfscale.history import packed, schema, sqlite_engine, targets
from perfscale.machine import identity
from perfscale.results import io, names

SCHEMA_VERSION = schema.SCHEMA_VERSION


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


def open_history(target, read_only=False, check_pages=True, answer_within_s=None):
    """Opens the history at `target`: an SQLite path, a postgresql:// URL or a libpq
    key=value string; a writer creates or migrates it if needed. Refuses what is not a
    history, one of a newer schema, and one that would fail later (damaged, locked, not
    writable, a full disk); raises HistoryUnavailable when a server cannot be reached.
    read_only: for readers (plot, report, serve): the history must exist at this schema,
    and nothing is created, migrated or locked for writing.
    check_pages=False: no look at an SQLite file's pages (a read of the whole file, seconds
    for a fleet's year) because this process checked them when it first opened the file:
    the dashboard, which opens the history for each request.
    answer_within_s: for a server, the longest one statement may wait for its answer before
    the connection is cut and HistoryUnavailable raised (None: no bound; SQLite has its own
    lock timeout)."""
    target = str(target)
    if targets.engine_of(target) == targets.POSTGRESQL:
        try:  # the driver only now: an SQLite history never needs it
            from perfscale.history import postgres_engine
        except ImportError as err:
            raise HistoryError("%s: a PostgreSQL history needs psycopg 3, which cannot be "
                               "imported (%s); tools/setup installs python3-psycopg"
                               % (describe(target), err)) from None
        engine = postgres_engine.Engine(target, HistoryError, HistoryUnavailable, read_only,
                                        answer_within_s)
    else:
        engine = sqlite_engine.Engine(target, HistoryError, read_only)
    store = Store(engine)
    try:
        with store._errors():
            _create_or_migrate(store, read_only)
            engine.check_usable(check_pages)
    except BaseException:
        store.close()
        raise
    return store


def _create_or_migrate(store, read_only=False):
    """Creates the schema of a new history, or checks or migrates an existing one, as one
    step: two nightlies opening a new history at once never both create it, nor does one
    see the other's half-made schema (SQLite's write lock; a PostgreSQL advisory lock).
    A reader only looks."""
    engine = store.engine
    version = engine.version()
    if version == SCHEMA_VERSION:
        return  # the common case, without the lock (and within a writer's privileges)
    kind = "an SQLite file" if engine.name == "sqlite" else "a PostgreSQL database"
    if read_only:  # a reader creates and migrates nothing
        tables = engine.tables()
        if version > SCHEMA_VERSION:
            raise HistoryError("%s: written by a newer perfscale (schema %d, this one knows "
                               "%d): update perfscale to use it" % (
                                   store.name, version, SCHEMA_VERSION))
        raise HistoryError("%s: not a perfscale history of this version (schema %d); open it "
                           "once with `tools/perfscale nightly`" % (store.name, version)
                           if "runs" in tables else
                           "%s: %s, but not a perfscale history" % (store.name, kind))
    with engine.transaction():
        if engine.name == "postgresql":
            engine.lock_schema()
        version, tables = engine.version(), engine.tables()
        if version == 0 and not (tables & {"runs", "calibration"}):
            for statement in engine.script(schema.CREATE):
                engine.execute(statement)
            engine.set_version(SCHEMA_VERSION)
            return
        if version > SCHEMA_VERSION:
            raise HistoryError("%s: written by a newer perfscale (schema %d, this one knows "
                               "%d): update perfscale to use it" % (
                                   store.name, version, SCHEMA_VERSION))
        if version < 1 or "runs" not in tables:
            raise HistoryError("%s: %s, but not a perfscale history" % (store.name, kind))
        while version < SCHEMA_VERSION:
            for statement in engine.script(schema.MIGRATIONS[version]):
                engine.execute(statement)
            if version == 2:
                _fill_run_keys(engine)
            if version == 5:
                _pack_samples(store)
                _digest_again(engine)
            version += 1
        engine.set_version(SCHEMA_VERSION)


def _fill_run_keys(engine):
    for row in engine.execute("SELECT id, host, cpus, config, recorded_at, context FROM runs"):
        engine.execute("UPDATE runs SET run_key = ? WHERE id = ?", (
            derived_run_key([row["host"], row["cpus"], row["config"], row["recorded_at"],
                             row["context"], row["id"]]), row["id"]))
    engine.execute(schema.AFTER_RUN_KEYS)


def _pack_samples(store):
    """Version 5's row per sample into each benchmark's row (history.packed), by the
    engine's own aggregate; refuses (rolling the migration back) if any sample would be
    left behind."""
    engine = store.engine
    before = engine.execute("SELECT COUNT(*) AS n FROM samples")[0]["n"]
    engine.execute(
        "UPDATE benchmarks SET real_ns = s.real_ns, cpu_ns = s.cpu_ns FROM (SELECT run_id, "
        "name, %s AS real_ns, %s AS cpu_ns FROM samples GROUP BY run_id, name) AS s "
        "WHERE benchmarks.run_id = s.run_id AND benchmarks.name = s.name"
        % (engine.packed("real_ns"), engine.packed("cpu_ns")))
    after = _stored_samples(engine)
    if after != before:
        raise HistoryError("%s: packing the samples (schema 5 to 6) would keep %d of %d (some "
                           "belong to no stored benchmark); nothing was changed, keep the "
                           "history with a perfscale of schema 5" % (store.name, after, before))
    engine.execute(schema.AFTER_PACKING)


def _digest_again(engine):
    """Every run's machine digest as identity.digest gives it now (schema 6 left the
    mitigations out), and the lineages kept in other tables renamed with them. Where two
    old lineages become one, the calibration and alert members of the one that ran last
    are kept (a lineage has one calibration, an alert one member per benchmark)."""
    renamed, latest, changed = {}, {}, []
    for row in engine.execute("SELECT id, host, machine, context FROM runs ORDER BY id"):
        try:
            context = json.loads(row["context"])
        except ValueError:
            continue  # no identity to read: its digest stays
        new = identity.digest(context if isinstance(context, dict) else {})
        if new != row["machine"]:
            changed.append((new, row["id"]))
            renamed[(row["host"], row["machine"])] = new
            latest[(row["host"], row["machine"])] = row["id"]
    engine.executemany("UPDATE runs SET machine = ? WHERE id = ?", changed)
    for (host, old), new in sorted(renamed.items(), key=lambda kv: -latest[kv[0]]):
        for table in ("triage", "triage_log"):  # keyed by run too: no two rows meet
            engine.execute("UPDATE %s SET machine = ? WHERE host = ? AND machine = ?" % table,
                           (new, host, old))
        for table, key in (("calibration", ("cpus", "config", "name", "metric")),
                           ("alert_members", ("alert_id", "cpus", "config", "name"))):
            same = " AND ".join("o.%s = %s.%s" % (c, table, c) for c in key)
            engine.execute(
                "UPDATE %s SET machine = ? WHERE host = ? AND machine = ? AND NOT EXISTS "
                "(SELECT 1 FROM %s o WHERE o.host = %s.host AND o.machine = ? AND %s)"
                % (table, table, table, same), (new, host, old, new))
            engine.execute("DELETE FROM %s WHERE host = ? AND machine = ?" % table,
                           (host, old))


def _stored_samples(engine):
    return engine.execute("SELECT COALESCE(SUM(LENGTH(real_ns)), 0) / %d AS n FROM benchmarks"
                          % packed.SIZE)[0]["n"]


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


_LINEAGE = "host = ? AND machine = ? AND cpus = ? AND config = ?"


def get_run(conn, run_id):
    with conn._errors():
        rows = conn.engine.execute("SELECT * FROM runs WHERE id = ?", (run_id,))
    return rows[0] if rows else None


def find_baselines(conn, host, cpus, config, limit, machine=""):
    """The lineage's latest `limit` runs that could be baselines (see find_baseline),
    newest first: the nightly judges against their mean, since one run shifts."""
    with conn._errors():
        return conn.engine.execute(
            "SELECT * FROM runs WHERE " + _LINEAGE + " AND regressions = 0 AND complete = 1 "
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
            "SELECT id FROM runs WHERE " + _LINEAGE + " ORDER BY id DESC LIMIT 1",
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


def _unpacked(conn, row, column):
    try:
        return packed.unpack(row[column])
    except packed.Damaged as err:
        raise HistoryError("%s: run %s's %s of %s are damaged (%s)" % (
            conn.name, row.get("run_id", "?"), column, row.get("name", "?"), err)) from None


def _times(conn, row):
    """(real_ns, cpu_ns) of a benchmark row: the CPU times NaN where none was measured."""
    real = _unpacked(conn, row, "real_ns")
    cpu = _unpacked(conn, row, "cpu_ns") or [math.nan] * len(real)
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
            change=_finite(verdict.change) if verdict else None,
            pvalue=_finite(verdict.pvalue) if verdict else None,
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
            "SELECT id, context FROM runs WHERE " + _LINEAGE + " ORDER BY id DESC LIMIT 1",
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


def store_calibration(conn, host, cpus, config, calibrations, machine="", calibrated_at=None):
    """Replaces the lineage's calibration with `calibrations`, in one transaction."""
    now = calibrated_at or utc_now()
    with conn._errors(), conn.engine.transaction():
        conn.engine.execute("DELETE FROM calibration WHERE " + _LINEAGE,
                            (host, machine, cpus, config))
        conn.engine.executemany(
            "INSERT INTO calibration (host, machine, cpus, config, name, metric, noise_floor, "
            "mdc, sigma, runs, injected_change, calibrated_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            [(host, machine, cpus, config, c.name, c.metric, c.noise_floor, c.mdc, c.sigma,
              c.runs, _finite(c.injected_change), c.calibrated_at or now)
             for c in calibrations])


def load_calibration(conn, host, cpus, config, machine="", name=None):
    """{(name, metric): Calibration} of the lineage; empty if never calibrated. name: only
    that benchmark's (the dashboard's trend page wants one of a fleet's 200)."""
    where, params = _LINEAGE, (host, machine, cpus, config)
    if name is not None:
        where, params = where + " AND name = ?", params + (name,)
    with conn._errors():
        rows = conn.engine.execute("SELECT * FROM calibration WHERE " + where, params)
    return {(r["name"], r["metric"]): Calibration(
        r["name"], r["metric"], r["noise_floor"], r["mdc"], r["sigma"], r["runs"],
        r["injected_change"], r["calibrated_at"]) for r in rows}


def calibrated_configs(conn, host, cpus, machine=None):
    """The configs calibrated for this host and CPU count (any machine if None)."""
    with conn._errors():
        if machine is None:
            rows = conn.engine.execute(
                "SELECT DISTINCT config FROM calibration WHERE host = ? AND cpus = ? "
                "ORDER BY config", (host, cpus))
        else:
            rows = conn.engine.execute(
                "SELECT DISTINCT config FROM calibration WHERE host = ? AND machine = ? AND "
                "cpus = ? ORDER BY config", (host, machine, cpus))
    return [r["config"] for r in rows]


def calibrated_lineages(conn, config):
    """[(host, cpus, machine)] calibrated with `config`."""
    with conn._errors():
        rows = conn.engine.execute(
            "SELECT DISTINCT host, cpus, machine FROM calibration WHERE config = ? "
            "ORDER BY host, cpus, machine", (config,))
    return [(r["host"], r["cpus"], r["machine"]) for r in rows]


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
    clause = " WHERE " + " AND ".join(where) if where else ""
    with conn._errors():
        rows = conn.engine.execute(
            "SELECT r.id, r.recorded_at, r.host, r.machine, r.cpus, r.config, b.run_id, "
            "b.name, b.counters, b.verdict, b.real_ns FROM runs r JOIN benchmarks b "
            "ON b.run_id = r.id" + clause + " ORDER BY r.id, b.position", params)
    out = {}
    for row in rows:
        out.setdefault(row["name"], []).append({
            "run_id": row["id"], "recorded_at": row["recorded_at"],
            "lineage": "%s/%dcpu/%s%s" % (row["host"], row["cpus"], row["config"] or "default",
                                          "/" + row["machine"][:8] if row["machine"] else ""),
            "real_ns": _unpacked(conn, row, "real_ns"),
            "counters": json.loads(row["counters"]), "verdict": row["verdict"]})
    return out


def series(conn, host, machine, cpus, config, name):
    """One benchmark's samples on one lineage, oldest first: [(run_id, recorded_at,
    [real_ns...])], runs that timed it only. Served by runs_by_lineage and the benchmarks'
    primary key."""
    with conn._errors():
        rows = conn.engine.execute(
            "SELECT r.id, r.recorded_at, b.run_id, b.name, b.real_ns FROM runs r "
            "JOIN benchmarks b ON b.run_id = r.id AND b.name = ? WHERE r.host = ? AND "
            "r.machine = ? AND r.cpus = ? AND r.config = ? AND b.real_ns IS NOT NULL "
            "ORDER BY r.id", (name, host, machine, cpus, config))
    return [(row["id"], row["recorded_at"], _unpacked(conn, row, "real_ns")) for row in rows]


def latest_runs(conn):
    """The latest run of every machine (host and identity): [run row], by host."""
    with conn._errors():
        return conn.engine.execute(
            "SELECT r.id, r.host, r.machine, r.cpus, r.config, r.recorded_at, r.regressions "
            "FROM runs r JOIN (SELECT host, machine, MAX(id) AS id FROM runs "
            "GROUP BY host, machine) latest ON latest.id = r.id ORDER BY r.host, r.machine")


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


def all_calibrations(conn):
    """{(host, cpus, config, machine): [Calibration]}."""
    out = {}
    with conn._errors():
        for r in conn.engine.execute("SELECT * FROM calibration ORDER BY host, cpus, config, "
                                     "machine, name, metric"):
            out.setdefault((r["host"], r["cpus"], r["config"], r["machine"]), []).append(
                Calibration(r["name"], r["metric"], r["noise_floor"], r["mdc"], r["sigma"],
                            r["runs"], r["injected_change"], r["calibrated_at"]))
    return out


def counts(conn):
    """{table: rows}: what tests and the import report check."""
    with conn._errors(), conn.snapshot():
        found = {t: conn.engine.execute("SELECT COUNT(*) AS n FROM %s" % t)[0]["n"]
                 for t in ("runs", "benchmarks", "calibration")}
        found["samples"] = _stored_samples(conn.engine)
    return found


def size_bytes(conn):
    with conn._errors():
        return conn.engine.file_size()


def _text(value):
    return None if value is None else str(value)


def _finite(value):
    return value if value is not None and math.isfinite(value) else None
