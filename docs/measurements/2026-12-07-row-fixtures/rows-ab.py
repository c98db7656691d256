import json, subprocess, statistics, sys
filt, rounds = sys.argv[1], int(sys.argv[2])
extra = sys.argv[3:]
bins = {"before": "/tmp/suite-f46", "after": "/tmp/suite-now"}
res = {}
for r in range(rounds):
    for side, b in bins.items():
        out = subprocess.run([b, "--quick=true", "--benchmark_min_time=0.01s", "--benchmark_filter=" + filt,
                              "--benchmark_repetitions=9", "--benchmark_format=json"] + extra,
                             capture_output=True, text=True, check=True).stdout
        for x in json.loads(out)["benchmarks"]:
            if x.get("run_type") != "iteration": continue
            res.setdefault((x["run_name"], side), []).append(x["real_time"])
names = sorted({k[0] for k in res})
for n in names:
    b, a = statistics.median(res[(n, "before")]), statistics.median(res[(n, "after")])
    print("%-70s before %9.1f after %9.1f  %+.1f%%" % (n[:70], b, a, (a / b - 1) * 100))
