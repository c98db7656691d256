"""The fleet history's figures: a synthetic year of nightlies from many machines.

    tools/py/python tools/py/bench_store.py --history URL [--machines 50]
        [--days 365] [--benchmarks 200] [--repetitions 10] [--json FILE]

A tool that measures the store, not part of it: it lives beside the perfscale package,
uses only the store's public interface, and nothing in the package imports it.

Loads machines x days runs of `benchmarks` benchmarks x `repetitions` samples through
the import's own path (store.copy_run with COPY, as `tools/perfscale history import`
does), then measures, with that history in place: the database's size, one nightly's
write (store.record_run of a fresh run), one benchmark's series on one machine over the
whole period (store.series) and the latest run of every machine (store.latest_runs).
Each query runs 7 times; the median and the slowest are printed. The figures of one
machine go in docs/measurements/, not here.
"""

import argparse
import json
import random
import statistics
import sys
import time

from perfscale.history import packed, store
from perfscale.machine import identity
from perfscale.results import io


def synthetic_names(count):
    families = ("BM_EventOpen", "BM_BreakpointEnable", "BM_PipePingPong", "BM_Synthesize",
                "BM_TraceOverhead")
    return ["%s/param:%d/threads:%d/real_time" % (families[i % len(families)], i, 1 + i % 8)
            for i in range(count)]


def _machine(index):
    context = {"host_name": "lab-%02d" % index, "num_online_cpus": 2 ** (1 + index % 6),
               "machine_cpu_model": "Synthetic CPU %d" % (index % 7),
               "machine_microcode": "0x%x" % (0x100 + index)}
    return context


def _run(machine, day, names, repetitions, rng):
    context = dict(machine, date="2026-%03d" % day, kernel_release="6.%d.0" % (day % 12))
    host, cpus = context["host_name"], context["num_online_cpus"]
    row = {"run_key": "bench-%s-%d" % (host, day), "recorded_at": "2026 day %03d" % day,
           "host": host, "machine": identity.digest(context), "cpus": cpus,
           "config": "--quick", "run_args": '["--quick"]', "repetitions": repetitions,
           "kernel_release": context["kernel_release"], "perf_event_paranoid": "2",
           "perfscale_revision": "0" * 40, "context": json.dumps(context),
           "results_path": "", "regressions": 0, "complete": 1}
    benchmarks = []
    for position, name in enumerate(names):
        base = 1000.0 * (1 + position % 50)
        benchmarks.append(dict(
            position=position, name=name, time_unit="ns", counters="{}", errors="[]",
            verdict="same", change=0.0, pvalue=0.5,
            real_ns=packed.pack([base * (1 + rng.gauss(0, 0.02)) for _ in range(repetitions)]),
            cpu_ns=packed.pack([base] * repetitions)))
    return row, benchmarks


def _timed(fn, times=7):
    spent = []
    for _ in range(times):
        started = time.perf_counter()
        result = fn()
        spent.append(1000 * (time.perf_counter() - started))
    return result, statistics.median(spent), max(spent)


def _fresh_results(machine, names, repetitions):
    document = {"context": dict(machine, date="2027-001"), "benchmarks": [
        {"name": n, "run_name": n, "run_type": "iteration", "repetitions": repetitions,
         "repetition_index": r, "threads": 1, "iterations": 1, "real_time": 1000.0 + r,
         "cpu_time": 1000.0, "time_unit": "ns"} for n in names for r in range(repetitions)]}
    return io.parse_results(json.dumps(document))


def main(argv):
    parser = argparse.ArgumentParser(prog="bench_store", description=__doc__.split("\n\n")[0])
    parser.add_argument("--history", required=True, metavar="DB")
    parser.add_argument("--machines", type=int, default=50)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--benchmarks", type=int, default=200)
    parser.add_argument("--repetitions", type=int, default=10)
    parser.add_argument("--json", metavar="FILE", help="also write the figures here")
    parser.add_argument("--load-budget-s", type=float, metavar="S",
                        help="stop loading after S seconds (at a day's end) and measure on "
                        "what is loaded; the figures say how much that was")
    args = parser.parse_args(argv)
    rng = random.Random(1)
    names = synthetic_names(args.benchmarks)
    machines = [_machine(i) for i in range(args.machines)]
    figures = {"machines": args.machines, "days": args.days, "benchmarks": args.benchmarks,
               "repetitions": args.repetitions,
               "samples": args.machines * args.days * args.benchmarks * args.repetitions}
    figures["days_loaded"] = 0  # --days 0: only the measurements, on what is there
    with store.open_history(args.history) as conn:
        before = store.counts(conn)["runs"]
        started = time.monotonic()
        for day in range(args.days):
            for machine in machines:
                run, benchmarks = _run(machine, day, names, args.repetitions, rng)
                store.copy_run(conn, run, benchmarks, None, bulk=True)
            figures["days_loaded"] = day + 1
            if args.load_budget_s and time.monotonic() - started > args.load_budget_s:
                break
            if day % 10 == 9:
                print("bench_store: day %d loaded, %.0f s" % (day + 1, time.monotonic() - started),
                      flush=True)
        figures["import_s"] = time.monotonic() - started
        figures["runs_before"] = before
        figures["samples_loaded"] = (figures["days_loaded"] * args.machines * args.benchmarks
                                     * args.repetitions)
        figures["size_bytes"] = store.size_bytes(conn)
        figures["counts"] = store.counts(conn)
        fresh = _fresh_results(machines[0], names, args.repetitions)

        def write():
            info = store.RunInfo.from_results(fresh, "--quick", ["--quick"], args.repetitions)
            return store.record_run(conn, info, fresh, [], None)
        _id, figures["nightly_write_ms"], figures["nightly_write_max_ms"] = _timed(write, 3)
        m = machines[min(3, len(machines) - 1)]
        lineage = (m["host_name"], identity.digest(m), m["num_online_cpus"], "--quick")
        series, figures["series_ms"], figures["series_max_ms"] = _timed(
            lambda: store.series(conn, *lineage, names[17]))
        figures["series_points"] = len(series)
        latest, figures["latest_ms"], figures["latest_max_ms"] = _timed(
            lambda: store.latest_runs(conn))
        figures["latest_rows"] = len(latest)
    print(json.dumps(figures, indent=1))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(figures, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
