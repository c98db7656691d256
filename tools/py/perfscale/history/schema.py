"""The history's schema, written once for both engines, and its migrations.

A version is a list of statements in a neutral dialect; each engine (perfscale.history
.sqlite_engine, .postgres_engine) maps the few type names that differ (`{id}`, `{real}`,
`{text}`). A history older than SCHEMA_VERSION is migrated in one transaction; a newer one
is refused, naming both versions.

Lineage: (host, machine, cpus, config). `machine` is the digest of the machine's identity
(perfscale.machine.identity): the same hostname on other hardware, microcode or governor
is another lineage. The kernel under test is not in it, nor what it reports (mitigations).
"""

import datetime
import uuid

SCHEMA_VERSION = 7

RUNS = """
CREATE TABLE runs (
    id {id},
    run_key TEXT NOT NULL UNIQUE,       -- stable: the same run uploaded twice is stored once
    recorded_at TEXT NOT NULL,          -- UTC, ISO 8601
    host TEXT NOT NULL,
    machine TEXT NOT NULL DEFAULT '',   -- identity digest; '' when the run recorded none
    cpus INTEGER NOT NULL,              -- online CPUs
    config TEXT NOT NULL,               -- what makes two runs comparable besides the machine
    run_args TEXT NOT NULL,             -- JSON list passed to `tools/perfscale run`
    repetitions INTEGER NOT NULL,
    kernel_release TEXT,
    perf_event_paranoid TEXT,
    perfscale_revision TEXT,
    context TEXT NOT NULL,              -- Google Benchmark's whole context, JSON
    results_path TEXT,
    baseline_id BIGINT REFERENCES runs(id),
    regressions INTEGER NOT NULL,       -- benchmarks judged slower than the baseline
    complete INTEGER NOT NULL DEFAULT 0 -- 1 once its report is written: only then a baseline
);
CREATE INDEX runs_by_lineage ON runs(host, machine, cpus, config, id);
CREATE INDEX runs_by_host ON runs(host, id);
CREATE TABLE benchmarks (
    run_id BIGINT NOT NULL REFERENCES runs(id),
    position INTEGER NOT NULL,          -- order in the results file
    name TEXT NOT NULL,
    time_unit TEXT NOT NULL,            -- as the benchmark reported it
    counters TEXT NOT NULL,             -- JSON: counter -> median over repetitions
    errors TEXT NOT NULL,               -- JSON list of error messages
    verdict TEXT,                       -- against the baseline; NULL without one
    change {real},
    pvalue {real},
    real_ns {blob},                     -- the repetitions' times, packed (history.packed)
    cpu_ns {blob},                      -- ... their CPU times; NULL: none measured
    PRIMARY KEY (run_id, name)
);
"""

CALIBRATION = """
CREATE TABLE calibration (
    host TEXT NOT NULL,
    machine TEXT NOT NULL DEFAULT '',
    cpus INTEGER NOT NULL,
    config TEXT NOT NULL,
    name TEXT NOT NULL,
    metric TEXT NOT NULL,               -- 'real_time' or an attributed counter's name
    noise_floor {real} NOT NULL,        -- a change below this is A/A noise (fraction)
    mdc {real} NOT NULL,                -- minimum detectable change at the nightly default
    sigma {real} NOT NULL,              -- spread of log(median) between runs
    runs INTEGER NOT NULL,              -- runs it was learned from
    injected_change {real},             -- change the injector caused (fraction), if measured
    calibrated_at TEXT NOT NULL,
    PRIMARY KEY (host, machine, cpus, config, name, metric)
);
"""

# Version 4: the dashboard's triage (perfscale.history.triage) of what it flags: each
# regression the nightly found and each change point has a state, with who set it, when
# and why; triage_log keeps every change (nothing is overwritten without a trace).
TRIAGE = """
CREATE TABLE triage (
    kind TEXT NOT NULL,                 -- 'regression' or 'changepoint'
    host TEXT NOT NULL,
    machine TEXT NOT NULL DEFAULT '',
    cpus INTEGER NOT NULL,
    config TEXT NOT NULL,
    name TEXT NOT NULL,                 -- the benchmark
    run_id BIGINT NOT NULL,             -- the regressed run, or the first after the step
    state TEXT NOT NULL,                -- new, acknowledged, invalid, fixed
    who TEXT NOT NULL,
    changed_at TEXT NOT NULL,           -- UTC, ISO 8601
    why TEXT NOT NULL,
    PRIMARY KEY (kind, host, machine, cpus, config, name, run_id)
);
CREATE TABLE triage_log (
    kind TEXT NOT NULL,
    host TEXT NOT NULL,
    machine TEXT NOT NULL DEFAULT '',
    cpus INTEGER NOT NULL,
    config TEXT NOT NULL,
    name TEXT NOT NULL,
    run_id BIGINT NOT NULL,
    state TEXT NOT NULL,
    who TEXT NOT NULL,
    changed_at TEXT NOT NULL,
    why TEXT NOT NULL
);
"""

