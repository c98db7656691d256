"""`tools/perfscale parity synthesize`: `perf bench internals synthesize` vs
//benchmarks:synthesize, per record, with one synthesis thread.

perf bench prints, for each mode:

    Average synthesis took: 7625.800 usec (+- 340.391 usec)
    Average num. events: 572.700 (+- 6.624)
    Average time per event 13.316 usec

Its two modes synthesize different things:
- `-t` (multi-threaded mode, here with one thread: `-m 1 -M 1`) synthesizes every
  process in /proc, FORK + COMM per task and MMAP2 per executable mapping, and only
  counts the records (an atomic increment). That is our `system` workload with one
  worker, so this is the comparison that decides: our usecs/record should not be above
  perf's (ratio <= 1 + tolerance). It is shown against our `atomic` output (the closest
  to perf bench's counter) and our `mutex` output (perf record's design; with one
  worker the lock is never contended).
- the default mode synthesizes only the perf process itself (COMM + one MMAP2 per
  executable mapping, no FORK). We cannot point ours at perf's process, so the row
  against our `controlled` workload of one single-threaded process (this binary's own
  mappings) is informational: similar work, not the same process.

Both sides read the live process table, which changes between runs on a busy machine;
the record counts are printed next to the times so that a reader can see whether the
workloads matched.
"""

import re
import statistics
import subprocess
import sys

from perfscale.parity import common

# The command's --help line (perfscale.commands.parity.synthesize).
DESCRIPTION = "perf bench internals synthesize vs //benchmarks:synthesize"

SYSTEM_FILTER = ("^BM_Synthesize/workload:system/sink:memory/strategy:(atomic|mutex)"
                 "/workers:1/manual_time$")
SELF_FILTER = ("^BM_Synthesize/workload:controlled/sink:memory/strategy:atomic"
               "/workers:1/manual_time$")


def parse_perf_synthesize(stdout: str):
    """(usec per record, records) of the first block of perf bench's output."""
    per_event = re.search(r"Average time per event\s+([0-9.]+)\s+usec", stdout)
    events = re.search(r"Average num\. events:\s*([0-9.]+)", stdout)
    if not per_event or not events:
        raise common.ParityError("unexpected perf bench internals synthesize output:\n" +
                             stdout[-800:])
    return float(per_event.group(1)), float(events.group(1))


def run_perf(args):
    cmd = ["perf", "bench", "internals", "synthesize"] + args
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise common.ParityError("%s failed (exit %d):\n%s" % (" ".join(cmd), result.returncode,
                                                           (result.stderr or result.stdout)[-800:]))
    return parse_perf_synthesize(result.stdout + result.stderr)


def run_ours(binary, flags, min_time):
    """{strategy: (usecs/record, records)} from one run of our binary."""
    found = {}
    cmd = [binary, "--benchmark_format=json", "--benchmark_min_time=%ss" % min_time] + flags
    for run in common.run_benchmark_json(cmd):
        strategy = re.search(r"strategy:(\w+)", run["name"]).group(1)
        found[strategy] = (float(run["usecs/record"]), float(run["records"]))
    return found


def run(args):
    """The parity with common.Settings `args`: prints the table; 0 within tolerance, 1
    not, 2 it could not run."""
    try:
        common.require_perf()
        binary = common.build_binary("synthesize")
        # label -> list of (reference usec, reference records, ours usec, ours records)
        rows = {}
        gating = {}
        for round_index in range(args.rounds):
            if args.only in "system, 1 thread (-t) vs atomic mutex":
                ref = run_perf(["-t", "-m", "1", "-M", "1", "-I", "10"])
                ours = run_ours(binary, ["--synthesize_workload=system",
                                         "--synthesize_sink=memory",
                                         "--synthesize_strategy=atomic,mutex",
                                         "--synthesize_workers=1",
                                         "--benchmark_filter=" + SYSTEM_FILTER], "0.5")
                for strategy, figures in sorted(ours.items()):
                    label = "system, 1 thread (-t) vs %s" % strategy
                    rows.setdefault(label, []).append(ref + figures)
                    gating[label] = True
            if args.only in "one process (default mode, info) self":
                ref = run_perf(["-s", "-i", "2000"])
                ours = run_ours(binary, ["--synthesize_workload=controlled",
                                         "--synthesize_sink=memory",
                                         "--synthesize_strategy=atomic", "--synthesize_workers=1",
                                         "--synthesize_processes=1", "--synthesize_threads=1",
                                         "--synthesize_exec_maps=0",
                                         "--synthesize_data_maps=0",
                                         "--benchmark_filter=" + SELF_FILTER], "0.5")
                label = "one process (default mode, info)"
                rows.setdefault(label, []).append(ref + ours["atomic"])
                gating[label] = False
            print("round %d/%d done" % (round_index + 1, args.rounds), file=sys.stderr)
        if not rows:
            raise common.ParityError("no case matches --only=%r (system, one process)" % args.only)
    except common.ParityError as err:
        print("perfscale parity: %s" % err, file=sys.stderr)
        return 2

    table = summarize(rows, gating, args.tolerance)
    print_table(table, args)
    common.write_json(args.json, "synthesize", args.rounds, table)
    return 0 if all(r["within_tolerance"] for r in table if r["gating"]) else 1


def summarize(rows, gating, tolerance):
    """The table's rows from {label: [(perf usec, perf records, ours usec, ours records)]}.
    Ours must not be slower per record than perf (faster is fine)."""
    table = []
    for label, samples in rows.items():
        row = common.summary_row(label, "usecs/record", [s[0] for s in samples],
                             [s[2] for s in samples], gating[label], tolerance)
        row["reference_records"] = statistics.median(s[1] for s in samples)
        row["ours_records"] = statistics.median(s[3] for s in samples)
        row["within_tolerance"] = row["ratio"] <= 1.0 + tolerance / 100.0
        table.append(row)
    return table


def print_table(table, args):
    def verdict(r):
        if not r["gating"]:
            return "info"
        if r["within_tolerance"]:
            return "ok" if r["ratio"] <= 1.0 else "ok (within %.0f%%)" % args.tolerance
        return "SLOWER by %.0f%%" % ((r["ratio"] - 1) * 100)
    common.print_rows(table, [("perf us/rec", 12, "%.3f", "reference_median"),
                          ("ours us/rec", 12, "%.3f", "ours_median"),
                          ("ratio", 6, "%.3f", "ratio"),
                          ("perf recs", 10, "%.0f", "reference_records"),
                          ("our recs", 10, "%.0f", "ours_records"),
                          ("perf sprd", 9, "%.1f%%", "reference_spread_pct"),
                          ("our sprd", 9, "%.1f%%", "ours_spread_pct")], verdict,
                  "medians of %d interleaved rounds; ratio = ours / perf (below 1: ours is "
                  "faster); spread = (max - min) / median; verdict: ours may be at most "
                  "%.0f%% slower" % (args.rounds, args.tolerance))
