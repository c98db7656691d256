import json, subprocess, statistics, sys
args = ["--breakpoint_breakpoints=0", "--breakpoint_parallelism=1", "--breakpoint_passive=4",
        "--breakpoint_active=0", "--breakpoint_placement=unpinned",
        "--benchmark_filter=^BM_BreakpointEnable/passive:4/active:0/placement:unpinned/real_time$",
        "--benchmark_min_time=0.2s", "--benchmark_repetitions=3", "--benchmark_format=json"]
def ours(b, extra):
    out = subprocess.run([b] + args + extra, capture_output=True, text=True, check=True).stdout
    runs = [x for x in json.loads(out)["benchmarks"] if x.get("run_type") == "iteration"]
    return statistics.median(r["usecs/op"] for r in runs)
sides = {"old counts": ("/tmp/suite-before", []), "old no_counts": ("/tmp/suite-before", ["--attribution=false"]),
         "new counts": ("/tmp/suite-after", []), "new no_counts": ("/tmp/suite-after", ["--attribution=false"])}
res = {k: [] for k in sides}
for r in range(int(sys.argv[1])):
    for k, (b, e) in sides.items():
        res[k].append(ours(b, e))
for k, v in res.items():
    print(k, "median %.1f" % statistics.median(v), sorted(round(x, 1) for x in v))
