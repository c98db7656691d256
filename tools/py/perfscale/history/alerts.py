"""Alerts: one per change, not one per night (schema version 5, history/schema.py ALERTS).

An alert is keyed by the change between a lineage's last good run and its first bad one:
kernel release, kernel config digest, kernel commit (where the run's context names one: a
kernel built from a tree, kernel_tree_commit) and
perfscale revision of both. Every lineage x benchmark that moved at the same change is a
member of the same alert; later nights of the same step attach to their member. Triage is
once per alert (new, acknowledged, invalid, fixed; the rules of the dashboard's triage,
perfscale.history.triage), every change logged in alert_log. What is a step, and when a
member opens, attaches or is found fixed, is perfscale.gate.alerting's; this module only
stores. SQL that SQLite and PostgreSQL both accept, qmark parameters (views.rows).

    alert_id, opened = alerts.open_or_join(conn, "regression", change, member, run_id)
    alerts.set_state(conn, alert_id, "acknowledged", "alice", "the 6.9 IPI batching")
"""

import dataclasses
import datetime
import hashlib
import json
import math

from perfscale.history.triage import TriageError, checked
from perfscale.history.views import one, rows, transaction

KINDS = ("regression", "changepoint")
OPEN_STATES = ("new", "acknowledged")
# A writer's lock on alert keys (PostgreSQL advisory lock): two nightlies of machines that
# moved at the same change never open two alerts for it. SQLite's write lock does the same.
_ALERT_LOCK = 0x70657266616c7274  # 'perfalrt'
# How many of a lineage's runs the baseline query looks at before the alert filters.
_SCAN = 64


@dataclasses.dataclass(frozen=True)
class Change:
    """What changed between the last good run and the first bad one."""
    good_kernel: str = ""
    bad_kernel: str = ""
    good_config: str = ""
    bad_config: str = ""
    good_commit: str = ""
    bad_commit: str = ""
    good_revision: str = ""
    bad_revision: str = ""
    night: str = ""  # the first bad run's UTC day, only when nothing above changed

    def key(self):
        text = json.dumps(dataclasses.astuple(self), separators=(",", ":"))
        return "sha256-" + hashlib.sha256(text.encode()).hexdigest()[:32]

    def describe(self):
        """'kernel 6.1.0-57 -> 6.12.118' and what else changed, or 'no kernel change'."""
        parts = []
        for label, good, bad in (("kernel", self.good_kernel, self.bad_kernel),
                                 ("kernel commit", self.good_commit, self.bad_commit),
                                 ("kernel config", self.good_config[:12], self.bad_config[:12]),
                                 ("perfscale", self.good_revision, self.bad_revision)):
            if good != bad:
                parts.append("%s %s -> %s" % (label, good or "?", bad or "?"))
        return "; ".join(parts) or "no kernel or perfscale change" + (
            " (night %s)" % self.night if self.night else "")


def _of(run):
    context = run.get("context")
    context = json.loads(context) if isinstance(context, str) else (context or {})
    return (str(run.get("kernel_release") or context.get("kernel_release") or ""),
            str(context.get("kernel_config_sha256") or ""),
            # A kernel built from a tree names its commit (perfscale.vm.kernel's context).
            str(context.get("kernel_tree_commit") or context.get("kernel_commit") or ""),
            str(run.get("perfscale_revision") or context.get("perfscale_revision") or ""))


def change_between(good_run, bad_run):
    """The Change from run row `good_run` (None: unknown) to run row `bad_run`. When
    nothing identifying changed, the night is the key: steps of one kernel on different
    nights are different changes (a machine's drift, a neighbour), not one alert."""
    bad = _of(bad_run)
    good = _of(good_run) if good_run is not None else ("", "", "", "")
    change = Change(good[0], bad[0], good[1], bad[1], good[2], bad[2], good[3], bad[3])
    if good == bad:
        change = dataclasses.replace(change, night=str(bad_run.get("recorded_at", ""))[:10])
    return change


@dataclasses.dataclass
class Member:
    """One lineage x benchmark of an alert, as its first bad night showed it."""
    host: str
    machine: str
    cpus: int
    config: str
    name: str
    good_run_id: object  # int or None
    change: float = math.nan
    ci: tuple = (math.nan, math.nan)
    noise_floor: float = math.nan


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _finite(value):
    return value if isinstance(value, (int, float)) and math.isfinite(value) else None


def _lock(conn):
    if conn.engine.name == "postgresql":
        rows(conn, "SELECT pg_advisory_xact_lock(?)", (_ALERT_LOCK,))


