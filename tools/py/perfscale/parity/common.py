"""Shared machinery for `tools/perfscale parity FAMILY`: run a reference command
(`perf bench ...`) and our benchmark on the same parameters, interleaved, several
rounds, and print a table of medians, the ratio and each side's spread.

A family module builds a list of `Case`s and calls `run_parity(...)`. See
parity/breakpoint.py for the pattern.
"""

import dataclasses
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
from typing import Callable, List, Optional

from perfscale.results import io
from perfscale.suite import runner


class ParityError(Exception):
    """A problem the user can act on; printed without a traceback."""


@dataclasses.dataclass
class Settings:
    """A parity run's common options (perfscale.options.parity_settings parses them)."""
    rounds: int = 5          # interleaved rounds of each case
    tolerance: float = 10.0  # allowed |ours/reference - 1|, in percent
    only: str = ""           # run only the cases whose label contains this
    json: str = ""           # also write the table as JSON here ("": not)


@dataclasses.dataclass
class Case:
    label: str                      # shown in the table, e.g. "thread B=4 P=2 T=20"
    reference_cmd: List[str]        # e.g. ["perf", "bench", "--repeat=56", ...]
    reference_parse: Callable[[str], float]  # stdout -> figure
    ours_args: List[str]            # flags for our binary (filter included)
    ours_counter: str = "usecs/op"  # counter of our JSON to compare; "real_time" allowed
    unit: str = "usecs/op"
    cwd: Optional[str] = None       # where to run the reference (perf may write files)
    # Google Benchmark repetitions per round; the round's figure is their median. Each
    # repetition sets the benchmark up afresh (threads, placement), so a few of them
    # average over set-up luck that a single perf bench run cannot.
    ours_repetitions: int = 1
    # False for a reference that does different work (its ratio is shown, never judged).
    gating: bool = True
    # Where ours should loop as long as the reference's run of the same round did: that
    # run's figure -> ours' --benchmark_min_time in seconds (None: ours_args says).
    ours_min_time: Optional[Callable[[float], float]] = None


def parse_perf_usecs_per_op(stdout: str) -> float:
    """`perf bench` prints '<value> usecs/op' (and sometimes usecs/op/cpu)."""
    match = re.search(r"^\s*([0-9.]+)\s+usecs/op\s*$", stdout, re.MULTILINE)
    if not match:
        raise ParityError("no 'usecs/op' line in perf bench output:\n" + stdout[-800:])
    return float(match.group(1))


def require_perf() -> str:
    perf = shutil.which("perf")
    if not perf:
        raise ParityError("perf is not installed: 'sudo apt-get install linux-perf' "
                          "(tools/setup parity does it as root)")
    probe = subprocess.run([perf, "bench", "--help"], capture_output=True, text=True)
    if "bench" not in (probe.stdout + probe.stderr):
        raise ParityError("'%s bench' does not run here: %s" % (perf, probe.stderr[-300:]))
    return perf


def build_binary(target: str) -> str:
    """Builds //benchmarks:<target> as `run` does and returns the binary's path."""
    try:
        path = runner.build(target, setup=None)  # tools/perfscale parity ran tools/setup
    except runner.BuildError as err:
        raise ParityError(str(err)) from None
    if not os.access(path, os.X_OK):
        raise ParityError("built, but %s is not there" % path)
    return path


def run_reference(case: Case) -> float:
    result = subprocess.run(case.reference_cmd, capture_output=True, text=True, cwd=case.cwd)
    if result.returncode != 0:
        raise ParityError("%s failed (exit %d):\n%s" % (" ".join(case.reference_cmd),
                                                        result.returncode,
                                                        (result.stderr or result.stdout)[-800:]))
    return case.reference_parse(result.stdout + result.stderr)


def run_benchmark_json(cmd: List[str]) -> List[dict]:
    """Runs one of our benchmark binaries (cmd includes --benchmark_format=json) and
    returns its per-repetition runs; a failed, skipped or errored run raises."""
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise ParityError("%s failed (exit %d):\n%s" % (" ".join(cmd), result.returncode,
                                                        result.stderr[-800:]))
    return parse_benchmark_json(result.stdout, " ".join(cmd))


def parse_benchmark_json(text: str, what: str) -> List[dict]:
    """The per-repetition runs of our binary's JSON output `text` (from command `what`);
    an errored or skipped run, or none at all, raises."""
    try:
        report = json.loads(text)
    except ValueError as err:
        raise ParityError("%s printed no valid JSON (%s)" % (what, err))
    runs = [b for b in report.get("benchmarks", []) if b.get("run_type") == "iteration"]
    for run in runs:
        reason = io.untimed_reason(run)  # a skip has no timing either
        if reason is not None:
            raise ParityError("%s: %s" % (run.get("name"), reason))
    if not runs:
        raise ParityError("%s ran no benchmark" % what)
    return runs


