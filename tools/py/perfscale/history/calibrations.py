"""What `tools/perfscale calibrate` learned per lineage: each benchmark's and metric's
noise floor and minimum detectable change, replaced whole by each calibration."""

import dataclasses

from perfscale.history.runs import LINEAGE, finite, utc_now


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
        conn.engine.execute("DELETE FROM calibration WHERE " + LINEAGE,
                            (host, machine, cpus, config))
        conn.engine.executemany(
            "INSERT INTO calibration (host, machine, cpus, config, name, metric, noise_floor, "
            "mdc, sigma, runs, injected_change, calibrated_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            [(host, machine, cpus, config, c.name, c.metric, c.noise_floor, c.mdc, c.sigma,
              c.runs, finite(c.injected_change), c.calibrated_at or now)
             for c in calibrations])


def load_calibration(conn, host, cpus, config, machine="", name=None):
    """{(name, metric): Calibration} of the lineage; empty if never calibrated. name: only
    that benchmark's (the dashboard's trend page wants one of a fleet's 200)."""
    where, params = LINEAGE, (host, machine, cpus, config)
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
