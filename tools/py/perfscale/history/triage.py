"""Triage of what the dashboard flags: each regression the nightly found and each change
point has a state (new, acknowledged, invalid, fixed), with who set it, when and why.

Kept in the history beside the runs, in two tables of its schema (history/schema.py,
TRIAGE): `triage`, the current state per item, and `triage_log`, every change ever made
(nothing is overwritten without a trace). SQL that SQLite and PostgreSQL both accept
(ON CONFLICT ... DO UPDATE is in both), qmark (`?`) parameters only, run through the
store's engine (views.rows). An item never triaged is 'new' and has no row.

    triage.set_state(conn, triage.Item("regression", "h", "5b25...", 2, "cfg", "BM_X", 7),
                     "acknowledged", "alice", "known: the 6.9 IPI batching")
"""

import dataclasses
import datetime

from perfscale.history.views import rows, transaction

STATES = ("new", "acknowledged", "invalid", "fixed")
KINDS = ("regression", "changepoint")
OPEN_STATES = ("new", "acknowledged")
MAX_TEXT = 2000  # who and why; a form is no place for a novel


class TriageError(ValueError):
    """A state change that cannot be stored; the message says why."""


@dataclasses.dataclass(frozen=True)
class Item:
    kind: str     # 'regression' or 'changepoint'
    host: str
    machine: str  # the identity digest: with host, cpus and config, the lineage
    cpus: int
    config: str
    name: str     # the benchmark
    run_id: int   # the regressed run, or the first run after the step


def states(conn, host, machine, cpus, config):
    """{Item: row(state, who, changed_at, why)} of one lineage."""
    found = rows(conn, "SELECT * FROM triage WHERE host = ? AND machine = ? AND cpus = ? "
                 "AND config = ?", (host, machine, cpus, config))
    return {Item(r["kind"], r["host"], r["machine"], r["cpus"], r["config"], r["name"],
                 r["run_id"]): r for r in found}


def closed(conn):
    """Every item set invalid or fixed: {Item}."""
    found = rows(conn, "SELECT kind, host, machine, cpus, config, name, run_id FROM triage "
                 "WHERE state NOT IN (?, ?)", OPEN_STATES)
    return {Item(r["kind"], r["host"], r["machine"], r["cpus"], r["config"], r["name"],
                 r["run_id"]) for r in found}


def history_of(conn, item):
    """Every change of `item`, oldest first."""
    return rows(
        conn, "SELECT state, who, changed_at, why FROM triage_log WHERE kind = ? AND host = ? "
        "AND machine = ? AND cpus = ? AND config = ? AND name = ? AND run_id = ? "
        "ORDER BY changed_at",
        dataclasses.astuple(item))


def checked(state, who, why):
    """(who, why) stripped, once `state`, `who` and `why` pass the form's rules: a known
    state, who and why both given, neither a novel. Alerts (history.alerts) share them."""
    if state not in STATES:
        raise TriageError("state must be one of %s" % ", ".join(STATES))
    who, why = (who or "").strip(), (why or "").strip()
    if not who or not why:
        raise TriageError("say who changes the state and why")
    if len(who) > MAX_TEXT or len(why) > MAX_TEXT:
        raise TriageError("who and why are limited to %d characters" % MAX_TEXT)
    _storable("who and why", who, why)
    return who, why


def _storable(what, *texts):
    """TriageError unless each of `texts` is text both engines store: a NUL is refused by
    PostgreSQL's text, bytes that are not UTF-8 (a shell hands them on as lone surrogates)
    by both; refused here as bad input, never a traceback from the driver."""
    for text in texts:
        if "\x00" in text:
            raise TriageError("%s must not contain a NUL character" % what)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise TriageError("%s must be UTF-8 text" % what) from None


def set_state(conn, item, state, who, why):
    """Stores `state` for `item` and logs it, in one transaction."""
    if item.kind not in KINDS:
        raise TriageError("kind must be one of %s" % ", ".join(KINDS))
    _storable("host, machine, config and name", item.host, item.machine, item.config,
              item.name)
    who, why = checked(state, who, why)
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    values = dataclasses.astuple(item) + (state, who, now, why)
    with transaction(conn):
        rows(
            conn, "INSERT INTO triage (kind, host, machine, cpus, config, name, run_id, state, "
            "who, changed_at, why) VALUES (?,?,?,?,?,?,?,?,?,?,?) "
            "ON CONFLICT (kind, host, machine, cpus, config, name, run_id) DO UPDATE SET "
            "state = excluded.state, who = excluded.who, changed_at = excluded.changed_at, "
            "why = excluded.why", values)
        rows(
            conn, "INSERT INTO triage_log (kind, host, machine, cpus, config, name, run_id, "
            "state, who, changed_at, why) VALUES (?,?,?,?,?,?,?,?,?,?,?)", values)
    return now
