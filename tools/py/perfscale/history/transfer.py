"""Copying runs between histories: `history import` (a machine's SQLite history and loose
result files into the lab's database) and trials' private copy of a server history.

Idempotent: each run keeps its key (perfscale.history.store.run_key), so a run already in
the destination is skipped, and its baseline link is mapped to the destination's ids.
Calibrations are copied per lineage, replacing the destination's (a calibration is one
learning, whole).
"""

import hashlib
import os

from perfscale.history import store
from perfscale.results import io


def copy_history(source, dest, bulk=False, progress=None):
    """Copies every run and calibration of `source` into `dest` (open stores).
    Returns (runs added, runs already there, calibrations copied)."""
    added = skipped = 0
    ids = {}  # source id -> dest id
    for run in store.all_runs(source):
        benchmarks = store.run_content(source, run["id"])
        baseline = ids.get(run["baseline_id"]) if run["baseline_id"] is not None else None
        new_id, fresh = store.copy_run(dest, run, benchmarks, baseline, bulk=bulk)
        ids[run["id"]] = new_id
        added += fresh
        skipped += not fresh
        if progress:
            progress(added + skipped)
    lineages = store.all_calibrations(source)
    for (host, cpus, config, machine), calibrations in lineages.items():
        store.store_calibration(dest, host, cpus, config, calibrations, machine)
    return added, skipped, len(lineages)


def import_results_file(dest, path, config=""):
    """A loose result file as a run of its lineage (no verdict, never a baseline: nobody
    judged it). Its key is the file's content and the config, so importing it twice
    stores it once. Returns (id, added)."""
    with open(path, "rb") as f:
        raw = f.read()
    results = io.parse_results(raw.decode("utf-8", "replace"), source=path)
    info = store.RunInfo.from_results(results, config, [], _repetitions(results))
    info.run_key = file_run_key(raw, results, config)
    info.recorded_at = _file_time(results, path)
    existing = store.run_id_of(dest, info.run_key)
    if existing is not None:
        return existing, False
    return store.record_run(dest, info, results, [], None), True


def file_run_key(raw, results, config=""):
    """The run key of result file bytes `raw` (parsed: `results`) imported under `config`:
    its content, so the same file is the same run wherever it is keyed (history import,
    the KCIDB report of the file)."""
    return store.derived_run_key(["file", config, io.dumps(results.context), _digest(raw)])


def _digest(raw):
    return hashlib.sha256(raw).hexdigest()


def _repetitions(results):
    return max((len(e.real_ns) for e in results.entries.values()), default=0)


def _file_time(results, path):
    date = results.context.get("date")
    return str(date) if date else str(os.path.getmtime(path))


def snapshot_to_sqlite(target, path):
    """A private SQLite copy of the history at `target` (trials' copy of a server)."""
    if os.path.exists(path):
        os.remove(path)
    with store.open_history(target, read_only=True) as source, \
            store.open_history(path) as dest:
        with source.snapshot():
            copy_history(source, dest)
    return path