# Version 5: alerts (perfscale.history.alerts, perfscale.gate.alerting). An alert is a
# change, not a night: it is keyed by what changed between the last good run and the first
# bad one (kernel release, kernel config digest, kernel commit where the context has one,
# perfscale revision), and every lineage x benchmark that moved at that change is one of
# its members. Later nights of the same step attach to the member (last_run_id, nights);
# triage is once per alert, every change logged in alert_log.
ALERTS = """
CREATE TABLE alerts (
    id {id},
    kind TEXT NOT NULL,                 -- 'regression', or 'changepoint' (nightlies passed)
    change_key TEXT NOT NULL,           -- digest of the change below: members join by it
    good_kernel TEXT NOT NULL,          -- kernel release of the last good run ('' unknown)
    bad_kernel TEXT NOT NULL,           -- ... and of the first bad run
    good_config TEXT NOT NULL,          -- kernel config digest (kernel_config_sha256)
    bad_config TEXT NOT NULL,
    good_commit TEXT NOT NULL,          -- kernel commit, where the run's context names it
    bad_commit TEXT NOT NULL,
    good_revision TEXT NOT NULL,        -- perfscale revision
    bad_revision TEXT NOT NULL,
    opened_at TEXT NOT NULL,            -- UTC, ISO 8601
    opened_run_id BIGINT NOT NULL,      -- the run that opened it
    state TEXT NOT NULL,                -- new, acknowledged, invalid, fixed
    who TEXT NOT NULL,
    changed_at TEXT NOT NULL,
    why TEXT NOT NULL,
    fixed_run_id BIGINT                 -- the run where the level was found returned
);
CREATE INDEX alerts_by_key ON alerts(change_key, id);
CREATE TABLE alert_members (
    alert_id BIGINT NOT NULL REFERENCES alerts(id),
    host TEXT NOT NULL,
    machine TEXT NOT NULL DEFAULT '',
    cpus INTEGER NOT NULL,
    config TEXT NOT NULL,
    name TEXT NOT NULL,                 -- the benchmark
    good_run_id BIGINT,                 -- the last good run (newest baseline run)
    first_bad_run_id BIGINT NOT NULL,
    last_run_id BIGINT NOT NULL,        -- the latest night of the step
    nights INTEGER NOT NULL,            -- nights of the step seen (attached, not opened)
    change {real},                      -- (new - old) / old of the first bad night
    ci_low {real},                      -- its interval, as changes
    ci_high {real},
    noise_floor {real},                 -- calibrated floor of the lineage (NaN: none)
    fixed_run_id BIGINT,                -- the run where this member's level returned
    PRIMARY KEY (alert_id, host, machine, cpus, config, name)
);
CREATE INDEX alert_members_by_lineage ON alert_members(host, machine, cpus, config, name);
CREATE TABLE alert_log (
    id {id},                            -- the order of the changes (one second holds many)
    alert_id BIGINT NOT NULL,
    state TEXT NOT NULL,
    who TEXT NOT NULL,
    changed_at TEXT NOT NULL,
    why TEXT NOT NULL
);
"""

# Version 7: the history's change stamp (perfscale.history.changes). Every committed write
# (a run, its completion, a calibration, a triage, an alert) sets a new random stamp in the
# same transaction (each engine's transaction(), CHANGE): whatever is computed from the
# history (the dashboard's pages, the floors it learns) is kept under the stamp it was read
# at and is never shown again once the stamp has moved. Random, not a count alone, so that
# a history rebuilt or restored from a copy never meets a stamp it had before.
CHANGES = """
CREATE TABLE perfscale_changes (
    stamp TEXT NOT NULL,                -- new at every committed write
    changes BIGINT NOT NULL,            -- writes committed since the table was made
    changed_at TEXT NOT NULL            -- UTC, ISO 8601, of the last one
);
INSERT INTO perfscale_changes (stamp, changes, changed_at) VALUES ('', 0, '');
"""
# Run last in each write transaction, so that a PostgreSQL writer holds the row's lock
# only while it commits (writers otherwise never wait on each other).
CHANGE = "UPDATE perfscale_changes SET stamp = ?, changes = changes + 1, changed_at = ?"


def new_change():
    """(CHANGE, its parameters: a new random stamp and the time) for one write."""
    return CHANGE, (uuid.uuid4().hex, datetime.datetime.now(
        datetime.timezone.utc).isoformat(timespec="seconds"))


CREATE = RUNS + CALIBRATION + TRIAGE + ALERTS + CHANGES

