"""`tools/perfscale calibrate`: learn what the nightly gate can tell apart on this host.

    tools/perfscale calibrate [--runs K] [--repetitions N] [--inject-events E | --no-inject]
                              [--over S] [--history DB] [--config NAME]
                              [--run-cmd CMD | --guest KERNEL] [-- RUN_ARGS...]

Runs the nightly's suite K times with no change (consecutive runs are A/A pairs), then
once with the injector on (the binary's --inject_syscall_events: real kernel work added
to every syscall of the kernel the suite runs on, its size measured first with a bare
loop), and stores per benchmark, in the history, for the lineage (host, CPUs, config as
nightly names it):

  noise floor  the A/A change the gate must not call a regression (perfscale.gate.floors)
  MDC          the smallest slowdown it flags 9 times in 10 at the nightly default
  injected     the change the injected slowdown made, for comparison with the MDC

and the same for each attributed counter. The MDC is the nightly's: judged against the
mean of up to 8 baseline runs, a suspect confirmed on the median of its first run and
the reruns (perfscale.gate.floors). The runs with no change are recorded in the history
as the lineage's baseline. `nightly` judges against these floors and `report` prints
them. Exit 2 when the runs fail (nothing stored).

--over S spreads the runs' starts evenly over S seconds, idle in between. Back to back,
the runs see minutes of the machine, and a VM's speed also wanders over hours: on this
project's VM, 10 A/A trials over 3 hours spread up to 3x more than the 8 back-to-back
calibration runs before them, so the MDCs those runs gave promised more than the
machine kept.

perfscale.suite.calibrate does the work; this command parses and checks the options.
"""


import argparse
import dataclasses
import math
import os

from perfscale import options
from perfscale.gate import floors, stats
from perfscale.suite import calibrate, nightly


def parse_args(argv):
    ours, run_args = options.split_run_args(argv)
    parser = argparse.ArgumentParser(
        prog="tools/perfscale calibrate",
        description="Measure each benchmark's A/A noise floor and minimum detectable "
                    "change on this host; store them in the history for nightly.")
    parser.add_argument("--runs", type=int, default=calibrate.DEFAULT_RUNS, metavar="K",
                        help="runs with no change (default %%(default)s; at least %d)"
                        % floors.MIN_RUNS)
    parser.add_argument("--repetitions", type=int, default=nightly.DEFAULT_REPETITIONS,
                        metavar="N", help="repetitions per run, as nightly "
                        "(default %(default)s)")
    options.add_strength_option(parser, calibrate.DEFAULT_INJECT_EVENTS)
    parser.add_argument("--over", type=float, metavar="S",
                        help="spread the runs' starts evenly over S seconds, idle between "
                        "them (default: back to back)")
    parser.add_argument("--no-inject", action="store_true",
                        help="skip the injected run (no system-wide tracepoint access)")
    options.add_lineage_options(parser, "configuration name, as nightly's (default: the run "
                                "arguments)", "a command that runs the suite instead, as "
                                "nightly's --run-cmd (default: $PERFSCALE_RUN_CMD, else the "
                                "suite runs here)")
    parser.add_argument("--out-dir", default=os.path.join(nightly.REPO_ROOT, "results",
                                                          "calibrate"), metavar="DIR",
                        help="where the runs' results go (default results/calibrate)")
    parser.add_argument("--alpha", type=float, default=stats.DEFAULT_ALPHA,
                        help="family-wise false-alarm rate the floors are set for "
                        "(default %(default)s)")
    args = parser.parse_args(ours)
    options.check_lineage_options(parser, args)
    if args.runs < floors.MIN_RUNS:
        parser.error("--runs must be at least %d" % floors.MIN_RUNS)
    if args.repetitions < 2:
        parser.error("--repetitions must be at least 2")
    if args.over is not None and not (args.over > 0 and math.isfinite(args.over)):
        parser.error("--over must be a positive number of seconds")
    options.check_strength(parser, args.inject_events)
    if not 0 < args.alpha < 1:
        parser.error("--alpha must be between 0 and 1")
    options.check_run_args(parser, args, run_args)
    return args, run_args


def main(argv):
    args, run_args = parse_args(argv)
    settings = calibrate.Settings(**{field.name: getattr(args, field.name)
                                     for field in dataclasses.fields(calibrate.Settings)})
    return calibrate.run(settings, run_args)
