"""Opening a history: a new one created, an older one migrated, the rest refused.

Both engines share the schema and its migrations (perfscale.history.schema); the steps a
statement cannot take are here, in Python, so both engines take them the same way: the
run keys of version 2, and version 6's packed samples and machine digests again.
"""

import json

from perfscale.history import runs, schema, sqlite_engine, targets
from perfscale.history.connection import HistoryError, HistoryUnavailable, Store, describe
from perfscale.machine import identity

SCHEMA_VERSION = schema.SCHEMA_VERSION


def open_history(target, read_only=False, check_pages=True, answer_within_s=None,
                 create=True):
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
    lock timeout).
    create=False: for writers that keep what is there and never start a history (alerts,
    an import without --create): a missing or empty history is refused, as for readers.
    No writer ever creates perfscale's tables beside another application's: an SQLite
    file or database with tables but none of a history's is refused, nothing written."""
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
        engine = sqlite_engine.Engine(target, HistoryError, read_only, create)
    store = Store(engine)
    try:
        with store._errors():
            _create_or_migrate(store, read_only, create)
            engine.check_usable(check_pages)
    except BaseException:
        store.close()
        raise
    return store


def _create_or_migrate(store, read_only=False, create=True):
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
        if version == 0 and not tables:
            if not create:
                raise HistoryError("%s: %s with nothing in it, not a perfscale history yet "
                                   "(`tools/perfscale nightly --history` starts one)"
                                   % (store.name, kind))
            for statement in engine.script(schema.CREATE):
                engine.execute(statement)
            engine.set_version(SCHEMA_VERSION)
            return
        if version > SCHEMA_VERSION:
            raise HistoryError("%s: written by a newer perfscale (schema %d, this one knows "
                               "%d): update perfscale to use it" % (
                                   store.name, version, SCHEMA_VERSION))
        if version < 1 or "runs" not in tables:
            raise HistoryError("%s: %s of another application (tables %s), not a perfscale "
                               "history; nothing was written to it" % (
                                   store.name, kind, ", ".join(sorted(tables)[:5])))
        problems = engine.check()
        if problems:  # before a step that would carry the damage into the new schema
            raise HistoryError("%s: damaged (%s); not migrated from schema %d, nothing was "
                               "changed: keep a copy, then try `sqlite3 %s .recover`" % (
                                   store.name, "; ".join(problems), version, store.name))
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
            runs.derived_run_key([row["host"], row["cpus"], row["config"], row["recorded_at"],
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
    after = runs.stored_samples(engine)
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
