"""The read queries of the dashboard (perfscale.web): fleet, trend, scaling, runs.

Every query is plain SQL that SQLite and PostgreSQL both accept, with qmark (`?`)
parameters only: no value is ever formatted into a query. An engine with another
placeholder style rewrites `?` once, where it executes (store's engine layer).
Rows come back as mappings (sqlite3.Row or a dict row factory).

rows() and transaction() below are the one seam to the engine: `conn` is the store
that store.open_history returns, used through its engine's execute and transaction, and
engine errors become store.HistoryError (redacted for a server) as everywhere else.

A lineage is (host, machine, cpus, config), as in the store: `machine` is the identity
digest (perfscale.machine.identity).
"""

import contextlib
import json
import statistics

from perfscale.history import packed

REGRESSION_VERDICTS = ("slower", "counts up")  # gate/stats.py SLOWER, COUNTS


def rows(conn, query, params=()):
    """Every row of `query` (qmark parameters), as mappings."""
    with conn._errors():
        return conn.engine.execute(query, tuple(params))


def one(conn, query, params=()):
    found = rows(conn, query, params)
    return found[0] if found else None


@contextlib.contextmanager
def transaction(conn):
    """One write transaction, committed on success and rolled back on any exception."""
    with conn._errors(), conn.engine.transaction():
        yield


_all = rows
# Each lineage's latest run id: a constant subquery, joined into the queries below.
_LATEST = "SELECT MAX(id) AS id FROM runs GROUP BY host, machine, cpus, config"
# The latest run of each lineage on each kernel: an A/B of kernels on one machine (a 5.10
# guest's nights beside 6.12's) keeps every kernel's point, where _LATEST keeps the last.
_LATEST_PER_KERNEL = ("SELECT MAX(id) AS id FROM runs "
                      "GROUP BY host, machine, cpus, config, kernel_release")


# Run ids one query names at most (SQLite allows 32766 parameters; PostgreSQL 65535).
_IDS_PER_QUERY = 500


def lineages(conn, since):
    """Every lineage with its last run and its nights since `since` (ISO UTC text):
    [dict(host, machine, cpus, config, runs, last (row), passed, regressed, incomplete)]."""
    rows = _all(conn,
                "SELECT host, machine, cpus, config, COUNT(*) AS runs, MAX(id) AS last_id, "
                "SUM(CASE WHEN recorded_at >= ? AND complete = 1 AND regressions = 0 "
                "THEN 1 ELSE 0 END) AS passed, "
                "SUM(CASE WHEN recorded_at >= ? AND complete = 1 AND regressions > 0 "
                "THEN 1 ELSE 0 END) AS regressed, "
                "SUM(CASE WHEN recorded_at >= ? AND complete = 0 THEN 1 ELSE 0 END) "
                "AS incomplete "
                "FROM runs GROUP BY host, machine, cpus, config "
                "ORDER BY host, machine, cpus, config",
                (since, since, since))
    last = {r["id"]: r for r in _all(
        conn, "SELECT r.id, r.recorded_at, r.kernel_release, r.regressions, r.complete "
        "FROM runs r JOIN (" + _LATEST + ") m ON r.id = m.id")}
    return [dict(host=r["host"], machine=r["machine"], cpus=r["cpus"], config=r["config"],
                 runs=r["runs"],
                 last=last[r["last_id"]], passed=r["passed"] or 0,
                 regressed=r["regressed"] or 0, incomplete=r["incomplete"] or 0)
            for r in rows]


def lineage_list(conn):
    """Every lineage and its latest run id: [row(host, machine, cpus, config, last_id)];
    cheaper than lineages() (the runs index alone)."""
    return _all(conn, "SELECT host, machine, cpus, config, MAX(id) AS last_id FROM runs "
                "GROUP BY host, machine, cpus, config ORDER BY host, machine, cpus, config")


def flagged(conn, host, machine, cpus, config, since):
    """The lineage's benchmarks the nightly judged regressed since `since`:
    [row(run_id, recorded_at, kernel_release, name, verdict, change)], newest first.
    Only runs counted regressed (runs.regressions, stored with the verdicts it counts) are
    joined to their benchmarks: the fleet page would otherwise read every benchmark of
    every night of every lineage in its window."""
    return _all(conn,
                "SELECT r.id AS run_id, r.recorded_at, r.kernel_release, b.name, b.verdict, "
                "b.change FROM runs r JOIN benchmarks b ON b.run_id = r.id "
                "WHERE r.host = ? AND r.machine = ? AND r.cpus = ? AND r.config = ? "
                "AND r.recorded_at >= ? AND r.regressions > 0 AND b.verdict IN (?, ?) "
                "ORDER BY r.id DESC, b.name",
                (host, machine, cpus, config, since) + REGRESSION_VERDICTS)


def runs_of(conn, host, machine, cpus, config):
    """The lineage's runs, oldest first (id, recorded_at, kernel_release, regressions)."""
    return _all(conn, "SELECT id, recorded_at, kernel_release, regressions, complete "
                "FROM runs WHERE host = ? AND machine = ? AND cpus = ? AND config = ? "
                "ORDER BY id", (host, machine, cpus, config))


def benchmark_names(conn, run_id):
    return [r["name"] for r in _all(conn, "SELECT name FROM benchmarks WHERE run_id = ? "
                                    "ORDER BY name", (run_id,))]


def _median(row):
    """The median of a benchmark row's packed times (history.packed), or None: one value
    per run comes from the database, not one per repetition."""
    try:
        values = packed.unpack(row["real_ns"])
    except packed.Damaged:
        return None  # a page shows the run without its time rather than fail
    return statistics.median(values) if values else None


