#!/usr/bin/env python3
"""Trims a `tools/perfscale run` result to the rows a test needs: the recorded A/A pairs
of test_gate_counts.py were made from real runs this way (issue 42).

    trim.py RUN.json OUT.json NAME_PREFIX...

Keeps the context (less the long CPU vulnerability and cache lists) and the per-repetition
rows (not the aggregates, which the gate does not read) of every benchmark whose name
starts with one of NAME_PREFIXes."""

import json
import sys


def main(argv):
    source, out, prefixes = argv[0], argv[1], tuple(argv[2:])
    with open(source) as f:
        run = json.load(f)
    context = {k: v for k, v in run["context"].items()
               if k not in ("caches", "cpu_vulnerabilities", "executable")}
    rows = [b for b in run["benchmarks"] if b.get("run_type") == "iteration"
            and b["run_name"].startswith(prefixes)]
    with open(out, "w") as f:
        json.dump({"context": context, "benchmarks": rows}, f, indent=0)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