def open_or_join(conn, kind, change, member, run_id, who="nightly"):
    """Adds `member` (first bad at run `run_id`) to the new alert of `change`, or opens
    one; returns (alert id, True when opened). One transaction."""
    if kind not in KINDS:
        raise TriageError("kind must be one of %s" % ", ".join(KINDS))
    now = _now()
    with transaction(conn):
        _lock(conn)
        # Only a new alert is joined: an acknowledgment accepted what was known then, not
        # a benchmark or machine that moves at the same change later (a new alert says so).
        found = one(conn, "SELECT id FROM alerts WHERE change_key = ? AND kind = ? AND state "
                    "= 'new' ORDER BY id DESC LIMIT 1", (change.key(), kind))
        opened = found is None
        if opened:
            why = "opened by run %d: %s" % (run_id, change.describe())
            alert_id = rows(
                conn, "INSERT INTO alerts (kind, change_key, good_kernel, bad_kernel, "
                "good_config, bad_config, good_commit, bad_commit, good_revision, bad_revision, "
                "opened_at, opened_run_id, state, who, changed_at, why) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id",
                (kind, change.key()) + dataclasses.astuple(change)[:8]
                + (now, run_id, "new", who, now, why))[0]["id"]
            rows(conn, "INSERT INTO alert_log (alert_id, state, who, changed_at, why) "
                 "VALUES (?,?,?,?,?)", (alert_id, "new", who, now, why))
        else:
            alert_id = found["id"]
        rows(conn, "INSERT INTO alert_members (alert_id, host, machine, cpus, config, name, "
             "good_run_id, first_bad_run_id, last_run_id, nights, change, ci_low, ci_high, "
             "noise_floor) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (alert_id, host, "
             "machine, cpus, config, name) DO NOTHING",
             (alert_id, member.host, member.machine, member.cpus, member.config, member.name,
              member.good_run_id, run_id, run_id, 1, _finite(member.change),
              _finite(member.ci[0]), _finite(member.ci[1]), _finite(member.noise_floor)))
    return alert_id, opened


def attach(conn, alert_id, lineage, name, run_id):
    """Another night of a member's step: counted, not opened."""
    with transaction(conn):
        rows(conn, "UPDATE alert_members SET last_run_id = ?, nights = nights + 1 WHERE "
             "alert_id = ? AND host = ? AND machine = ? AND cpus = ? AND config = ? AND name = ? "
             "AND last_run_id < ?", (run_id, alert_id) + tuple(lineage) + (name, run_id))


_OPEN_MEMBERS = (
    "SELECT m.*, a.state, a.kind FROM alert_members m JOIN alerts a ON a.id = m.alert_id "
    "WHERE m.host = ? AND m.machine = ? AND m.cpus = ? AND m.config = ? "
    "AND m.fixed_run_id IS NULL AND a.state IN (?, ?)")


def open_members(conn, lineage):
    """{benchmark: member row with its alert's state and kind} of the lineage's open
    alerts (new or acknowledged, the member's level not returned); the newest per name."""
    found = {}
    for row in rows(conn, _OPEN_MEMBERS + " ORDER BY m.alert_id", tuple(lineage) + OPEN_STATES):
        found[row["name"]] = row
    return found


def returned_after_acknowledgment(conn, lineage):
    """Member rows of the lineage whose level was found returned while their alert was
    acknowledged (or later): their nights at the accepted level passed, and are no
    baseline of their benchmark's old level."""
    return rows(conn, "SELECT m.* FROM alert_members m WHERE m.host = ? AND m.machine = ? "
                "AND m.cpus = ? AND m.config = ? AND m.fixed_run_id IS NOT NULL AND EXISTS "
                "(SELECT 1 FROM alert_log l WHERE l.alert_id = m.alert_id AND l.state = ?)",
                tuple(lineage) + ("acknowledged",))


def members_of_lineage(conn, lineage, name):
    """Every member row (any state) of one benchmark of one lineage."""
    return rows(conn, "SELECT * FROM alert_members WHERE host = ? AND machine = ? AND cpus = ? "
                "AND config = ? AND name = ?", tuple(lineage) + (name,))


def member_fixed(conn, alert_id, lineage, name, run_id):
    """The member's level returned at run `run_id`; once every member's has, the alert is
    found fixed (logged, naming the run). Returns True when the alert is now fixed."""
    with transaction(conn):
        rows(conn, "UPDATE alert_members SET fixed_run_id = ? WHERE alert_id = ? AND host = ? "
             "AND machine = ? AND cpus = ? AND config = ? AND name = ? AND fixed_run_id IS NULL",
             (run_id, alert_id) + tuple(lineage) + (name,))
        left = one(conn, "SELECT COUNT(*) AS n FROM alert_members WHERE alert_id = ? AND "
                   "fixed_run_id IS NULL", (alert_id,))["n"]
        if left:
            return False
        _set(conn, alert_id, "fixed", "nightly",
             "found fixed: the level returned at run %d (%s on %s)"
             % (run_id, name, lineage[0]), fixed_run_id=run_id)
    return True


