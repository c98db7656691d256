"""Regenerates the recorded result files of this folder (deterministic: fixed seeds).

    tools/py/python testing/py/data/make_fixtures.py

They are shaped exactly like Google Benchmark 1.7.1 JSON from our binaries run with
--benchmark_repetitions=N --benchmark_enable_random_interleaving=true: per-repetition
entries in interleaved order, then mean/median/stddev/cv aggregates, our custom context
strings, user counters as extra keys, a benchmark that skipped with an error. Times are
log-normal around figures of the size this 2-CPU VM gives, so the statistics see real
noise. The files are committed: tests must not depend on this script's randomness.
"""

import json
import math
import os
import random
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
NOISE = 0.03  # relative spread of one repetition, about what a quiet VM shows

CONTEXT = {
    "date": "2024-11-30T03:10:11+00:00",
    "host_name": "perfscale-ci-1",
    "executable": "bazel-bin/benchmarks/suite",
    "num_cpus": 2,
    "mhz_per_cpu": 2894,
    "cpu_scaling_enabled": False,
    "caches": [
        {"type": "Data", "level": 1, "size": 32768, "num_sharing": 1},
        {"type": "Unified", "level": 2, "size": 524288, "num_sharing": 1},
        {"type": "Unified", "level": 3, "size": 33554432, "num_sharing": 2},
    ],
    "load_avg": [0.41, 0.3, 0.21],
    "library_build_type": "release",
    "clocksource": "kvm-clock",
    "hypervisor": "KVM",
    "kernel_release": "6.1.0-27-amd64",
    "num_online_cpus": "2",
    "online_cpus": "0-1",
    "perf_event_paranoid": "-1",
    "perfscale_revision": "4aa63e4",
}


def instances():
    """(name, time unit, median real time, {counter: median per op})."""
    out = []
    for threads in (5, 20):
        for breakpoints in (0, 1, 4):
            usecs = (38.0 + 1.5 * threads) * (1 + 2.2 * breakpoints)
            out.append(("BM_BreakpointThread/breakpoints:%d/parallelism:2/threads:%d/real_time"
                        % (breakpoints, threads), "us", usecs * threads,
                        {"usecs/op": usecs, "usecs/op/cpu": usecs * 2,
                         "ipis_system/op": 0.4 + 3.1 * breakpoints}))
    for passive, active, usecs in ((0, 0, 1.43), (8, 0, 21.0), (32, 0, 83.0), (0, 1, 24.0),
                                   (0, 2, 41.0)):
        out.append(("BM_BreakpointEnable/passive:%d/active:%d/placement:0/real_time"
                    % (passive, active), "us", usecs,
                    {"usecs/op": usecs, "ipis_system/op": 2.0 * (passive + active) / 4}))
    for strategy, ipis, usecs_fd in (("event_major", 0.503, 9.8), ("cpu_major", 0.006, 4.1)):
        for events in (100, 400):
            fds = events * 2
            out.append(("BM_EventOpen/strategy:%s/events:%d/kind:software/real_time"
                        % (strategy, events), "ms", usecs_fd * fds / 1000,
                        {"usecs/fd": usecs_fd, "ipis_system/fd": ipis, "sys_us/fd": usecs_fd * 0.8,
                         "fds": fds}))
    for strategy, one, two in (("mutex", 52.0, 36.0), ("atomic", 49.0, 27.5)):
        for workers, ms in ((1, one), (2, two)):
            out.append(("BM_Synthesize/strategy:%s/workers:%d/sink:memory/real_time"
                        % (strategy, workers), "ms", ms,
                        {"records": 8412, "usecs/record": ms * 1000 / 8412,
                         "records/s": 8412 / (ms / 1000)}))
    for tp_set, usecs in (("none", 9.1), ("lock", 13.6), ("sched", 15.2)):
        out.append(("BM_PipePingPong/set:%s/callchain:0/real_time" % tp_set, "us", usecs,
                     {"usecs/op": usecs, "samples/op": 0.0 if tp_set == "none" else 4.0,
                      "bytes/op": 0.0 if tp_set == "none" else 160.0, "lost": 0}))
    return out


ERROR_NAME = "BM_PipePingPong/set:lockdep/callchain:0/real_time"
ERROR_MESSAGE = "tracepoint lock:lock_acquire not found (kernel without lockdep)"


