"""A history of several lineages, kernels and nights, built for the dashboard's tests and
its performance figures: every run goes through history.record_run with verdicts from
the gate's own compare_runs, as a nightly would record it.

The benchmarks, their medians and the context come from testing/py/data/base.json; each
night draws 10 repetitions around those medians (lognormal, 2%), with attributed counts.
One lineage gets a +15% step (and its xcalls/op doubled) at a known night: the change
point the tests look for. Nights are dated backwards from now, one a day.

    python3 testing/py/synthetic_history.py OUT.sqlite --machines 50 --nights 365
"""

import argparse
import datetime
import os
import sys

import numpy

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools", "py"))

from perfscale.gate import alerting, floors as gate_floors, stats as gate_stats  # noqa: E402
from perfscale.history import store as history  # noqa: E402
from perfscale.results import io as results_io, names as results_names  # noqa: E402
import bench_store  # noqa: E402  (tools/py/bench_store.py: the store's load benchmark)

HOSTILE = "<script>alert(1)</script>"
REPETITIONS = 10


def base_medians(count):
    """(name, median ns) of the first `count` benchmarks of base.json, and its context.
    Past base.json's benchmarks, the store's figures' synthetic names (bench_store) make
    up the count, around the same medians: a fleet's 200 benchmarks."""
    results = results_io.load_results(os.path.join(HERE, "data", "base.json"))
    picked = []
    for name, entry in results.entries.items():
        if len(picked) == count:
            break
        if entry.real_ns:
            picked.append((name, float(numpy.median(entry.real_ns))))
    real = list(picked)
    for name in bench_store.synthetic_names(count):
        if len(picked) == count:
            break
        picked.append((name, real[len(picked) % len(real)][1]))
    return picked, results.context


def _entries(rng, benchmarks, level, xcalls_factor, noise=0.02):
    entries = {}
    for name, median in benchmarks:
        real = list(median * level.get(name, 1.0) * numpy.exp(rng.normal(0, noise, REPETITIONS)))
        entry = results_io.Entry(name, results_names.parse_name(name), "ns", real,
                                 [r * 0.9 for r in real])
        factor = xcalls_factor.get(name, 1.0)
        entry.counters = {
            "xcalls/op": list(2.0 * factor + rng.normal(0, 0.01, REPETITIONS)),
            "ipis_sent/op": list(1.0 + rng.normal(0, 0.01, REPETITIONS)),
            "lock_wait_us/op": list(abs(0.5 + rng.normal(0, 0.05, REPETITIONS)))}
        entries[name] = entry
    return entries


def build(path, machines=4, nights=40, benchmarks=6, step_at=None, step_name=None,
          seed=1, hostile=True, kernel_change_at=None, calibrate=True, progress=False,
          judge=True, lineages_per_host=2, step_lineages=1, alerts=False):
    """Writes a new history at `path`; returns a dict describing what was built:
    lineages [(host, cpus, config)], step (lineage, name, night), run ids per lineage.

    judge=False: no gate (its bootstrap costs a quarter second a night on this machine,
    days for a fleet's year); every benchmark is recorded 'no significant change' but the
    step's first night, recorded 'slower' with its true change.
    step_lineages: how many lineages (the first ones) take the step, at the same night.
    alerts=True: each night opens, joins or attaches alerts as the nightly does
    (perfscale.gate.alerting); with judge=False every stepped night is recorded 'slower'
    (against the old level, as the gate judges it), not only the first."""
    rng = numpy.random.default_rng(seed)
    picked, context = base_medians(benchmarks)
    if hostile:
        picked.append((HOSTILE, 1000.0))
    step_name = step_name or picked[0][0]
    step_at = nights * 5 // 8 if step_at is None else step_at
    kernel_change_at = nights // 2 if kernel_change_at is None else kernel_change_at
    widths = (2, 4, 8, 16)
    lineages = []
    for m in range(machines):
        host = m // lineages_per_host  # one machine, in VMs of several widths
        lineages.append(("machine-%02d" % host, widths[m % len(widths)],
                         "nightly" if host % 2 == 0 else "--quick"))
    lineages = list(dict.fromkeys(lineages))
    conn = history.open_history(path)
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    run_ids = {lineage: [] for lineage in lineages}
    machines = {}
    options = gate_stats.Options()
    try:
        for night in range(nights):
            when = (now - datetime.timedelta(days=nights - night)).isoformat()
            for index, lineage in enumerate(lineages):
                host, cpus, config = lineage
                stepped = index < step_lineages and night >= step_at
                level = {name: (1.0 + 0.02 * numpy.log2(cpus)) for name, _ in picked}
                if stepped:
                    level[step_name] *= 1.15
                entries = _entries(rng, picked, level, {step_name: 2.0} if stepped else {})
                ctx = dict(context, host_name=host, num_online_cpus=str(cpus),
                           online_cpus="0-%d" % (cpus - 1),
                           kernel_release="6.1.0-%d-amd64" % (27 if night < kernel_change_at
                                                              else 28))
                results = results_io.ResultSet("", ctx, entries)
                # A night of the past: the store stamps a run with now unless told.
                info = history.RunInfo(host, cpus, config, ["--", config], REPETITIONS, ctx,
                                       recorded_at=when)
                machines[lineage] = info.machine
                base_rows = history.find_baselines(conn, host, cpus, config,
                                                   gate_floors.BASELINE_RUNS, info.machine)
                verdicts = []
                if base_rows and not judge:
                    flagged = stepped and (alerts or night == step_at)
                    verdicts = [gate_stats.Verdict(
                        name, gate_stats.SLOWER if flagged and name == step_name
                        else gate_stats.SAME,
                        0.15 if flagged and name == step_name else 0.0,
                        0.001, ci=(0.12, 0.18) if flagged and name == step_name else
                        (-0.01, 0.01)) for name, _ in picked]
                elif base_rows:
                    base_runs = [history.load_entries(conn, r["id"]) for r in base_rows]
                    verdicts = gate_stats.compare_runs(base_runs, [entries], options)
                run_id = history.record_run(conn, info, results, verdicts,
                                            base_rows[0]["id"] if base_rows else None)
                history.mark_complete(conn, run_id)
                if alerts and base_rows:
                    alerting.after_night(conn, (host, info.machine, cpus, config),
                                         history.get_run(conn, run_id), base_rows[0], verdicts)
                run_ids[lineage].append(run_id)
            if progress and night % 30 == 0:
                print("night %d of %d" % (night, nights), file=sys.stderr, flush=True)
        if calibrate:
            for lineage in lineages:
                host, cpus, config = lineage
                history.store_calibration(conn, host, cpus, config, [
                    history.Calibration(name, gate_stats.REAL_TIME, 0.03, 0.06, 0.015, 10)
                    for name, _ in picked], machines.get(lineage, ""))
    finally:
        conn.close()
    return {"lineages": lineages, "runs": run_ids, "step": (lineages[0], step_name, step_at),
            "names": [n for n, _ in picked], "kernel_change_at": kernel_change_at}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--machines", type=int, default=50, help="one lineage each")
    parser.add_argument("--nights", type=int, default=365)
    parser.add_argument("--benchmarks", type=int, default=20)
    args = parser.parse_args(argv)
    if os.path.exists(args.out):
        parser.error("%s exists; give a new file" % args.out)
    built = build(args.out, args.machines, args.nights, args.benchmarks, progress=True,
                  judge=False, lineages_per_host=1)
    print("%d lineages, %d nights, %d benchmarks: %s" % (
        len(built["lineages"]), args.nights, len(built["names"]), args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