def _set(conn, alert_id, state, who, why, fixed_run_id=None):
    now = _now()
    rows(conn, "UPDATE alerts SET state = ?, who = ?, changed_at = ?, why = ?, "
         "fixed_run_id = ? WHERE id = ?", (state, who, now, why, fixed_run_id, alert_id))
    rows(conn, "INSERT INTO alert_log (alert_id, state, who, changed_at, why) "
         "VALUES (?,?,?,?,?)", (alert_id, state, who, now, why))
    return now


def set_state(conn, alert_id, state, who, why):
    """Triage by hand: the dashboard's rules (who and why required, bounded). Raises
    TriageError for bad input or an alert that does not exist."""
    who, why = checked(state, who, why)
    # Both engines store a signed 64-bit id: a larger number is no alert, not an overflow.
    if not 0 < alert_id < 1 << 63:
        raise TriageError("no alert #%s" % alert_id)
    with transaction(conn):
        if one(conn, "SELECT id FROM alerts WHERE id = ?", (alert_id,)) is None:
            raise TriageError("no alert #%s" % alert_id)
        return _set(conn, alert_id, state, who, why)


def get(conn, alert_id):
    return one(conn, "SELECT * FROM alerts WHERE id = ?", (alert_id,))


def members(conn, alert_id):
    return rows(conn, "SELECT * FROM alert_members WHERE alert_id = ? ORDER BY name, host, "
                "machine, cpus, config", (alert_id,))


def log(conn, alert_id):
    return rows(conn, "SELECT state, who, changed_at, why FROM alert_log WHERE alert_id = ? "
                "ORDER BY id", (alert_id,))


def listing(conn, states=None):
    """Every alert (newest first) with its member, machine and benchmark counts."""
    where, params = "", ()
    if states:
        where = "WHERE a.state IN (%s)" % ",".join("?" * len(states))
        params = tuple(states)
    return rows(
        conn, "SELECT a.*, COUNT(m.name) AS members, COUNT(DISTINCT m.name) AS benchmarks, "
        "COUNT(DISTINCT m.host || '/' || m.machine || '/' || m.cpus || '/' || m.config) "
        "AS lineages, MAX(m.nights) AS nights, MAX(m.last_run_id) AS last_run_id "
        "FROM alerts a LEFT JOIN alert_members m ON m.alert_id = a.id " + where +
        " GROUP BY a.id ORDER BY a.id DESC", params)


def _ranges(conn, lineage, state):
    return [(m["first_bad_run_id"], m["last_run_id"]) for m in rows(
        conn, "SELECT m.first_bad_run_id, m.last_run_id FROM alert_members m JOIN alerts a ON "
        "a.id = m.alert_id WHERE m.host = ? AND m.machine = ? AND m.cpus = ? AND m.config = ? "
        "AND a.state = ?", tuple(lineage) + (state,))]


def baseline_rows(conn, lineage, limit, since=None):
    """The lineage's latest `limit` runs that may be baselines, newest first: complete
    runs that passed (since=None), or, for the benchmarks of an acknowledged alert, every
    complete run from its first bad run `since` on (the accepted level; the nights of the
    step itself failed on those benchmarks alone). An invalid alert's runs are never a
    baseline."""
    dropped = _ranges(conn, lineage, "invalid")
    found = []
    for run in rows(conn, "SELECT * FROM runs WHERE host = ? AND machine = ? AND cpus = ? AND "
                    "config = ? AND complete = 1 AND id >= ?%s ORDER BY id DESC LIMIT ?" % (
                        " AND regressions = 0" if since is None else ""),
                    tuple(lineage) + (since or 0, _SCAN)):
        if not any(first <= run["id"] <= last for first, last in dropped):
            found.append(run)
            if len(found) == limit:
                break
    return found


def covered(conn, lineage):
    """{(benchmark, run id)} of the lineage's nights that belong to an alert: the fleet
    page shows the alert, not those nights."""
    found = set()
    for m in rows(conn, "SELECT name, first_bad_run_id, last_run_id FROM alert_members WHERE "
                  "host = ? AND machine = ? AND cpus = ? AND config = ?", tuple(lineage)):
        for run in rows(conn, "SELECT id FROM runs WHERE host = ? AND machine = ? AND cpus = ? "
                        "AND config = ? AND id BETWEEN ? AND ?", tuple(lineage) + (
                            m["first_bad_run_id"], m["last_run_id"])):
            found.add((m["name"], run["id"]))
    return found


def counters_of(conn, run_id, name):
    """{counter: median} the run stored for one benchmark ({} when none)."""
    row = one(conn, "SELECT counters FROM benchmarks WHERE run_id = ? AND name = ?",
              (run_id, name))
    return json.loads(row["counters"]) if row else {}