def document(seed, repetitions=10, slower=(), factor=1.2):
    rng = random.Random(seed)
    runs = []
    specs = instances()
    for family_index, (name, unit, median, counters) in enumerate(specs):
        scale = factor if any(s in name for s in slower) else 1.0
        values = [median * scale * math.exp(rng.gauss(0, NOISE)) for _ in range(repetitions)]
        for index, value in enumerate(values):
            item = {"name": name, "family_index": family_index,
                    "per_family_instance_index": 0, "run_name": name,
                    "run_type": "iteration", "repetitions": repetitions,
                    "repetition_index": index, "threads": 1,
                    "iterations": max(1, int(2e5 / (value * (1000 if unit == "ms" else 1)))),
                    "real_time": value, "cpu_time": value * 0.07, "time_unit": unit}
            for counter, per_op in counters.items():
                item[counter] = per_op * value / median if "/op" in counter or "/fd" in counter \
                    or "/record" in counter else per_op
            runs.append(item)
    rng.shuffle(runs)  # random interleaving: repetitions of all instances mixed
    error = {"name": ERROR_NAME, "family_index": len(specs), "per_family_instance_index": 0,
             "run_name": ERROR_NAME, "run_type": "iteration", "repetitions": repetitions,
             "repetition_index": 0, "threads": 1, "error_occurred": True,
             "error_message": ERROR_MESSAGE, "iterations": 0, "real_time": 0.0,
             "cpu_time": 0.0, "time_unit": "us"}
    runs.insert(len(runs) // 3, error)
    if repetitions > 1:
        runs.extend(aggregates(runs))
    return {"context": dict(CONTEXT), "benchmarks": runs}


_STRUCTURAL = {"name", "family_index", "per_family_instance_index", "run_name", "run_type",
               "repetitions", "repetition_index", "threads", "iterations", "time_unit"}


def aggregates(runs):
    out = []
    by_name = {}
    for item in runs:
        if not item.get("error_occurred"):
            by_name.setdefault(item["name"], []).append(item)
    for name, items in by_name.items():
        first = items[0]
        for aggregate, fn in (("mean", statistics.mean), ("median", statistics.median),
                              ("stddev", statistics.stdev)):
            agg = {"name": name + "_" + aggregate, "family_index": first["family_index"],
                   "per_family_instance_index": 0, "run_name": name, "run_type": "aggregate",
                   "repetitions": len(items), "threads": 1, "aggregate_name": aggregate,
                   "aggregate_unit": "time", "iterations": len(items)}
            for key in first:
                if key not in _STRUCTURAL:
                    agg[key] = fn([i[key] for i in items])
            agg["time_unit"] = first["time_unit"]
            out.append(agg)
        cv = {"name": name + "_cv", "family_index": first["family_index"],
              "per_family_instance_index": 0, "run_name": name, "run_type": "aggregate",
              "repetitions": len(items), "threads": 1, "aggregate_name": "cv",
              "aggregate_unit": "percentage", "iterations": len(items),
              "real_time": statistics.stdev([i["real_time"] for i in items])
              / statistics.mean([i["real_time"] for i in items]),
              "cpu_time": 0.01, "time_unit": first["time_unit"]}
        out.append(cv)
    return out


def nan_document():
    """Counters Google Benchmark could not compute, written as bare tokens."""
    doc = document(seed=6, repetitions=10)
    doc["benchmarks"] = [b for b in doc["benchmarks"]
                         if b["name"].startswith(("BM_PipePingPong", "BM_BreakpointEnable"))]
    for item in doc["benchmarks"]:
        if item["name"].startswith("BM_PipePingPong/set:none"):
            item["samples/op"] = math.nan
            item["bytes/op"] = math.inf
            item["lost"] = -math.inf
        if item["name"].startswith("BM_BreakpointEnable/passive:0/active:0") and \
                item.get("repetition_index") == 3:
            item["real_time"] = math.nan  # one repetition with no usable time
    return doc


def _rounded(value):
    """Six significant digits: plenty for the statistics, and the files stay small."""
    if isinstance(value, float) and math.isfinite(value):
        return float("%.6g" % value)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def write(name, doc):
    # Google Benchmark writes NaN/Infinity bare, so the fixture must too (allow_nan).
    with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
        json.dump(_rounded(doc), f, indent=2, allow_nan=True)
        f.write("\n")


def main():
    write("base.json", document(seed=1))
    write("clean.json", document(seed=2))
    # +50%: past the between-run floor an uncalibrated compare assumes (25%).
    write("slow.json", document(seed=3, factor=1.5, slower=("BM_BreakpointEnable/passive:8/",
                                                            "BM_BreakpointThread/breakpoints:4/parallelism:2/threads:20/")))
    write("few_reps.json", document(seed=5, repetitions=3))
    write("nan.json", nan_document())
    write("no_benchmarks.json", {"context": CONTEXT, "benchmarks": []})
    write("foreign.json", {"name": "perfscale-dashboard", "version": "1.0.0",
                           "dependencies": {"chart.js": "^4.4.0"}})


if __name__ == "__main__":
    main()