def run_ours(binary: str, case: Case, reference_figure: Optional[float] = None) -> float:
    cmd = [binary, "--benchmark_format=json"] + case.ours_args
    if case.ours_min_time is not None and reference_figure is not None:
        # Google Benchmark's shortest sensible loop is 10 ms.
        cmd.append("--benchmark_min_time=%.3fs" % max(0.01, case.ours_min_time(reference_figure)))
    if case.ours_repetitions > 1:
        cmd += ["--benchmark_repetitions=%d" % case.ours_repetitions]
    runs = run_benchmark_json(cmd)
    names = sorted({b.get("name") for b in runs})
    if len(names) != 1 or len(runs) != max(1, case.ours_repetitions):
        raise ParityError("%s ran %d runs of %s, expected %d runs of exactly 1 benchmark" %
                          (" ".join(cmd), len(runs), names, max(1, case.ours_repetitions)))
    for run in runs:
        if case.ours_counter not in run:
            raise ParityError("%s has no counter '%s'" % (run.get("name"), case.ours_counter))
    return statistics.median(float(run[case.ours_counter]) for run in runs)


def spread_pct(values: List[float]) -> float:
    """(max - min) / median, in percent: what a reader sees as run-to-run swing."""
    median = statistics.median(values)
    return 100.0 * (max(values) - min(values)) / median if median else math.inf


def run_parity(target: str, cases: List[Case], args, reference_name: str = "perf bench") -> int:
    """Runs every case args.rounds times, interleaved; prints the table; returns the exit
    code: 0 when every gating case is within tolerance, 1 otherwise, 2 on a setup
    problem."""
    try:
        require_perf()
        binary = build_binary(target)
        cases = [c for c in cases if args.only in c.label]
        if not cases:
            raise ParityError("no case matches --only=%r" % args.only)
        reference = {c.label: [] for c in cases}
        ours = {c.label: [] for c in cases}
        for round_index in range(args.rounds):
            for case in cases:
                reference[case.label].append(run_reference(case))
                ours[case.label].append(run_ours(binary, case, reference[case.label][-1]))
            print("round %d/%d done" % (round_index + 1, args.rounds), file=sys.stderr)
    except ParityError as err:
        print("perfscale parity: %s" % err, file=sys.stderr)
        return 2

    rows = [summary_row(case.label, case.unit, reference[case.label], ours[case.label],
                        case.gating, args.tolerance) for case in cases]
    print_table(rows, reference_name, args)
    write_json(args.json, target, args.rounds, rows)
    return 0 if all(r["within_tolerance"] for r in rows if r["gating"]) else 1


def summary_row(label: str, unit: str, reference: List[float], ours: List[float],
                gating: bool, tolerance: float) -> dict:
    """One case's row: medians of both sides, ours / reference, each side's spread, and
    whether the ratio is within +-tolerance percent (only a gating row's is judged)."""
    ref_median = statistics.median(reference)
    our_median = statistics.median(ours)
    ratio = our_median / ref_median if ref_median > 0 else math.inf
    return {
        "case": label, "unit": unit,
        "reference_median": ref_median, "ours_median": our_median, "ratio": ratio,
        "reference_spread_pct": spread_pct(reference), "ours_spread_pct": spread_pct(ours),
        "gating": gating,
        "within_tolerance": abs(ratio - 1.0) * 100.0 <= tolerance,
        "reference_values": list(reference), "ours_values": list(ours),
    }


def off_by(row) -> str:
    return "OFF by %.0f%%" % ((row["ratio"] - 1) * 100)


def print_rows(rows, columns, verdict: Callable[[dict], str], footer: str) -> None:
    """A table of rows: `columns` is [(heading, width, format of the value, key)], the
    case label first and the verdict last."""
    width = max(len(r["case"]) for r in rows)
    header = "  ".join(["%-*s" % (width, "case")] +
                       ["%*s" % (w, title[:w]) for title, w, _f, _k in columns] + ["verdict"])
    print(header)
    print("-" * len(header))
    for r in rows:
        print("  ".join(["%-*s" % (width, r["case"])] +
                        [(fmt % r[key]).rjust(w) for _t, w, fmt, key in columns] +
                        [verdict(r)]))
    print(footer)


def print_table(rows, reference_name: str, args) -> None:
    def verdict(r):
        return "reference" if not r["gating"] else "ok" if r["within_tolerance"] else off_by(r)
    print_rows(rows, [(reference_name, 14, "%.3f", "reference_median"),
                      ("perfscale", 14, "%.3f", "ours_median"), ("ratio", 7, "%.3f", "ratio"),
                      ("ref spread", 10, "%.1f%%", "reference_spread_pct"),
                      ("our spread", 10, "%.1f%%", "ours_spread_pct")], verdict,
               "medians of %d interleaved rounds; spread = (max - min) / median; "
               "tolerance %.0f%%; unit %s" % (args.rounds, args.tolerance, rows[0]["unit"]))


def write_json(path: str, target: str, rounds: int, rows) -> None:
    if path:
        with open(path, "w") as f:
            json.dump({"target": target, "rounds": rounds, "rows": rows}, f, indent=1)
