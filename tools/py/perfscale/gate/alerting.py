"""What a night's verdicts do to the alerts (perfscale.history.alerts stores them).

- A benchmark that regresses with no open alert for it in its lineage opens the alert of
  the change between the last good run and this one, or joins it when another benchmark or
  machine moved at the same change: one alert per change, not per night or per machine.
- A later night of the same step (the member's alert still new) attaches to it.
- Acknowledged: the new level is accepted; the baseline of the alert's benchmarks restarts
  at the first bad run (accepted_base), so they are judged against the new level and
  pass "within alert #N (acknowledged)"; a regression against the new level is a new
  step. Only those benchmarks: another that moved on the same machine at another time is
  still judged against the old level.
- Found fixed: a new alert's benchmark judged no slower than the old level again, or an
  acknowledged one judged faster than the new level by at least half the step back: the
  level returned, at this run. The alert is fixed once every member's level has.
- A change point in a lineage whose nightlies each passed (perfscale.gate.changepoints)
  opens an alert of kind 'changepoint' (scan; `tools/perfscale alerts scan`), unless an
  alert of that benchmark and lineage starts within NEAR_RUNS runs of it.
"""

import math
import statistics

from perfscale.gate import changepoints, stats
from perfscale.history import alerts, store, views

# An acknowledged step is found reverted when tonight is faster than the accepted level
# by at least this share of the way back to the old level: noise around the new level
# (a faster verdict of a few percent) is not a fix.
RETURN_SHARE = 0.5


def _returned(member, verdict):
    """True when `verdict` (against the baseline the member's state sets) says the
    member's level is back."""
    if member["state"] == "new":  # judged against the old level: no longer slower
        return verdict.verdict in (stats.SAME, stats.FASTER)
    step = member["change"]
    if step is None or not math.isfinite(verdict.change):
        return False
    # Faster, significantly: the gate's FASTER, or its p below alpha. The gate's verdict
    # alone missed a real return: with the syscall injector switched off again, the
    # night measured -40% at p 4e-6 against the accepted level and was called "no
    # significant change" (docs/measurements/2026-12-03-alerts.md).
    significant = verdict.verdict == stats.FASTER or (
        math.isfinite(verdict.pvalue) and verdict.pvalue < stats.DEFAULT_ALPHA)
    back = -step / (1 + step)  # the change from the new level to the old one
    return significant and verdict.change <= RETURN_SHARE * back


def accepted_base(conn, lineage, base_runs, limit, base_ids=()):
    """The baseline runs ({name: Entry} each, newest first) with the benchmarks of each
    acknowledged alert of `lineage` taken from the lineage's runs since the alert's first
    bad run (the accepted level) instead: one suite, judged and confirmed as one (the gate
    takes each benchmark's runs from the runs that time it). base_ids: the baseline runs'
    ids, in the same order: a benchmark whose acknowledged level was later found returned
    leaves out the nights it spent at that level (they passed, so they are baselines of
    the rest of the suite). Returns (runs, lines)."""
    base_runs = [dict(entries) for entries in base_runs]
    for member in alerts.returned_after_acknowledgment(conn, lineage):
        for index, run_id in enumerate(base_ids):
            if member["first_bad_run_id"] <= run_id < member["fixed_run_id"]:
                base_runs[index].pop(member["name"], None)
    groups = {}
    for name, member in alerts.open_members(conn, lineage).items():
        if member["state"] == "acknowledged":
            groups.setdefault((member["first_bad_run_id"], member["alert_id"]),
                              set()).add(name)
    if not groups:
        return base_runs, []
    accepted = set().union(*groups.values())
    runs = [{n: e for n, e in entries.items() if n not in accepted} for entries in base_runs]
    lines = []
    for (first, alert_id), names in sorted(groups.items()):
        rows = alerts.baseline_rows(conn, lineage, limit, since=first)
        for index, row in enumerate(rows):
            level = {n: e for n, e in store.load_entries(conn, row["id"]).items()
                     if n in names}
            if index < len(runs):
                runs[index].update(level)
            else:
                runs.append(level)
        lines.append("%d benchmark(s) of alert #%d (acknowledged) judged against its "
                     "accepted level: runs %s" % (len(names), alert_id,
                                                   ", ".join(str(r["id"]) for r in rows)))
    return runs, lines


