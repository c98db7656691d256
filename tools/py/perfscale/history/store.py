"""The nightly history's one interface: what the commands, the runner and the web app
call, whichever engine holds the history.

    conn = store.open_history("results/history.sqlite")        # SQLite: one machine
    conn = store.open_history("postgresql://writer@lab/perf")  # PostgreSQL: a fleet
    conn = store.open_history("service=perfscale")             # libpq's service file
    base = store.find_baseline(conn, "host", 2, "--quick", machine=digest)

The functions live in modules split by concern, each importing only those above it:

    connection    Store (a history open on one engine, sqlite_engine or postgres_engine)
                  and the errors every function raises
    runs          a run's key, recording it in one transaction, reading it back, the
                  lineages and their baselines, copying runs between histories
    calibrations  what `calibrate` learned per lineage
    changes       the history's change stamp, new at every committed write
    series        a benchmark over time: trends, one lineage's series, the latest runs
    migrations    opening a history: created, migrated (schema.py) or refused

and are named here, so a caller needs this module alone. The dashboard's read queries
(views), the triage of regressions (triage) and alerts (alerts) are concerns of their own
on the same connection; perfscale.history.transfer copies whole histories with this
interface.
"""

from perfscale.history.changes import change_stamp
from perfscale.history.calibrations import (Calibration, all_calibrations,
                                            calibrated_configs, calibrated_lineages,
                                            load_calibration, store_calibration)
from perfscale.history.connection import (HistoryError, HistoryUnavailable, Store, describe,
                                          is_server, is_sqlite_file, redact)
from perfscale.history.migrations import SCHEMA_VERSION, open_history
from perfscale.history.runs import (BENCHMARK_COLUMNS, RunInfo, all_runs, as_results_document,
                                    check_attribution, copy_run, counts, derived_run_key,
                                    find_baseline, find_baselines, get_run, has_run,
                                    latest_of_other_machine, load_entries, mark_complete,
                                    new_run_key, passing_run_ids, record_run, run_content,
                                    run_id_of, run_rows, size_bytes, utc_now)
from perfscale.history.series import latest_runs, series, trends

__all__ = [
    "BENCHMARK_COLUMNS", "Calibration", "HistoryError", "HistoryUnavailable", "RunInfo",
    "SCHEMA_VERSION", "Store", "all_calibrations", "all_runs", "as_results_document",
    "calibrated_configs", "calibrated_lineages", "change_stamp", "check_attribution",
    "copy_run", "counts", "derived_run_key", "describe", "find_baseline", "find_baselines",
    "get_run", "has_run", "is_server", "is_sqlite_file", "latest_of_other_machine",
    "latest_runs",
    "load_calibration", "load_entries", "mark_complete", "new_run_key", "open_history",
    "passing_run_ids", "record_run", "redact", "run_content", "run_id_of", "run_rows",
    "series", "size_bytes", "store_calibration", "trends", "utc_now"]
