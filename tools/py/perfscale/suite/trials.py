"""The trials as a library: does the calibrated gate keep its promises on this machine?

`tools/perfscale trials` (perfscale.commands.trials, whose documentation says what the
trials do and print) parses its options into Settings and calls run(). Here: the A/A and
injected nightlies on copies of the calibrated history, kept trials (--resume) and their
replay by this checkout's gate (--replay), the injected slowdown's true sizes (an untimed
syscall count and the injector's measured cost), the A/A spread against the calibrated
sigma, the promise and the tables.
"""

import dataclasses
import hashlib
import json
import math
import os
import shlex
import shutil
import statistics
import sys
import time
from typing import Optional

from perfscale.gate import confirm, stats
from perfscale.gate.floors import BASELINE_RUNS, DETECTABLE, MIN_RUNS, floor_and_mdc, for_lineage
from perfscale.history import store, transfer
from perfscale.suite import inject, nightly, runner
from perfscale.results import io, names

DEFAULT_TRIALS = 10
DEFAULT_INJECT_EVENTS = 16  # the injector's strength: events per CPU and tracepoint
POWER_TRIALS_FLAGGED = 0.9


@dataclasses.dataclass(kw_only=True)
class Settings(nightly.Lineage):
    """What one `tools/perfscale trials` does: its options, typed (the command parses
    them). history: the calibrated history, read and never changed (a server's is copied
    into out_dir once); the rest of the lineage as nightly's."""
    out_dir: str
    aa: int = DEFAULT_TRIALS
    power: int = DEFAULT_TRIALS
    inject_events: int = DEFAULT_INJECT_EVENTS
    budget: Optional[float] = None  # seconds after which no trial starts
    resume: bool = False
    replay: bool = False


def run(args, run_args):
    """The trials with Settings `args` and RUN_ARGS (`tools/perfscale trials`); prints
    the tables and returns the exit status: 0 the promise is kept, 1 not, 2 the trials
    could not be run or judged."""
    config = args.config if args.config is not None else shlex.join(run_args)
    try:
        if store.is_server(args.history):
            # Each trial's nightly needs its own copy of the history to write into; a
            # server's is taken once, into a local file, and read from there on.
            os.makedirs(args.out_dir, exist_ok=True)
            args.history = transfer.snapshot_to_sqlite(
                args.history, os.path.join(os.path.abspath(args.out_dir), "history.sqlite"))
        conn = store.open_history(args.history, read_only=True)  # each trial writes a copy
    except (OSError, store.HistoryError) as err:
        print("trials: %s" % err, file=sys.stderr)
        return 2
    try:
        lineages = store.calibrated_lineages(conn, config)
        if not lineages:
            print("trials: config '%s' is not calibrated in %s: run `tools/perfscale "
                  "calibrate --config '%s' -- RUN_ARGS` first" % (config, args.history, config),
                  file=sys.stderr)
            return 2
        host, cpus, machine = lineages[0]
        calibration = store.load_calibration(conn, host, cpus, config, machine)
        base_rows = store.find_baselines(conn, host, cpus, config, BASELINE_RUNS, machine)
        base_runs = [store.load_entries(conn, row["id"]) for row in base_rows]
    finally:
        conn.close()
    if args.replay:
        return replay(args, run_args, config, (host, cpus, machine), calibration, base_runs)
    os.makedirs(args.out_dir, exist_ok=True)
    if args.power and nightly.runner_command(args) is None:
        refused = inject.refusal_here(args.inject_events)
        if refused:
            print("SKIPPED: the injected trials: %s" % refused)
            return 2
    digest = _digest(args.history)
    per_ns = true_sizes(args, run_args, base_runs)
    outcomes = {"aa": [], "power": []}
    costs = []  # each power trial's injector cost, ns per syscall
    started = time.monotonic()
    order = ["aa", "power"] * max(args.aa, args.power)
    counts = {"aa": 0, "power": 0}
    for kind in order:
        if counts[kind] >= (args.aa if kind == "aa" else args.power):
            continue
        index = counts[kind] + 1
        kept = _kept_trial(args, config, digest, kind, index) if args.resume else None
        if isinstance(kept, str):
            print("trials: %s" % kept, file=sys.stderr)
            return 2
        if kept is None and args.budget is not None and (
                time.monotonic() - started > args.budget):
            print("trials: the %.0f s budget is spent: %d A/A and %d injected trials ran"
                  % (args.budget, counts["aa"], counts["power"]))
            break
        counts[kind] = index
        status, flagged, cost = kept or _trial(args, run_args, config, digest, kind, index)
        if kind == "power" and not kept and cost is None:
            # The injected nightly never ran with the injector on: nothing to count.
            print("trials: %s %d: the injected nightly ran no injected run (exit %d; see %s); "
                  "the trials before it have their trial.json (--resume)"
                  % (kind, index, status, os.path.join(_trial_folder(args, kind, index),
                                                       "nightly.log")), file=sys.stderr)
            return 2
        outcomes[kind].append((status, flagged))
        if kind == "power":
            costs.append(cost)
        print("trials: %s %d: %sexit %d, flagged %d: %s" % (
            kind, index, "kept from an earlier run: " if kept else "", status, len(flagged),
            ", ".join(flagged)), flush=True)
    cost = _injector_cost(costs)
    sizes = {name: fraction * cost for name, fraction in per_ns.items()} if cost else {}
    print(format_tables(outcomes, calibration, sizes, args,
                        aa_spread(args, len(outcomes["aa"]))))
    return exit_status(outcomes, calibration, sizes)


