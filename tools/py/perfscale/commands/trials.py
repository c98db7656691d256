"""`tools/perfscale trials`: does the calibrated gate keep its promises on this machine?

    tools/perfscale trials [--aa N] [--power N] [--inject-events E] [--history DB]
                           [--config NAME] [--out-dir DIR] [--run-cmd CMD | --guest KERNEL]
                           [--budget S] [--resume | --replay] [-- RUN_ARGS...]

After `tools/perfscale calibrate` has stored a lineage's floors and baseline runs, runs N
nightlies with no change (A/A) and N with the injector on (perfscale.suite.inject: real
kernel work added to every syscall), alternating, so that drift falls on both. Each trial
is a whole `tools/perfscale nightly` on its own copy of the calibrated history: every
trial meets the same baseline and none becomes the next one's, and the history itself is
left as it was.

The injector is the binary's own (--inject_syscall_events=E, lib/syscall_injector.h), so it
slows the kernel the suite runs on, a --guest's too. The injected slowdown's true size
comes from outside Google Benchmark: before its benchmarks each injected run times a bare
getppid() loop without and with the events and records the nanoseconds added per
syscall in its context (a trial's cost is the mean over its runs, and the median over the
trials is used), and one untimed run with `--count_syscalls` gives each benchmark's
syscalls per iteration; their product over the baseline's time per iteration is the
slowdown the injector really causes there.

Each trial leaves `trial.json` (its exit status, what it flagged, and a digest of the
history it was judged against) in its folder. `--resume` keeps the trials an earlier,
interrupted `trials` left in --out-dir and runs only the missing ones: 20 trials take
hours, and a night rarely stays quiet that long. A kept trial must have been judged
against the same calibrated history; one that was not is refused, never mixed in.

`--replay` runs nothing: it judges the runs the trials in --out-dir recorded (each
nightly's first run and its confirmation reruns) again with this checkout's gate, against
the same history, and prints the same tables. A change to the gate's statistics can so be
checked against hours of recorded trials in seconds. A trial whose replayed gate asks for
a rerun that was not recorded cannot be replayed, and is left out and named; the reruns
take no time in a replay, so the confirmation budget never ends them early.

Prints the A/A table (trial, exit status, benchmarks flagged), the power table, and per
benchmark: its MDC, its sigma as calibrated and as the A/A trials' first runs spread
(hours, not the calibration's minutes: where it is much larger, the MDC promises too
much), the injected slowdown's true size, and how often it was flagged. The
promise checked: at most 10% of A/A nightlies exit 1, and every benchmark whose MDC is at
most 10% and whose true slowdown is at least 10% is flagged in 9 of 10 injected trials.
Exit 0 when it is kept, 1 when not, 2 when the trials could not be run, or the injected
ones have no true sizes to say which benchmarks the power promise covers.
"""

import argparse
import dataclasses
import os

from perfscale import options
from perfscale.suite import nightly, runner, trials


def parse_args(argv):
    ours, run_args = options.split_run_args(argv)
    parser = argparse.ArgumentParser(
        prog="tools/perfscale trials",
        description="Run A/A and injected-slowdown nightlies against the calibrated "
                    "baseline and report false alarms and power per benchmark.")
    parser.add_argument("--aa", type=int, default=trials.DEFAULT_TRIALS, metavar="N",
                        help="nightlies with no change (default %(default)s)")
    parser.add_argument("--power", type=int, default=trials.DEFAULT_TRIALS, metavar="N",
                        help="nightlies with the injector on (default %(default)s)")
    options.add_strength_option(parser, trials.DEFAULT_INJECT_EVENTS)
    options.add_lineage_options(parser, "configuration name, as calibrate's (default: the run "
                                "arguments)", "a command that runs the suite instead, as "
                                "nightly's --run-cmd (default: $PERFSCALE_RUN_CMD, else the "
                                "suite runs here)", "the calibrated history (default %s); read, "
                                "never changed" % os.path.relpath(options.DEFAULT_HISTORY,
                                                                  runner.REPO_ROOT))
    parser.add_argument("--out-dir", default=os.path.join(nightly.REPO_ROOT, "results",
                                                          "trials"), metavar="DIR",
                        help="where the trials' histories, reports and logs go "
                        "(default results/trials)")
    parser.add_argument("--budget", type=float, metavar="S",
                        help="start no trial after S seconds (default: run them all); the "
                        "tables say how many ran")
    parser.add_argument("--resume", action="store_true",
                        help="keep the finished trials already in --out-dir (judged against "
                        "the same history) and run only the missing ones")
    parser.add_argument("--replay", action="store_true",
                        help="run nothing: judge the runs the trials in --out-dir recorded "
                        "again with this checkout's gate, and print the tables")
    args = parser.parse_args(ours)
    options.check_lineage_options(parser, args)
    if args.replay and args.resume:
        parser.error("--replay judges the recorded trials again and runs none; --resume "
                     "runs the missing ones: give one of them")
    if args.budget is not None and not args.budget > 0:
        parser.error("--budget must be positive")
    if args.aa < 0 or args.power < 0 or args.aa + args.power == 0:
        parser.error("--aa and --power must not be negative, and not both 0")
    options.check_strength(parser, args.inject_events)
    return args, run_args


def main(argv):
    args, run_args = parse_args(argv)
    settings = trials.Settings(**{field.name: getattr(args, field.name)
                                  for field in dataclasses.fields(trials.Settings)})
    return trials.run(settings, run_args)