# Version 2's calibration, keyed by hostname alone.
CALIBRATION_V2 = """
CREATE TABLE calibration (
    host TEXT NOT NULL, cpus INTEGER NOT NULL, config TEXT NOT NULL, name TEXT NOT NULL,
    metric TEXT NOT NULL, noise_floor REAL NOT NULL, mdc REAL NOT NULL, sigma REAL NOT NULL,
    runs INTEGER NOT NULL, injected_change REAL, calibrated_at TEXT NOT NULL,
    PRIMARY KEY (host, cpus, config, name, metric)
);
"""

# Version 6: a benchmark's samples packed into its row (history.packed) instead of a row per
# repetition (about 270 bytes per sample in PostgreSQL); and machine digests without the
# mitigations (machine.identity.KERNEL_REPORTED). The store packs version 5's samples
# (each engine's `packed` aggregate), drops the table (AFTER_PACKING) and digests every run
# again, renaming the lineages it keeps elsewhere (calibration, triage, alert members).
# The same step drops benchmarks_by_name (name, run_id): every query that reads benchmarks
# joins them from runs, on run id and name, which the primary key serves as well, and the
# index cost a fifth of a packed history (521 MB of the 50-machine year in PostgreSQL).
PACKED_SAMPLES = """
ALTER TABLE benchmarks ADD COLUMN real_ns {blob};
ALTER TABLE benchmarks ADD COLUMN cpu_ns {blob};
DROP INDEX benchmarks_by_name;
"""
AFTER_PACKING = "DROP TABLE samples"

# Migrations of SQLite files written by earlier perfscale versions: {from version:
# statements to the next}. PostgreSQL histories start at version 3; a later version adds
# its step here, for both engines (version 3's step to 4: the triage tables; 4 to 5: the
# alerts; 5 to 6: packed samples; 6 to 7: the change stamp). After the step from 2, the
# store fills the run keys (store.run_key: Python, so both engines compute the same key).
MIGRATIONS = {
    1: "ALTER TABLE runs ADD COLUMN complete INTEGER NOT NULL DEFAULT 1;"  # v1 runs were whole
       + CALIBRATION_V2,
    2: """
ALTER TABLE runs ADD COLUMN run_key TEXT;
ALTER TABLE runs ADD COLUMN machine TEXT NOT NULL DEFAULT '';
ALTER TABLE benchmarks ADD COLUMN position INTEGER NOT NULL DEFAULT 0;
UPDATE benchmarks SET position = rowid;
ALTER TABLE calibration RENAME TO calibration_v2;
""" + CALIBRATION + """;
INSERT INTO calibration (host, machine, cpus, config, name, metric, noise_floor, mdc, sigma,
    runs, injected_change, calibrated_at)
    SELECT host, '', cpus, config, name, metric, noise_floor, mdc, sigma, runs,
    injected_change, calibrated_at FROM calibration_v2;
DROP TABLE calibration_v2;
DROP INDEX runs_by_lineage;
CREATE INDEX runs_by_lineage ON runs(host, machine, cpus, config, id);
CREATE INDEX runs_by_host ON runs(host, id);
CREATE INDEX benchmarks_by_name ON benchmarks(name, run_id);
""",
    3: TRIAGE,
    4: ALERTS,
    5: PACKED_SAMPLES,
    6: CHANGES,
}
# After the version-2 step, the run keys are filled (store) and made unique here.
AFTER_RUN_KEYS = "CREATE UNIQUE INDEX runs_by_key ON runs(run_key)"

# Privileges of the two PostgreSQL roles `tools/perfscale db start` creates (a lab with
# its own server grants the same): a writer adds runs and calibrations and reads
# baselines; a reader only reads.
WRITER_GRANTS = """
GRANT SELECT, INSERT ON runs, benchmarks, perfscale_schema TO {writer};
GRANT UPDATE (complete) ON runs TO {writer};
GRANT SELECT, INSERT, DELETE ON calibration TO {writer};
GRANT USAGE ON SEQUENCE runs_id_seq TO {writer};
GRANT SELECT, INSERT, UPDATE ON triage TO {writer};
GRANT SELECT, INSERT ON triage_log TO {writer};
GRANT SELECT, INSERT, UPDATE ON alerts, alert_members TO {writer};
GRANT SELECT, INSERT ON alert_log TO {writer};
GRANT USAGE ON SEQUENCE alerts_id_seq, alert_log_id_seq TO {writer};
GRANT SELECT, UPDATE ON perfscale_changes TO {writer};
"""
READER_GRANTS = """
GRANT SELECT ON runs, benchmarks, calibration, perfscale_schema, triage,
    triage_log, alerts, alert_members, alert_log, perfscale_changes TO {reader};
"""


def statements(script):
    """The statements of `script`, comments dropped."""
    code = "\n".join(line.split("--")[0] for line in script.splitlines())
    return [s.strip() for s in code.split(";") if s.strip()]
