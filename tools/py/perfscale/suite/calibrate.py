"""Calibration as a library (`tools/perfscale calibrate`): learn what the nightly gate can
tell apart on this host.

Runs the nightly's suite K times with no change (consecutive runs are A/A pairs), then
once with the injector on, and stores per benchmark, in the history, for the lineage: the
noise floor, the MDC and the injected change (perfscale.gate.floors); the runs with no
change also become the lineage's baseline. Settings are the command's options, typed;
run() prints what it does and returns the exit status.
"""

import dataclasses
import datetime
import math
import os
import shlex
import statistics
import sys
import time
from typing import Optional

from perfscale.gate import comparability, floors, stats
from perfscale.history import store
from perfscale.results import io, names
from perfscale.suite import inject, nightly

DEFAULT_RUNS = 8
DEFAULT_INJECT_EVENTS = 2


@dataclasses.dataclass(kw_only=True)
class Settings(nightly.Lineage):
    """What one `tools/perfscale calibrate` does: its options, typed (the command parses and
    checks them). The lineage as nightly's; over: seconds the runs' starts are spread over
    (None: back to back)."""
    out_dir: str
    runs: int = DEFAULT_RUNS
    repetitions: int = nightly.DEFAULT_REPETITIONS
    over: Optional[float] = None
    no_inject: bool = False
    inject_events: int = DEFAULT_INJECT_EVENTS
    alpha: float = stats.DEFAULT_ALPHA


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


def run(args, run_args):
    """Calibrates with Settings `args` and RUN_ARGS: 0 stored, 2 the runs failed (nothing
    stored), 130 interrupted."""
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