def _injector_cost(costs):
    """ns added per syscall to state the true sizes at: the median of the power trials' own
    bare-loop measurements, each the mean over its runs (every injected run sizes the
    injector where it runs, before its benchmarks). The cost follows a host's speed (here
    745, 1104 and 1353 ns in three sessions), so one measurement would misstate it. None
    without any: trials recorded before the cost was kept per trial."""
    measured = [c for c in costs if c is not None]
    if not measured:
        if costs:
            print("trials: the %d injected trials recorded no injector cost: no true sizes"
                  % len(costs))
        return None
    print("trials: injector cost over the %d injected trials: %s ns per syscall; true sizes "
          "at their median%s" % (len(costs), ", ".join("%.0f" % c for c in measured),
                                 "" if len(measured) == len(costs) else
                                 " (%d kept trials had no measurement of their own)"
                                 % (len(costs) - len(measured))))
    return statistics.median(measured)


def true_sizes(args, run_args, base_runs):
    """{name: the injected slowdown per ns added to each syscall, as a fraction of its
    time}, where its syscalls were counted; from one untimed run with --count_syscalls."""
    path = os.path.join(os.path.abspath(args.out_dir), "syscalls.json")
    extra = list(run_args) + ([] if "--" in run_args else ["--"])
    with runner.output_to(os.path.join(args.out_dir, "syscalls.log")):
        status, path = nightly.run_suite(nightly.runner_command(args), 1, path,
                                         extra + ["--attribution=true",
                                                  "--count_syscalls=true"])
    if status != 0:
        print("trials: the syscall count run failed (exit %d): no true sizes" % status)
        return {}
    return sizes_per_ns(io.load_results(path), base_runs)


def sizes_per_ns(counted, base_runs):
    """true_sizes from the count run's results."""
    pooled = stats.pool(base_runs)
    sizes = {}
    for name, entry in counted.entries.items():
        per_unit = [(c, v) for c, v in entry.counters.items() if c.startswith("syscalls/")]
        base = pooled.get(name)
        if not per_unit or base is None or not base.real_ns:
            continue
        counter, values = per_unit[0]
        per_iteration = statistics.median(values) * units_per_iteration(
            entry, counter.split("/", 1)[1])
        sizes[name] = per_iteration / statistics.median(base.real_ns)
    return sizes


def units_per_iteration(entry, unit):
    """How many of a row's units (op, fd, record) one iteration holds: its count counter
    (fds, records) where it has one, else its time per iteration over its time per unit
    (an iteration of BM_BreakpointThread is --breakpoint_repeat batches of threads, and
    its usecs/op and syscalls/op are per thread: 200 ops in the quick suite, not 1), else
    1."""
    if entry.counters.get(unit + "s"):
        return statistics.median(entry.counters[unit + "s"])
    per_unit_us = entry.counters.get("usecs/" + unit)
    times = [t for t in entry.real_ns if math.isfinite(t) and t > 0]
    if per_unit_us and times and statistics.median(per_unit_us) > 0:
        # Both from the same repetitions: a ratio of counts, whatever the run's speed.
        return statistics.median(t / (1000 * u) for t, u in zip(entry.real_ns, per_unit_us)
                                 if math.isfinite(t) and t > 0 and u > 0)
    return 1.0


