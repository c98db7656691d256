"""Runs kept on this machine while the history's server cannot be reached.

The nightly spools a run it could not store: its results file and what describes it
(RunInfo, with its run key), one folder per run, written whole (made under a temporary
name, then renamed). `tools/perfscale history sync` stores each in the history, unjudged
and never a baseline (nobody compared it), and removes it only once stored; a run synced
twice is stored once (its key).
"""

import json
import os
import shutil
import tempfile

from perfscale.history import store
from perfscale.results import io

_INFO = "run.json"
_RESULTS = "results.json"


def default_dir(repo_root):
    return os.path.join(repo_root, "results", "spool")


def save(spool_dir, info, results_path):
    """Keeps the run; returns its folder."""
    os.makedirs(spool_dir, exist_ok=True)
    final = os.path.join(spool_dir, info.run_key)
    if os.path.isdir(final):
        return final
    work = tempfile.mkdtemp(prefix=".incoming-", dir=spool_dir)
    try:
        shutil.copyfile(results_path, os.path.join(work, _RESULTS))
        fields = {"host": info.host, "cpus": info.cpus, "config": info.config,
                  "run_args": info.run_args, "repetitions": info.repetitions,
                  "results_path": info.results_path, "run_key": info.run_key,
                  "recorded_at": info.recorded_at or store.utc_now()}
        with open(os.path.join(work, _INFO), "w", encoding="utf-8") as f:
            json.dump(fields, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.rename(work, final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return final


def pending(spool_dir):
    """The spooled runs' folders, oldest first."""
    if not os.path.isdir(spool_dir):
        return []
    found = [os.path.join(spool_dir, n) for n in os.listdir(spool_dir)
             if not n.startswith(".") and os.path.isfile(os.path.join(spool_dir, n, _INFO))]
    return sorted(found, key=os.path.getmtime)


def load(folder):
    """(RunInfo, ResultSet) of a spooled run; raises io.ResultsError, OSError."""
    with open(os.path.join(folder, _INFO), encoding="utf-8") as f:
        fields = json.load(f)
    results = io.load_results(os.path.join(folder, _RESULTS))
    info = store.RunInfo(fields["host"], fields["cpus"], fields["config"], fields["run_args"],
                         fields["repetitions"], results.context, fields.get("results_path", ""),
                         fields["run_key"], fields.get("recorded_at", ""))
    return info, results


def sync(spool_dir, conn, say=print):
    """Stores every spooled run in `conn`; returns (stored, already there). Stops at the
    first failure (HistoryUnavailable and the like propagate): what is left stays."""
    stored = again = 0
    for folder in pending(spool_dir):
        info, results = load(folder)
        fresh = not store.has_run(conn, info.run_key)
        run_id = store.record_run(conn, info, results, [], None)
        shutil.rmtree(folder)
        stored += fresh
        again += not fresh
        say("history sync: %s run %s (%s) as run %d" % (
            "stored" if fresh else "already had", info.run_key, info.lineage(), run_id))
    return stored, again