def after_night(conn, lineage, run, good_run, verdicts):
    """Opens, joins, attaches and finds fixed the alerts of one recorded night: `run`
    (row) of `lineage` (host, machine, cpus, config), judged against runs whose newest is
    `good_run` (row). Returns (lines for the log, {benchmark: alert id} of benchmarks
    that passed within an acknowledged alert, {ids of the alerts that opened or grew}:
    the night that writes their regression mail)."""
    lines, within, grown = [], {}, set()
    open_ = alerts.open_members(conn, lineage)
    change = None
    for verdict in verdicts:
        label = stats.display_name(verdict.name)
        member = open_.get(verdict.name)
        if verdict.regression:
            if member is not None and member["state"] == "new" and member["kind"] == "regression":
                alerts.attach(conn, member["alert_id"], lineage, verdict.name, run["id"])
                lines.append("%s: alert #%d, night %d of its step (attached)"
                             % (label, member["alert_id"], member["nights"] + 1))
                continue
            change = change or alerts.change_between(good_run, run)
            alert_id, opened = alerts.open_or_join(
                conn, "regression", change,
                alerts.Member(*lineage, verdict.name, good_run["id"] if good_run else None,
                              verdict.change, verdict.ci, verdict.noise_floor), run["id"])
            grown.add(alert_id)
            lines.append("%s: %s alert #%d (%s)" % (
                label, "opens" if opened else "joins", alert_id, change.describe()))
        elif member is not None and verdict.verdict in stats.JUDGED:
            if _returned(member, verdict):
                fixed = alerts.member_fixed(conn, member["alert_id"], lineage, verdict.name,
                                            run["id"])
                lines.append("%s: level returned at run %d: alert #%d %s" % (
                    label, run["id"], member["alert_id"],
                    "found fixed" if fixed else "member fixed, others still open"))
            elif member["state"] == "acknowledged":
                within[verdict.name] = member["alert_id"]
                lines.append("%s: within alert #%d (acknowledged)"
                             % (label, member["alert_id"]))
    return lines, within, grown


# A change point within this many runs of a member's first bad run is that member's step.
NEAR_RUNS = 3


def scan_changepoints(conn, lineage, name, points):
    """Opens a 'changepoint' alert for each rise in `points` [(run id, median ns)]
    (oldest first, one benchmark of one lineage) that no alert of the lineage covers: a
    step whose nightlies each passed. Returns [(alert id, opened)]."""
    position = {run_id: i for i, (run_id, _) in enumerate(points)}
    covered = [position[m["first_bad_run_id"]]
               for m in alerts.members_of_lineage(conn, lineage, name)
               if m["first_bad_run_id"] in position]
    found = []
    for point in changepoints.detect([v for _, v in points]):
        if not 0 < point.index < len(points) or not point.change > 0:
            continue  # faster is no alert
        if any(abs(point.index - i) <= NEAR_RUNS for i in covered):
            continue
        good, bad = (store.get_run(conn, points[i][0]) for i in (point.index - 1, point.index))
        found.append(alerts.open_or_join(
            conn, "changepoint", alerts.change_between(good, bad),
            alerts.Member(*lineage, name, good["id"], point.change), bad["id"]))
        covered.append(point.index)
    return found


def scan(conn, log=lambda line: None):
    """Change points over every lineage x benchmark of the history (its latest run's
    benchmarks): the steps no nightly flagged get their alert. Returns the alerts opened
    or joined, [(alert id, opened)]."""
    found = []
    for lineage in views.lineage_list(conn):
        key = (lineage["host"], lineage["machine"], lineage["cpus"], lineage["config"])
        for name in views.benchmark_names(conn, lineage["last_id"]):
            points = [(run_id, statistics.median(values))
                      for run_id, _, values in store.series(conn, *key, name) if values]
            for alert_id, opened in scan_changepoints(conn, key, name, points):
                log("%s on %s: %s changepoint alert #%d" % (
                    stats.display_name(name), key[0], "opens" if opened else "joins",
                    alert_id))
                found.append((alert_id, opened))
    return found
