"""A benchmark over time: the figures `plot --history` draws, one lineage's series (the
gate's alerts), and the latest run of every machine."""

import json

from perfscale.history.runs import unpacked


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
            "real_ns": unpacked(conn, row, "real_ns"),
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
    return [(row["id"], row["recorded_at"], unpacked(conn, row, "real_ns")) for row in rows]


def latest_runs(conn):
    """The latest run of every machine (host and identity): [run row], by host."""
    with conn._errors():
        return conn.engine.execute(
            "SELECT r.id, r.host, r.machine, r.cpus, r.config, r.recorded_at, r.regressions "
            "FROM runs r JOIN (SELECT host, machine, MAX(id) AS id FROM runs "
            "GROUP BY host, machine) latest ON latest.id = r.id ORDER BY r.host, r.machine")