TRIAL_RECORD = "trial.json"


def replay(args, run_args, config, lineage, calibration, base_runs):
    """`--replay`: the recorded trials judged again by this checkout's gate; nothing runs."""
    nightly_args = nightly.Settings(history=args.history, config=config, no_plots=True)
    gate = nightly_args.gate_options()
    conn = store.open_history(args.history, read_only=True)  # its digest keys the trials
    try:
        host, cpus, machine = lineage
        floors, _source = for_lineage(conn, host, cpus, config, gate.alpha, machine)
    finally:
        conn.close()
    digest = _digest(args.history)
    outcomes, costs, left_out = {"aa": [], "power": []}, [], []
    numbers = {"aa": [], "power": []}
    for kind, count in (("aa", args.aa), ("power", args.power)):
        for index in range(1, count + 1):
            kept = _kept_trial(args, config, digest, kind, index)
            if isinstance(kept, str):
                print("trials: %s" % kept, file=sys.stderr)
                return 2
            replayed = None if kept is None else _replay_trial(
                nightly_args, base_runs, gate, floors, _trial_folder(args, kind, index))
            if isinstance(replayed, str) or kept is None:
                left_out.append("%s %d (%s)" % (kind, index, replayed or "not recorded"))
                continue
            status, flagged = replayed
            outcomes[kind].append((status, flagged))
            numbers[kind].append(index)
            if kind == "power":
                costs.append(kept[2])
            print("trials: replay of %s %d: exit %d (recorded %d), flagged %d (recorded %d): %s"
                  % (kind, index, status, kept[0], len(flagged), len(kept[1]),
                     ", ".join(flagged)), flush=True)
    if left_out:
        print("trials: not replayed: %s" % "; ".join(left_out))
    if not outcomes["aa"] and not outcomes["power"]:
        print("trials: no trial in %s could be replayed" % args.out_dir, file=sys.stderr)
        return 2
    sizes = {}
    measured = [c for c in costs if c is not None]
    counted = os.path.join(os.path.abspath(args.out_dir), "syscalls.json")
    try:
        per_ns = sizes_per_ns(io.load_results(counted), base_runs)
    except io.ResultsError as err:
        print("trials: no true sizes: the trials' syscall count: %s" % err)
        per_ns = {}
    if outcomes["power"] and not measured:
        print("trials: the injected trials recorded no injector cost (trials before "
              "injector_ns was kept): no true sizes")
    if per_ns and measured:
        cost = _injector_cost(measured)
        sizes = {name: fraction * cost for name, fraction in per_ns.items()}
    print("replayed: the runs the trials recorded, judged by this checkout's gate; nothing ran")
    print(format_tables(outcomes, calibration, sizes, args, aa_spread(args, args.aa),
                        numbers))
    return exit_status(outcomes, calibration, sizes)


def _replay_trial(nightly_args, base_runs, gate, floors, folder):
    """(exit status, flagged) of one recorded trial judged again, or why it cannot be."""
    run_dirs = sorted(root for root, _dirs, files in os.walk(folder) if "results.json" in files)
    if not run_dirs:
        return "its nightly recorded no run"
    run_dir = run_dirs[0]
    try:
        first = io.load_results(os.path.join(run_dir, "results.json"))
    except io.ResultsError as err:
        return str(err)
    missing = []  # why a rerun the gate asked for cannot be served

    def recorded_rerun(_names, out_path):
        name = os.path.basename(out_path)
        if not os.path.exists(out_path):
            missing.append("the gate asked for %s, which the trial did not record" % name)
            raise confirm.RerunError("%s was not recorded" % name)
        try:
            return io.load_results(out_path)
        except io.ResultsError as err:  # the trial read it; this copy is damaged
            missing.append("the trial's %s is unreadable: %s" % (name, err))
            raise confirm.RerunError(str(err)) from None

    verdicts = nightly.judge(base_runs, first.entries, gate, floors, run_dir,
                             recorded_rerun, nightly_args.confirm_rounds,
                             nightly_args.confirm_budget, nightly_args.ci_target / 100)
    if missing:
        return missing[0]
    return stats.gate_status(verdicts)[0], [v.name for v in verdicts if v.regression]


def _digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _trial_folder(args, kind, index):
    return os.path.join(os.path.abspath(args.out_dir), "%s-%d" % (kind, index))


