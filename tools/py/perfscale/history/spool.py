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
import sys
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
    found = []
    for name in os.listdir(spool_dir):
        folder = os.path.join(spool_dir, name)
        if name.startswith(".") or not os.path.isfile(os.path.join(folder, _INFO)):
            continue
        try:
            found.append((os.path.getmtime(folder), folder))
        except FileNotFoundError:
            continue  # a sync beside this one claimed it between the listing and here
    return [folder for _, folder in sorted(found)]


class UnusableRun(Exception):
    """A spooled run that cannot be read; the text names the file and what is wrong."""


# RunInfo's fields as run.json holds them, with the type each must have.
_FIELDS = {"host": str, "cpus": int, "config": str, "run_args": list, "repetitions": int,
           "run_key": str}


def load(folder):
    """(RunInfo, ResultSet) of a spooled run; raises UnusableRun (naming the file) for one
    that is cut short, lacks a field or holds the wrong type, OSError."""
    path = os.path.join(folder, _INFO)
    try:
        with open(path, encoding="utf-8") as f:
            fields = json.load(f)
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        raise UnusableRun("%s: not a whole JSON object (%s)" % (path, err)) from None
    if not isinstance(fields, dict):
        raise UnusableRun("%s: not a JSON object" % path)
    for name, kind in _FIELDS.items():
        if name not in fields:
            raise UnusableRun("%s: lacks %s" % (path, name))
        if not isinstance(fields[name], kind) or isinstance(fields[name], bool):
            raise UnusableRun("%s: %s is %s, not %s" % (path, name, type(fields[name]).__name__,
                                                        kind.__name__))
    for name in ("results_path", "recorded_at"):
        if not isinstance(fields.get(name, ""), str):
            raise UnusableRun("%s: %s is not a string" % (path, name))
    try:
        results = io.load_results(os.path.join(folder, _RESULTS))
    except io.ResultsError as err:
        raise UnusableRun(str(err)) from None
    info = store.RunInfo(fields["host"], fields["cpus"], fields["config"], fields["run_args"],
                         fields["repetitions"], results.context, fields.get("results_path", ""),
                         fields["run_key"], fields.get("recorded_at", ""))
    return info, results


_CLAIMED = ".claimed-"
_UNUSABLE = ".unusable-"


def _release_abandoned_claims(spool_dir):
    """Puts back runs a sync claimed but never finished (it was killed): its pid is gone."""
    for name in os.listdir(spool_dir):
        if not name.startswith(_CLAIMED):
            continue
        pid, _, run = name[len(_CLAIMED):].partition("-")
        if not pid.isdigit() or not run or os.path.exists("/proc/%s" % pid):
            continue
        try:
            os.rename(os.path.join(spool_dir, name), os.path.join(spool_dir, run))
        except OSError:
            pass  # another sync put it back first


def _set_aside(spool_dir, claimed, run):
    """Keeps an unusable run where no sync takes it again, never deleted; returns its name."""
    for n in range(1000):
        name = _UNUSABLE + run + ("-%d" % n if n else "")
        try:
            os.rename(claimed, os.path.join(spool_dir, name))
            return name
        except OSError:
            continue
    return os.path.basename(claimed)


def sync(spool_dir, conn, say=print, warn=lambda text: print(text, file=sys.stderr)):
    """Stores every spooled run in `conn`; returns (stored, already there, unusable).

    Each run is claimed by renaming its folder first, so two syncs of one spool store each
    run once and a run the other took is no error of either. A run that cannot be read is
    named and set aside as .unusable-NAME (kept, never deleted), and the others go on. A
    failure of the history (HistoryUnavailable and the like) puts the run back and
    propagates: what is left stays spooled."""
    stored = again = unusable = 0
    if os.path.isdir(spool_dir):
        _release_abandoned_claims(spool_dir)
    for folder in pending(spool_dir):
        run = os.path.basename(folder)
        claimed = os.path.join(spool_dir, "%s%d-%s" % (_CLAIMED, os.getpid(), run))
        try:
            os.rename(folder, claimed)
        except FileNotFoundError:
            continue  # another sync took it
        try:
            info, results = load(claimed)
        except (UnusableRun, OSError) as err:
            name = _set_aside(spool_dir, claimed, run)
            unusable += 1
            warn("history sync: %s; set aside as %s" % (
                str(err).replace(claimed, folder), os.path.join(spool_dir, name)))
            continue
        try:
            fresh = not store.has_run(conn, info.run_key)
            run_id = store.record_run(conn, info, results, [], None)
        except BaseException:
            os.rename(claimed, folder)
            raise
        shutil.rmtree(claimed)
        stored += fresh
        again += not fresh
        say("history sync: %s run %s (%s) as run %d" % (
            "stored" if fresh else "already had", info.run_key, info.lineage(), run_id))
    return stored, again, unusable