def trend(conn, name, host, machine, cpus, config):
    """One benchmark over one lineage's runs, oldest first: [dict(run_id, recorded_at,
    kernel, median_ns, counters, verdict)]."""
    rows = _all(conn,
                "SELECT r.id, r.recorded_at, r.kernel_release, b.counters, b.verdict, "
                "b.real_ns FROM runs r JOIN benchmarks b ON b.run_id = r.id AND b.name = ? "
                "WHERE r.host = ? AND r.machine = ? AND r.cpus = ? AND r.config = ? "
                "ORDER BY r.id", (name, host, machine, cpus, config))
    return [dict(run_id=r["id"], recorded_at=r["recorded_at"], kernel=r["kernel_release"],
                 median_ns=_median(r), counters=json.loads(r["counters"]),
                 verdict=r["verdict"])
            for r in rows]


def _of_runs(conn, select, ids, params=()):
    """Rows of `select` (ending "... IN (%s)" over run ids, its other parameters `params`
    first) for the runs `ids`, a few hundred at a time. The latest runs are asked for
    first and then their rows by the benchmarks' key (run id, name): joined in one query,
    PostgreSQL's planner read all of benchmarks instead (1.6 s a page on the
    50-machine year)."""
    rows = []
    for start in range(0, len(ids), _IDS_PER_QUERY):
        chunk = list(ids[start:start + _IDS_PER_QUERY])
        rows += _all(conn, select % ",".join("?" * len(chunk)), list(params) + chunk)
    return rows


def latest_names(conn):
    """Every benchmark in some lineage's latest run, sorted."""
    ids = [r["id"] for r in _all(conn, _LATEST)]
    return sorted({r["name"] for r in _of_runs(
        conn, "SELECT DISTINCT name FROM benchmarks WHERE run_id IN (%s)", ids)})


def scaling(conn, name, per_kernel=False):
    """The benchmark's figure in each lineage's latest run (with `per_kernel`, its latest
    run on each kernel), where that run has it:
    [dict(host, machine, cpus, config, run_id, recorded_at, kernel, median_ns, counters)]."""
    latest = _LATEST_PER_KERNEL if per_kernel else _LATEST
    rows = sorted(_of_runs(conn, "SELECT r.id, r.host, r.machine, r.cpus, r.config, "
                           "r.recorded_at, r.kernel_release, b.counters, b.real_ns FROM runs r "
                           "JOIN benchmarks b ON b.run_id = r.id AND b.name = ? "
                           "WHERE r.id IN (%s)", [r["id"] for r in _all(conn, latest)],
                           (name,)),
                  key=lambda r: (r["cpus"], r["host"]))
    return [dict(host=r["host"], machine=r["machine"], cpus=r["cpus"], config=r["config"],
                 run_id=r["id"],
                 recorded_at=r["recorded_at"], kernel=r["kernel_release"],
                 median_ns=_median(r), counters=json.loads(r["counters"]))
            for r in rows]


def release_series(conn, name):
    """The benchmark against the kernel release, in every lineage that ran more than one
    release (a `tools/perfscale series`, guests of several kernels): per release, the run
    in which it arrived (the latest judged against another release; else its latest), so
    a release measured twice (an A/A) still shows the step from the release before it.
    [dict(host, machine, cpus, config, run_id, kernel, median_ns, verdict, change,
    baseline_id, baseline_kernel)], oldest run first."""
    runs = _all(conn, "SELECT id, host, machine, cpus, config, kernel_release, baseline_id "
                "FROM runs WHERE complete = 1 ORDER BY id")
    kernel_of = {r["id"]: r["kernel_release"] for r in runs}
    chosen = {}
    for run in runs:  # oldest first: a later run of the same kind replaces an earlier one
        key = (run["host"], run["machine"], run["cpus"], run["config"])
        arrived = kernel_of.get(run["baseline_id"]) not in (None, run["kernel_release"])
        found = chosen.setdefault(key, {})
        held = found.get(run["kernel_release"])
        if held is None or arrived or not held[1]:
            found[run["kernel_release"]] = (run["id"], arrived)
    ids = sorted(run_id for releases in chosen.values() if len(releases) > 1
                 for run_id, _arrived in releases.values())
    rows = _of_runs(conn, "SELECT r.id, r.host, r.machine, r.cpus, r.config, "
                    "r.kernel_release, r.baseline_id, b.verdict, b.change, b.real_ns "
                    "FROM runs r JOIN benchmarks b ON b.run_id = r.id AND b.name = ? "
                    "WHERE r.id IN (%s)", ids, (name,))
    return [dict(host=r["host"], machine=r["machine"], cpus=r["cpus"], config=r["config"],
                 run_id=r["id"], kernel=r["kernel_release"], median_ns=_median(r),
                 verdict=r["verdict"], change=r["change"], baseline_id=r["baseline_id"],
                 baseline_kernel=kernel_of.get(r["baseline_id"]))
            for r in sorted(rows, key=lambda r: r["id"])]


def verdicts(conn, run_id):
    """The nightly's verdicts stored with the run: [row(name, verdict, change, pvalue)]."""
    return _all(conn, "SELECT name, verdict, change, pvalue FROM benchmarks "
                "WHERE run_id = ? ORDER BY name", (run_id,))


def latest_run_of_kernel(conn, host, machine, cpus, config, kernel):
    row = one(conn, "SELECT MAX(id) AS id FROM runs WHERE host = ? AND machine = ? AND "
              "cpus = ? AND config = ? AND kernel_release = ? AND complete = 1",
              (host, machine, cpus, config, kernel))
    return row["id"] if row is not None else None