def _kept_trial(args, config, digest, kind, index):
    """(status, flagged, injector cost) of a finished earlier trial, None where there is
    none to keep, or a message why the folder's trial cannot be kept nor silently
    overwritten."""
    path = os.path.join(_trial_folder(args, kind, index), TRIAL_RECORD)
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
        status, flagged = int(record["status"]), [str(n) for n in record["flagged"]]
        cost = record.get("injector_ns")
        cost = statistics.mean(float(c) for c in cost) if cost else None
        judged_against, judged_config = record["history_sha256"], record["config"]
    except FileNotFoundError:
        return None  # never finished: it runs again
    except (OSError, ValueError, KeyError, TypeError) as err:
        return ("cannot keep %s: %s: it is not a trial record; remove its folder to run "
                "that trial again" % (path, err))
    if judged_against != digest or judged_config != config:
        return ("cannot keep %s: it was judged against another history or config than %s "
                "with config '%s'; use another --out-dir, or drop --resume"
                % (path, args.history, config))
    return status, flagged, cost


def aa_spread(args, trials):
    """{name: sigma of log(median) over the A/A trials' first runs}: the spread between
    runs the calibration's sigma claims, seen over the hours the trials took."""
    logs = {}
    for index in range(1, trials + 1):
        for root, _dirs, files in os.walk(_trial_folder(args, "aa", index)):
            if "results.json" not in files:
                continue
            try:
                entries = io.load_results(os.path.join(root, "results.json")).entries
            except io.ResultsError as err:
                print("trials: A/A trial %d left no usable results (%s): not in the spread"
                      % (index, err))
                continue
            for name, entry in entries.items():
                times = [v for v in entry.real_ns if math.isfinite(v) and v > 0]
                if times:
                    logs.setdefault(name, []).append(math.log(statistics.median(times)))
    return {name: statistics.stdev(values) for name, values in logs.items()
            if len(values) >= MIN_RUNS}


def _trial(args, run_args, config, digest, kind, index):
    """(exit status, flagged benchmarks, injector cost) of one nightly on a copy of the
    history; the cost (ns per syscall, None for A/A or where no injected run finished) is
    the mean of its runs' bare-loop measurements (perfscale.suite.inject.run_cost)."""
    folder = _trial_folder(args, kind, index)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    copy = os.path.join(folder, "history.sqlite")
    shutil.copyfile(args.history, copy)
    settings = nightly.Settings(history=copy, report_dir=folder, config=config,
                                no_plots=True, **nightly.lineage_of(args))
    nightly_run_args = (inject.injected_run_args(run_args, args.inject_events)
                        if kind == "power" else list(run_args))
    with runner.output_to(os.path.join(folder, "nightly.log")):
        status = nightly.run(settings, nightly_run_args)
    flagged, costs = [], []
    for root, _dirs, files in os.walk(folder):
        if "verdicts.json" in files:
            with open(os.path.join(root, "verdicts.json"), encoding="utf-8") as f:
                flagged = json.load(f)["regressions"]
        for name in sorted(files):
            if kind == "power" and (name == "results.json" or (
                    name.startswith("confirm-") and name.endswith(".json"))):
                try:
                    cost = inject.run_cost(io.load_results(os.path.join(root, name)))
                except io.ResultsError:
                    continue
                if cost is not None:
                    costs.append(cost)
    if kind == "power" and not costs:
        return status, flagged, None  # no record: no injected run, so no trial; runs again
    # Written last: a trial killed before this point has no record and runs again.
    with open(os.path.join(folder, TRIAL_RECORD), "w", encoding="utf-8") as f:
        json.dump({"kind": kind, "index": index, "status": status, "flagged": flagged,
                   "config": config, "history_sha256": digest, "injector_ns": costs}, f,
                  indent=1)
    return status, flagged, statistics.mean(costs) if costs else None


def _scope(name, calibration, sizes):
    calibrated = calibration.get((name, stats.REAL_TIME))
    size = sizes.get(name)
    return (calibrated is not None and calibrated.mdc <= DETECTABLE
            and size is not None and size >= DETECTABLE)


def exit_status(outcomes, calibration, sizes):
    """trials' exit status: 0 kept, 1 broken, 2 when the power half could not be judged
    (injected trials without true sizes: no benchmark could be called in scope)."""
    if not promise_kept(outcomes, calibration, sizes):
        return 1
    if outcomes["power"] and not sizes:
        print("trials: the power promise could not be checked without the true sizes; "
              "the A/A promise was kept")
        return 2
    return 0


