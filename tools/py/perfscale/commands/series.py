"""`tools/perfscale series`: the suite on every kernel of a list, each release judged
against the one before it, every step found profiled, looked up in the sources and
written up (perfscale.suite.series; this command parses the options and prints).

    tools/perfscale series [--kernels K1,K2,...|@FILE] [--cpus N] [--mem MIB]
        [--clock auto|instructions|real] [--timeout S] [--append ARGS] [--repetitions N]
        [--out DIR] [--history DB] [gate options] [--no-profile] [--no-sources]
        [-- RUN OPTIONS [-- FLAGS...]]

Kernels (default: each Debian release line's newest cloud kernel, oldest first) are
measured in the order given, each in a guest of the same shape, and each is judged
against the one measured before it; a kernel listed twice is measured twice (an A/A).
RUN OPTIONS are `tools/perfscale run`'s (default --quick: every family's quick rows;
--family NAME, -- --benchmark_filter=REGEX choose rows). The series' folder (--out,
default results/series) keeps every run, the step pages (steps/), the plots and
index.md; run the same command again and what was measured is not measured again.
"""

import argparse
import os
import subprocess
import sys

from perfscale import options
from perfscale.gate import stats, steps
from perfscale.history import store
from perfscale.suite import runner, series
from perfscale.vm import errors, kernel, qemu

DEFAULT_OUT = os.path.join(runner.REPO_ROOT, "results", "series")
OURS = {"repetitions": "--repetitions", "out": "--out", "plan": "--plan",
        "profile": "--profile"}


def kernel_list(text):
    if text.startswith("@"):
        with open(text[1:], encoding="utf-8") as f:
            return [line.strip() for line in f if line.strip() and not line.startswith("#")]
    return [k.strip() for k in text.split(",") if k.strip()]


def main(argv):
    ours, run_args = options.split_run_args(argv)
    parser = argparse.ArgumentParser(
        prog="tools/perfscale series",
        usage="%(prog)s [--kernels K1,K2,...|@FILE] [options] [-- RUN OPTIONS [-- FLAGS]]",
        description="Run the suite on every kernel of a list in guests of one shape, judge "
                    "each release against the one before it, and profile, look up in the "
                    "sources and write up every step found (docs/series.md).")
    parser.add_argument("--kernels", metavar="K1,K2,...|@FILE",
                        help="kernels in order (each %s), or a file of them; default: "
                        "debian:LINE-cloud for every release line the archive holds, oldest "
                        "first (`tools/perfscale vm kernel` lists them)" % options.KERNEL_HELP)
    parser.add_argument("--cpus", type=int, default=1, metavar="N",
                        help="the guests' vCPUs (default %(default)s)")
    parser.add_argument("--mem", type=int, default=1024, metavar="MIB",
                        help="the guests' memory (default %(default)s)")
    parser.add_argument("--clock", default="auto", metavar="auto|instructions|real",
                        help="instructions: QEMU's instruction clock (Debian's 5.10 and "
                        "6.1 boot on it with 1 vCPU only); real: the guest's real time "
                        "(TCG: judged on the counts only); auto (the default): "
                        "instructions with 1 vCPU, real with more")
    parser.add_argument("--timeout", type=int, default=series.DEFAULT_TIMEOUT_S, metavar="S",
                        help="seconds one guest may take (default %(default)s)")
    parser.add_argument("--append", default="", metavar="ARGS",
                        help="more kernel command-line arguments")
    parser.add_argument("--repetitions", type=int, default=10, metavar="N",
                        help="repetitions of each benchmark in each guest (default "
                        "%(default)s; the gate judges from --min-repetitions)")
    parser.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                        help="the series' folder: runs, step pages, plots, index.md; run "
                        "again, what it holds is not measured again (default %s)"
                        % os.path.relpath(DEFAULT_OUT, runner.REPO_ROOT))
    options.add_history_option(parser)
    options.add_gate_options(parser, None, "the threshold on the instruction clock, %g on "
                             "real time" % stats.DEFAULT_BETWEEN_RUNS_FLOOR_PCT)
    parser.add_argument("--no-profile", action="store_true",
                        help="do not profile the flagged steps' kernels")
    parser.add_argument("--no-sources", action="store_true",
                        help="do not fetch the releases' sources to explain the steps")
    args = parser.parse_args(ours)
    try:
        kernels = (kernel_list(args.kernels) if args.kernels is not None
                   else series.default_kernels())
    except OSError as err:
        parser.error("--kernels: %s" % (err.strerror or err))
    if not kernels:
        parser.error("--kernels names no kernel")
    for spec in kernels:
        if not spec.startswith("debian:") and not os.path.isfile(spec):
            parser.error("--kernels: no such kernel image '%s' (a vmlinuz path, or "
                         "debian:...: see `tools/perfscale vm --help`)" % spec)
    if args.clock not in ("auto", "instructions", "real"):
        parser.error("--clock must be auto, instructions or real, got '%s'" % args.clock)
    clock = args.clock if args.clock != "auto" else (
        "instructions" if args.cpus == 1 else "real")
    if args.between_runs_floor is None:
        args.between_runs_floor = steps.between_runs_floor_pct(clock, args.threshold)
    options.check_gate_options(parser, args)
    if args.repetitions < args.min_repetitions:
        parser.error("--repetitions %d: the gate judges a step from %d repetitions "
                     "(--min-repetitions) on each side" % (args.repetitions,
                                                           args.min_repetitions))
    run_args = run_args or ["--quick"]
    try:
        parsed = runner.parse_args(run_args)
        runner.check_family(parsed.family)
    except runner.UsageError as err:
        parser.error("after --: %s" % err)
    except runner.BuildError as err:
        print("perfscale series: %s" % err, file=sys.stderr)
        return err.status
    own = [flag for field, flag in OURS.items() if getattr(parsed, field)]
    if own:
        parser.error("after --: %s %s the series' own to set" % (
            ", ".join(own), "is" if len(own) == 1 else "are"))
    settings = series.Settings(
        kernels=kernels, run_args=run_args, out=args.out, history=args.history,
        cpus=args.cpus, mem=args.mem, clock=clock, timeout=args.timeout, append=args.append,
        repetitions=args.repetitions, gate=options.gate_options(args),
        profile=not args.no_profile, sources=not args.no_sources)
    problem = qemu.machine_problem(settings.machine(""))
    if problem:
        parser.error(problem)
    status = subprocess.call([os.path.join(runner.REPO_ROOT, "tools", "setup"), "vm"])
    if status != 0:
        return status
    try:
        return series.run(settings)
    except (store.HistoryError, errors.VmUsageError, runner.BuildError) as err:
        print("perfscale series: %s" % err, file=sys.stderr)
        return err.status if isinstance(err, runner.BuildError) else 2
    except KeyboardInterrupt:
        print("perfscale series: interrupted; what was measured is kept, and the same "
              "command goes on from there", file=sys.stderr)
        return 130
