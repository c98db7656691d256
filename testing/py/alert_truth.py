"""Alerts judged on data with a known truth: a synthetic fleet's nights (synthetic_history's
benchmarks and noise) with injected steps of known size and night, judged by the real gate
(gate.stats.compare_runs) night by night, twice:

- before: what the nightly did without alerts: every regressed night of a benchmark is one
  open regression on the fleet page, one triage action; the baseline never moves on.
- after: the nightly with alerts (gate.alerting): a regression opens or joins the alert of
  its change, later nights attach; the lab triages each alert once, the morning after it
  opens: acknowledged when it is a true step, invalid when not; a step that reverts is
  found fixed by the nightly.

The truth: the fleet upgrades its kernel every KERNEL_EVERY nights, all machines at once.
- shared: at a kernel upgrade, two benchmarks on the first six machines, +15%, for good;
- single: one benchmark on machine 6, +20%, on a night without a kernel change;
- reverting: at a kernel upgrade, one benchmark on machines 7 and 8, +15%, gone at the
  next upgrade;
- every other machine is A/A: nothing changes but the noise.

    tools/py/python testing/py/alert_truth.py [--machines 12] [--nights 120] [--benchmarks 6]
"""

import argparse
import datetime
import os
import sys
import time

import numpy

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools", "py"))

import synthetic_history  # noqa: E402
from perfscale.gate import alerting, floors as gate_floors, stats as gate_stats  # noqa: E402
from perfscale.history import alerts, store as history  # noqa: E402
from perfscale.results import io as results_io  # noqa: E402

KERNEL_EVERY = 30
STEP = 0.15


def truth(machines, nights, names):
    """[(label, {(machine index, benchmark)}, first night, last night or None, size)]."""
    first_upgrade = KERNEL_EVERY
    return [
        ("shared: kernel upgrade, 2 benchmarks x 6 machines",
         {(m, n) for m in range(min(6, machines)) for n in names[:2]}, first_upgrade, None, STEP),
        ("single: one machine, no kernel change", {(6, names[2])}, first_upgrade + 12, None, 0.20),
        ("reverting: kernel upgrade, reverted at the next",
         {(m, names[3]) for m in (7, 8)}, 2 * KERNEL_EVERY, 3 * KERNEL_EVERY - 1, STEP),
    ]


def _level(steps, machine, name, night):
    level = 1.0
    for _label, members, first, last, size in steps:
        if (machine, name) in members and first <= night and (last is None or night <= last):
            level *= 1 + size
    return level


def simulate(path, machines, nights, benchmarks, with_alerts, seed=7, log=None):
    rng = numpy.random.default_rng(seed)
    picked, context = synthetic_history.base_medians(benchmarks)
    names = [n for n, _ in picked]
    steps = truth(machines, nights, names)
    options = gate_stats.Options()
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    flagged, failing_nights, actions = 0, 0, 0
    triaged = set()
    conn = history.open_history(path)
    try:
        for night in range(nights):
            when = (now - datetime.timedelta(days=nights - night)).isoformat()
            if with_alerts:  # the lab's morning: each new alert triaged once
                for row in alerts.listing(conn, ["new"]):
                    if row["id"] in triaged:
                        continue
                    triaged.add(row["id"])
                    true = any((int(m["host"].split("-")[1]), m["name"]) in s[1]
                               for m in alerts.members(conn, row["id"]) for s in steps)
                    alerts.set_state(conn, row["id"], "acknowledged" if true else "invalid",
                                     "lab", "true step" if true else "noise")
                    actions += 1
            for m in range(machines):
                host = "machine-%02d" % m
                level = {n: _level(steps, m, n, night) for n in names}
                entries = synthetic_history._entries(rng, picked, level, {})
                ctx = dict(context, host_name=host, num_online_cpus="4", online_cpus="0-3",
                           kernel_release="6.1.0-%d-amd64" % (27 + night // KERNEL_EVERY))
                results = results_io.ResultSet("", ctx, entries)
                info = history.RunInfo(host, 4, "nightly", ["--"], 10, ctx, recorded_at=when)
                lineage = (host, info.machine, 4, "nightly")
                if with_alerts:
                    base_rows = alerts.baseline_rows(conn, lineage, gate_floors.BASELINE_RUNS)
                else:
                    base_rows = history.find_baselines(conn, host, 4, "nightly",
                                                       gate_floors.BASELINE_RUNS, info.machine)
                verdicts = []
                if base_rows:
                    base_runs = [history.load_entries(conn, r["id"]) for r in base_rows]
                    if with_alerts:
                        base_runs, _ = alerting.accepted_base(
                            conn, lineage, base_runs, gate_floors.BASELINE_RUNS,
                            [r["id"] for r in base_rows])
                    verdicts = gate_stats.compare_runs(base_runs, [entries], options)
                run_id = history.record_run(conn, info, results, verdicts,
                                            base_rows[0]["id"] if base_rows else None)
                history.mark_complete(conn, run_id)
                slower = sum(1 for v in verdicts if v.regression)
                flagged += slower
                failing_nights += bool(slower)
                if with_alerts and base_rows:
                    alerting.after_night(conn, lineage, history.get_run(conn, run_id),
                                         base_rows[0], verdicts)
            if log and night % 20 == 0:
                log("night %d of %d" % (night, nights))
        score = {"flagged nights": flagged, "failing nightlies": failing_nights}
        if not with_alerts:
            score["triage actions"] = flagged  # one per open regression on the fleet page
            return score, steps, names
        found = alerts.listing(conn)
        per_step = []
        false_alerts = 0
        for row in found:
            members = {(int(m["host"].split("-")[1]), m["name"])
                       for m in alerts.members(conn, row["id"])}
            hits = [i for i, s in enumerate(steps) if members & s[1]]
            if not hits:
                false_alerts += 1
            per_step.extend(hits)
        score.update({
            "alerts": len(found),
            "alerts per true step": [per_step.count(i) for i in range(len(steps))],
            "false alerts": false_alerts,
            "false alerts per lineage-year": false_alerts / (machines - 9) * 365 / nights
            if machines > 9 else float("nan"),
            "missed steps": sum(1 for i in range(len(steps)) if i not in per_step),
            "found fixed": sum(1 for r in found if r["state"] == "fixed"
                               and r["who"] == "nightly"),
            "triage actions": actions,
            "states": sorted((r["id"], r["state"], r["benchmarks"], r["lineages"], r["kind"])
                             for r in found),
        })
        return score, steps, names
    finally:
        conn.close()


def main(argv):
    import tempfile
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--machines", type=int, default=12)
    parser.add_argument("--nights", type=int, default=120)
    parser.add_argument("--benchmarks", type=int, default=6)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        for with_alerts in (False, True):
            start = time.monotonic()
            score, steps, _ = simulate(os.path.join(tmp, "%s.sqlite" % with_alerts),
                                       args.machines, args.nights, args.benchmarks,
                                       with_alerts)
            print("%s (%d machines, %d nights, %d benchmarks, %.0f s):" % (
                "after (alerts)" if with_alerts else "before (one per night)", args.machines,
                args.nights, args.benchmarks, time.monotonic() - start))
            for key, value in score.items():
                print("  %s: %s" % (key, value))
    for label, members, first, last, size in steps:
        print("true step: %s: %d members, nights %d-%s, %+.0f%%" % (
            label, len(members), first, last if last is not None else "end", 100 * size))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
