#!/usr/bin/env python3
"""perf bench breakpoint enable against BM_BreakpointEnable (unpinned), interleaved, each
figure with where the inheriting threads sat: how many last ran on another CPU than the
toggler's. Ours says so itself (copies_on_other_cpus, per repetition); perf bench's is
read from /proc once its loop runs (the task list polled every 20 ms until all its
threads exist, then each thread's stat 15 ms later, past its 10 ms settle).

usage: placement-parity.py BINARY ROUNDS PASSIVE OUT.csv [MIN_TIME [REPEAT]]
  BINARY: bazel-bin/benchmarks/breakpoint/breakpoint, built with -c opt
  MIN_TIME: ours' --benchmark_min_time in seconds (default 0.5, as `parity` runs it)
  REPEAT: perf bench's --repeat (default 5000)
Prints the medians overall and at each placement both sides saw at least 5 times."""
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import time


def last_cpu(pid, tid):
    with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
        text = f.read()
    return int(text[text.rindex(")") + 2:].split()[36])  # field 39, processor


def perf_bench(passive, repeat=5000):
    cmd = ["perf", "bench", "--repeat=%d" % repeat, "breakpoint", "enable",
           "-p", str(passive), "-a", "0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    elsewhere = None
    deadline = time.time() + 10
    while time.time() < deadline and proc.poll() is None:
        try:
            tasks = os.listdir("/proc/%d/task" % proc.pid)
        except FileNotFoundError:
            break
        if len(tasks) == passive + 1:
            time.sleep(0.015)
            try:
                driver = last_cpu(proc.pid, str(proc.pid))
                elsewhere = sum(last_cpu(proc.pid, t) != driver
                                for t in tasks if int(t) != proc.pid)
            except (FileNotFoundError, ProcessLookupError, ValueError):
                elsewhere = None
            break
        time.sleep(0.02)
    out = proc.communicate()[0]
    if proc.returncode != 0:
        sys.exit("%s failed: %s" % (" ".join(cmd), out[-400:]))
    figure = float(re.search(r"([0-9.]+) usecs/op", out).group(1))
    return figure, elsewhere


def ours(binary, passive, min_time):
    name = "BM_BreakpointEnable/passive:%d/active:0/placement:unpinned/real_time" % passive
    cmd = [binary, "--benchmark_format=json", "--breakpoint_breakpoints=0",
           "--breakpoint_parallelism=1", "--breakpoint_passive=%d" % passive,
           "--breakpoint_active=0", "--breakpoint_placement=unpinned",
           "--benchmark_filter=^%s$" % name, "--benchmark_min_time=%ss" % min_time,
           "--benchmark_repetitions=3"]
    result = subprocess.run(cmd, capture_output=True, text=True, check=True)
    runs = [b for b in json.loads(result.stdout)["benchmarks"] if b.get("run_type") == "iteration"]
    return [(b["usecs/op"], int(b["copies_on_other_cpus"]), int(b["count_copies_on_other_cpus"]),
             b.get("xcalls/op")) for b in runs]


def main():
    binary, rounds, passive, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    min_time = sys.argv[5] if len(sys.argv) > 5 else "0.5"
    repeat = int(sys.argv[6]) if len(sys.argv) > 6 else 5000
    rows = []
    for r in range(rounds):
        figure, elsewhere = perf_bench(passive, repeat)
        rows.append({"round": r, "side": "perf bench", "repetition": 0, "usecs_per_op": figure,
                     "copies_on_other_cpus": elsewhere, "count_copies_on_other_cpus": "",
                     "xcalls_per_op": ""})
        for i, (f, c, cc, x) in enumerate(ours(binary, passive, min_time)):
            rows.append({"round": r, "side": "perfscale", "repetition": i + 1, "usecs_per_op": f,
                         "copies_on_other_cpus": c, "count_copies_on_other_cpus": cc,
                         "xcalls_per_op": x})
        print("round %d/%d" % (r + 1, rounds), file=sys.stderr)
    with open(out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    summarize(rows)


def summarize(rows):
    perf = [r for r in rows if r["side"] == "perf bench"]
    mine = [r for r in rows if r["side"] == "perfscale"]
    # A round's figure of ours is the median of its repetitions, as `parity` takes it.
    per_round = {}
    for r in mine:
        per_round.setdefault(r["round"], []).append(r["usecs_per_op"])
    p = statistics.median(r["usecs_per_op"] for r in perf)
    o = statistics.median(statistics.median(v) for v in per_round.values())
    print("overall: perf bench %.1f, perfscale %.1f usecs/op, ratio %.2f (%d rounds)"
          % (p, o, o / p, len(perf)))
    for side, group in (("perf bench", perf), ("perfscale", mine)):
        counts = {}
        for r in group:
            counts[r["copies_on_other_cpus"]] = counts.get(r["copies_on_other_cpus"], 0) + 1
        print("  %s: copies on other CPUs -> runs: %s" % (side, dict(sorted(
            counts.items(), key=lambda kv: -1 if kv[0] is None else kv[0]))))
    for k in sorted({r["copies_on_other_cpus"] for r in perf if r["copies_on_other_cpus"] is not None}):
        a = [r["usecs_per_op"] for r in perf if r["copies_on_other_cpus"] == k]
        b = [r["usecs_per_op"] for r in mine if r["copies_on_other_cpus"] == k]
        if len(a) >= 5 and len(b) >= 5:
            print("  at %d on other CPUs: perf bench %.1f (n=%d), perfscale %.1f (n=%d), ratio %.2f"
                  % (k, statistics.median(a), len(a), statistics.median(b), len(b),
                     statistics.median(b) / statistics.median(a)))


if __name__ == "__main__":
    main()