def promise_kept(outcomes, calibration, sizes):
    aa = outcomes["aa"]
    if aa and sum(1 for status, _f in aa if status == 1) > 0.1 * len(aa):
        return False
    power = outcomes["power"]
    for name in {n for (n, m) in calibration if m == stats.REAL_TIME}:
        if power and _scope(name, calibration, sizes):
            hits = sum(1 for _s, flagged in power if name in flagged)
            if hits < POWER_TRIALS_FLAGGED * len(power):
                return False
    return True


def _pct(value):
    return "%+.1f%%" % (100 * value) if value is not None and math.isfinite(value) else "-"


def _digits(sigma):
    """Decimals for a sigma in percent: two below 1% (the instruction clock's 0.01-0.2%
    would all read 0.0% or 0.1%), one above."""
    return 2 if sigma is not None and 100 * sigma < 1 else 1


UNDERESTIMATED = 1.5  # an A/A spread this many times the calibrated sigma
# ... that also raises the MDC by more than this: on the instruction clock a 0.01% sigma
# seen at 0.02% is twice as wide, and promises the same +5.0% all the same.
MDC_SLACK = 0.01


def underestimated(calibrated, seen, tests):
    """The MDC at the A/A trials' spread `seen`, where the calibration promised materially
    more (a spread UNDERESTIMATED times its sigma, and an MDC over MDC_SLACK higher);
    else None."""
    if seen is None or not seen > UNDERESTIMATED * calibrated.sigma:
        return None
    mdc = floor_and_mdc(seen, stats.DEFAULT_ALPHA, tests,
                                    min(calibrated.runs, BASELINE_RUNS))[1]
    return mdc if mdc > calibrated.mdc + MDC_SLACK else None


def format_tables(outcomes, calibration, sizes, args, spread=None, numbers=None):
    """numbers: {kind: the trials' own numbers}, where some were left out (a replay)."""
    lines = []
    for kind, title in (("aa", "A/A nightlies (no change)"),
                        ("power", "nightlies with the injector on (%d events)"
                         % args.inject_events)):
        if not outcomes[kind]:
            continue
        alarms = sum(1 for status, _f in outcomes[kind] if status == 1)
        lines.append("%s: %d of %d exited 1" % (title, alarms, len(outcomes[kind])))
        lines.append("| trial | exit | flagged |")
        lines.append("|---|---|---|")
        indices = (numbers or {}).get(kind) or range(1, len(outcomes[kind]) + 1)
        for index, (status, flagged) in zip(indices, outcomes[kind]):
            lines.append("| %d | %d | %s |" % (index, status, ", ".join(flagged) or "-"))
        lines.append("")
    power = outcomes["power"]
    spread = spread or {}
    lines.append("| benchmark | MDC | sigma: calibrated, A/A trials | injected slowdown (true "
                 "size) | flagged | in scope |")
    lines.append("|---|---|---|---|---|---|")
    rows = sorted((c for (_n, m), c in calibration.items() if m == stats.REAL_TIME),
                  key=lambda c: c.mdc)
    under = 0
    for c in rows:
        hits = sum(1 for _s, flagged in power if c.name in flagged)
        seen = spread.get(c.name)
        wider = underestimated(c, seen, len(rows))
        under += wider is not None
        lines.append("| %s | %s | %.*f%%, %s%s | %s | %d of %d | %s |" % (
            names.display_name(c.name), _pct(c.mdc), _digits(c.sigma), 100 * c.sigma,
            "%.*f%%" % (_digits(seen), 100 * seen) if seen is not None else "-",
            " (underestimated: MDC %s at that spread)" % _pct(wider) if wider else "",
            _pct(sizes.get(c.name)), hits, len(power),
            "yes" if _scope(c.name, calibration, sizes) else "no"))
    if under:
        lines.append("the A/A trials spread more than %.1fx the calibrated sigma on %d "
                     "benchmark(s), enough to raise their MDCs: they promise more than this "
                     "machine keeps; calibrate again over a longer stretch (--over, more "
                     "--runs)" % (UNDERESTIMATED, under))
    lines.append("in scope: MDC <= 10% and true slowdown >= 10%; promise: at most 1 in 10 A/A "
                 "nightlies exits 1, each in-scope benchmark flagged in >= 9 of 10")
    return "\n".join(lines)
