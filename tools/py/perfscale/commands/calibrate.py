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
"""

import argparse
import datetime
import math
import os
import shlex
import statistics
import sys
import time

from perfscale import options
from perfscale.gate import stats
from perfscale.history import store
from perfscale.suite import nightly
from perfscale.results import io, names
from perfscale.gate import floors
from perfscale.suite import inject
from perfscale.gate import comparability

DEFAULT_RUNS = 8


def parse_args(argv):
    ours, run_args = options.split_run_args(argv)
    parser = argparse.ArgumentParser(
        prog="tools/perfscale calibrate",
        description="Measure each benchmark's A/A noise floor and minimum detectable "
                    "change on this host; store them in the history for nightly.")
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, metavar="K",
                        help="runs with no change (default %%(default)s; at least %d)"
                        % floors.MIN_RUNS)
    parser.add_argument("--repetitions", type=int, default=nightly.DEFAULT_REPETITIONS,
                        metavar="N", help="repetitions per run, as nightly "
                        "(default %(default)s)")
    options.add_strength_option(parser, 2)
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


def _clock(seconds):
    seconds = int(round(seconds))
    return "%d:%02d:%02d" % (seconds // 3600, seconds // 60 % 60, seconds % 60)


def _wait_for_turn(args, index, started):
    """With --over, idles until run `index`'s even share of the stretch has come; a run
    that took longer than its share delays the rest, never shortens a gap below zero."""
    if not args.over or index == 0:
        return
    due = started + index * args.over / args.runs
    wait = due - time.monotonic()
    if wait > 0:
        print("calibrate: run %d of %d starts at +%s (--over %s); idle until then"
              % (index + 1, args.runs, _clock(due - started), _clock(args.over)), flush=True)
        time.sleep(wait)


def _run(args, run_args, folder, label):
    status, path = nightly.run_suite(nightly.runner_command(args), args.repetitions,
                                     os.path.join(folder, label + ".json"), run_args)
    if status != 0:
        raise RuntimeError("run %s failed with exit status %d" % (label, status))
    try:
        return io.load_results(path)
    except io.ResultsError as err:
        raise RuntimeError("run %s: unusable results: %s" % (label, err)) from None


def _median_change(base_runs, run, name):
    medians = [statistics.median(r.entries[name].real_ns) for r in base_runs
               if name in r.entries and r.entries[name].real_ns]
    entry = run.entries.get(name)
    if not medians or entry is None or not entry.real_ns:
        return None
    return stats.change(statistics.median(medians), statistics.median(entry.real_ns))


def main(argv):
    args, run_args = parse_args(argv)
    config = args.config if args.config is not None else shlex.join(run_args)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    folder = os.path.join(os.path.abspath(args.out_dir), stamp)
    try:
        os.makedirs(folder, exist_ok=True)
        conn = store.open_history(args.history)
    except OSError as err:
        print("calibrate: cannot create %s: %s" % (folder, err.strerror), file=sys.stderr)
        return 2
    except store.HistoryError as err:
        print("calibrate: %s" % err, file=sys.stderr)
        return 2
    try:
        return _calibrate(args, run_args, config, folder, conn)
    except RuntimeError as err:
        print("calibrate: %s; nothing stored" % err, file=sys.stderr)
        return 2
    except store.HistoryError as err:
        print("calibrate: %s" % err, file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # a spread calibration waits for hours: Ctrl-C is expected
        print("calibrate: interrupted; nothing stored", file=sys.stderr)
        return 130
    finally:
        conn.close()


def _calibrate(args, run_args, config, folder, conn):
    injected, size = None, ""
    if not args.no_inject and nightly.runner_command(args) is None:
        refused = inject.refusal_here(args.inject_events)
        if refused:
            print("SKIPPED: the injected run: %s (use --no-inject)" % refused)
            return 2
    runs = []
    started = time.monotonic()
    for index in range(args.runs):
        _wait_for_turn(args, index, started)
        runs.append(_run(args, run_args, folder, "aa-%d" % (index + 1)))
        if index == args.runs // 2 - 1 and not args.no_inject:
            # In the middle, so that drift over the calibration falls on both sides. The
            # binary holds the injector and sizes it with its bare loop first, where it
            # runs: in a guest, the guest's kernel is the one slowed.
            injected = _run(args, inject.injected_run_args(run_args, args.inject_events),
                            folder, "injected")
            size = inject.describe_cost(injected)
            print("calibrate: injector: " + size, flush=True)
    if args.over:
        print("calibrate: the runs spanned %s" % _clock(time.monotonic() - started), flush=True)
    first = runs[0]
    if (first.host, first.cpus) != (runs[-1].host, runs[-1].cpus):
        raise RuntimeError("the runs were on different machines")
    machine = store.RunInfo.from_results(first, config, run_args, args.repetitions).machine
    for results in runs:  # a lineage never mixes timings with and without the counters
        store.check_attribution(
            store.RunInfo.from_results(results, config, run_args, args.repetitions),
            store.find_baselines(conn, first.host, first.cpus, config, 1, machine))
    learned = floors.learn([r.entries for r in runs], args.alpha)
    for (name, metric), calibration in learned.items():
        if injected is not None and metric == stats.REAL_TIME:
            calibration.injected_change = _median_change(runs, injected, name)
    store.store_calibration(conn, first.host, first.cpus, config, learned.values(), machine)
    # The runs with no change are also the lineage's first baseline: the nightly judges
    # against the mean of its last passing runs, and these are as good as any.
    for results in runs:
        run_id = store.record_run(conn, store.RunInfo.from_results(
            results, config, run_args, args.repetitions), results, [], None)
        store.mark_complete(conn, run_id)
    print(format_table(learned, size))
    print("calibrate: stored %d benchmarks' floors for host %s, %d CPUs, config '%s' in %s"
          % (sum(1 for _n, m in learned if m == stats.REAL_TIME), first.host,
             first.cpus, config, store.describe(args.history)))
    hint = clock_hint(learned, comparability.clock(first.context))
    if hint:
        print("calibrate: " + hint)
    return 0


def clock_hint(calibrations, clock):
    """What to do when the host hides a 10% slowdown from whole families: the families
    without a benchmark of MDC <= 10%, and the clock it cannot move; '' when none."""
    if clock == "instructions":
        return ""
    families = {}
    for (_name, metric), c in calibrations.items():
        if metric == stats.REAL_TIME:
            family = names.parse_name(c.name).family
            families[family] = min(families.get(family, math.inf), c.mdc)
    blind = sorted(f for f, mdc in families.items() if not mdc <= floors.DETECTABLE)
    if not blind:
        return ""
    return ("%d of %d families have no benchmark that can detect a 10%% slowdown on this "
            "host (%s): its timings move more than that between runs. --guest KERNEL runs "
            "the suite on QEMU's instruction clock, which the host cannot move (docs/gate.md, "
            "'A clock the host cannot move')" % (len(blind), len(families), ", ".join(blind)))


def _pct(value):
    return "%+.1f%%" % (100 * value) if value is not None and math.isfinite(value) else "-"


def format_table(calibrations, injector=""):
    """The calibration as a text table: what the gate can tell apart, per benchmark."""
    rows = sorted((c for (_n, m), c in calibrations.items() if m == stats.REAL_TIME),
                  key=lambda c: c.mdc)
    lines = ["%-100s %8s %9s %9s %9s" % ("benchmark", "sigma", "floor", "MDC", "injected")]
    for c in rows:
        label = names.display_name(c.name)
        lines.append("%-100s %7.1f%% %9s %9s %9s" % (label, 100 * c.sigma, _pct(c.noise_floor),
                                                     _pct(c.mdc), _pct(c.injected_change)))
    detectable = sum(1 for c in rows if c.mdc <= floors.DETECTABLE)
    lines.append("%d of %d benchmarks can detect a 10%% slowdown (MDC <= 10%%)%s"
                 % (detectable, len(rows), "; injector: " + injector if injector else ""))
    best = {}
    for c in rows:  # sorted by MDC: the first of each family is its most sensitive
        best.setdefault(names.parse_name(c.name).family, c)
    for family, c in sorted(best.items()):
        lines.append("%s: smallest MDC %s (%s)" % (family, _pct(c.mdc), c.name))
    return "\n".join(lines)
