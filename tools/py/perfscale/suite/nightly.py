"""The nightly as a library: run the suite, record it in the history, judge it against
its lineage's baseline, write its report (`tools/perfscale nightly`, whose options and
documentation are perfscale.commands.nightly's, declared with the options it shares
with calibrate and trials in perfscale.options). Its runner (here or --run-cmd,
--guest) is shared with calibrate and trials too."""

import dataclasses
import datetime
import errno
import json
import os
import shlex
import subprocess
import sys
from typing import Optional

from perfscale.suite import runner
from perfscale.gate import alerting, stats
from perfscale.gate.floors import BASELINE_RUNS, for_lineage
from perfscale.history import alerts, spool, store
from perfscale.machine import identity
from perfscale.plots.page import Page
from perfscale.results import comparepy, io
from perfscale.results.names import display_name
from perfscale.gate import confirm
from perfscale.suite import guard

REPO_ROOT = runner.REPO_ROOT
# Enough for the U test to call a 20% change significant; see DEFAULT_MIN_REPETITIONS.
DEFAULT_REPETITIONS = 10
_RESULTS_LINE = "results: "  # the last line `tools/perfscale run` prints
DEFAULT_HISTORY_TIMEOUT_S = 120.0


@dataclasses.dataclass(kw_only=True)
class Lineage:
    """What nightly, calibrate and trials share (perfscale.options' lineage options,
    typed): the history; the configuration's name (None: the run arguments); how the
    suite runs: run_cmd, or guest on guest_cpus vCPUs, or neither (here). history has no
    default here: the commands' one default is perfscale.options'."""
    history: str
    config: Optional[str] = None
    run_cmd: Optional[str] = None
    guest: Optional[str] = None
    guest_cpus: Optional[int] = None


@dataclasses.dataclass(kw_only=True)
class Settings(Lineage):
    """What one nightly does: `tools/perfscale nightly`'s options, typed. The command
    parses them (perfscale.commands.nightly); trials builds them for its nightlies."""
    repetitions: int = DEFAULT_REPETITIONS
    baseline: Optional[int] = None
    report_dir: str = os.path.join(REPO_ROOT, "results", "nightly")
    # Where a run waits while the --history server cannot be reached.
    spool: str = spool.default_dir(REPO_ROOT)
    no_plots: bool = False
    confirm_rounds: int = confirm.DEFAULT_ROUNDS
    confirm_budget: float = confirm.DEFAULT_BUDGET_S
    ci_target: float = 100 * confirm.DEFAULT_CI_TARGET  # percent
    alpha: float = stats.DEFAULT_ALPHA
    threshold: float = stats.DEFAULT_THRESHOLD_PCT
    min_repetitions: int = stats.DEFAULT_MIN_REPETITIONS
    between_runs_floor: float = stats.DEFAULT_BETWEEN_RUNS_FLOOR_PCT  # percent, uncalibrated
    # The longest one statement to a history server may go unanswered before the nightly
    # gives up on it and spools its run, as for a server that is gone.
    history_timeout: float = DEFAULT_HISTORY_TIMEOUT_S

    def gate_options(self):
        """The gate's options of this nightly (what counts as a regression)."""
        return stats.Options(alpha=self.alpha, threshold_pct=self.threshold,
                             min_repetitions=self.min_repetitions,
                             between_runs_floor_pct=self.between_runs_floor)


def lineage_of(settings):
    """How `settings` (a nightly's, calibrate's or trials') runs the suite, as Settings
    fields: a nightly started on behalf of calibrate or trials runs it the same way."""
    return {"run_cmd": settings.run_cmd, "guest": settings.guest,
            "guest_cpus": settings.guest_cpus}


def run(args, run_args):
    """One nightly with Settings `args` and RUN_ARGS; returns its exit status."""
    options = args.gate_options()
    config = args.config if args.config is not None else shlex.join(run_args)
    if args.repetitions < options.min_repetitions:
        print("nightly: warning: %d repetitions are too few for the U test (need >= %d); "
              "nothing can be called a regression" % (args.repetitions, options.min_repetitions))
    try:
        conn = store.open_history(args.history, answer_within_s=args.history_timeout)
    except store.HistoryUnavailable as err:
        # The run still happens and is kept: judged against nothing, since a baseline
        # from anywhere else would be a guess.
        print("nightly: history unreachable (%s); running unjudged, the run goes to the "
              "spool %s" % (err, args.spool), file=sys.stderr)
        conn = None
    except store.HistoryError as err:
        print("nightly: %s" % err, file=sys.stderr)
        return 2
    try:
        return _nightly(args, run_args, options, config, conn)
    except store.HistoryError as err:  # the transaction rolled back: as it was
        print("nightly: %s" % err, file=sys.stderr)
        return 2
    except OSError as err:  # e.g. the report folder filled the disk
        print("nightly: %s" % os_error_reason(err, args.report_dir), file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # the runner's group is already gone (the guard saw it too)
        print("nightly: interrupted; a run recorded but not complete is never a baseline",
              file=sys.stderr)
        return 130
    finally:
        if conn is not None:
            conn.close()


def _spool(args, info, results_path):
    folder = spool.save(os.path.abspath(args.spool), info, results_path)
    print("nightly: run kept in %s, not judged; `tools/perfscale history sync --history "
          "%s` stores it" % (folder, store.describe(args.history)), file=sys.stderr)
    return 2


def runner_command(args):
    """The external command replacing the suite runner, as a list; None: run it here."""
    if args.guest is not None:
        return guest_runner(args.guest, args.guest_cpus or os.cpu_count() or 1)
    command = args.run_cmd or os.environ.get("PERFSCALE_RUN_CMD")
    return shlex.split(command) if command else None


def guest_runner(kernel, cpus):
    """`run` inside `kernel` on QEMU's instruction clock, as --guest asks."""
    return [os.path.join(REPO_ROOT, "tools", "perfscale"), "vm", "--kernel", kernel,
            "--cpus", str(cpus), "--clock", "instructions", "--", "run"]


def run_suite(command, repetitions, out_path, run_args):
    """Runs the suite with `repetitions` into out_path; returns (exit status, results
    path). command: an external runner (runner_command), else None (perfscale.suite.runner)."""
    if command is None:
        options = dataclasses.replace(runner.parse_args(run_args), repetitions=repetitions,
                                      out=out_path)
        print("nightly: running tools/perfscale run %s"
              % shlex.join(["--repetitions", str(repetitions), "--out", out_path] + run_args),
              flush=True)
        try:
            result = runner.run_suite(options, guarded=True)
        except runner.BuildError as err:
            print("nightly: %s" % err, flush=True)
            return err.status, out_path
        return result.status, out_path
    return _run_external(command + ["--repetitions", str(repetitions), "--out", out_path]
                         + run_args, out_path)


def _run_external(full, out_path):
    """Runs an external runner, echoing its output; returns (exit status, results path
    from its `results: FILE` line, else out_path)."""
    print("nightly: running %s" % shlex.join(full), flush=True)
    try:
        # Guarded: if nightly is killed, the runner and the binary die with it.
        proc = guard.popen(full, cwd=REPO_ROOT, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, errors="replace")
    except OSError as err:
        print("nightly: cannot start %s: %s" % (full[0], err.strerror or err))
        return 127, out_path
    reported = None
    for line in proc.stdout:
        sys.stdout.write(line)
        if line.startswith(_RESULTS_LINE):
            reported = line[len(_RESULTS_LINE):].strip()
    status = proc.wait()
    sys.stdout.flush()
    if reported:
        return status, os.path.join(REPO_ROOT, reported)  # join keeps an absolute path
    return status, out_path


def os_error_reason(err, report_dir):
    """What an OSError while writing the report means and what to do. The results file
    and a recorded run are kept; a run whose report was not written is never a baseline."""
    where = err.filename or report_dir
    if err.errno == errno.ENOSPC:
        cause = "the filesystem of %s is full" % where
    elif err.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        cause = "cannot write %s (%s)" % (where, err.strerror)
    else:
        return "%s: %s" % (where, err.strerror or err)
    return ("%s; free space or pass --report-dir elsewhere and run again (the results file, "
            "if written, is kept; a run without its report is never a baseline)" % cause)


# A results file, its report and plots: a few MiB; less free space fails the run late.
MIN_REPORT_BYTES = 16 << 20


def _report_room(report_dir):
    """Why the report folder cannot take a run ('' when it can): full or not writable."""
    existing = report_dir
    while not os.path.isdir(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    stat = os.statvfs(existing)
    if stat.f_bavail * stat.f_frsize < MIN_REPORT_BYTES:
        return os_error_reason(OSError(errno.ENOSPC, "No space left on device", report_dir),
                               report_dir) + " (%d KiB free, a run needs about %d MiB)" % (
                                   stat.f_bavail * stat.f_frsize // 1024, MIN_REPORT_BYTES >> 20)
    if not os.access(existing, os.W_OK):
        return os_error_reason(OSError(errno.EACCES, "Permission denied", existing), report_dir)
    return ""


def new_run_dir(report_dir):
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    for attempt in range(1, 1000):
        path = os.path.join(report_dir, stamp if attempt == 1 else "%s-%d" % (stamp, attempt))
        try:
            os.makedirs(path)
            return path
        except FileExistsError:
            continue
    raise OSError("no free run folder under %s" % report_dir)


def _nightly(args, run_args, options, config, conn):
    """conn None: the history is unreachable; the run goes to the spool, unjudged."""
    named = None
    if args.baseline is not None:
        named = store.get_run(conn, args.baseline)
        if named is None:
            print("nightly: no run %d in %s (see `tools/perfscale plot --history`)"
                  % (args.baseline, conn.name), file=sys.stderr)
            return 2
    room = _report_room(os.path.abspath(args.report_dir))
    if room:  # before the suite runs, not after hours of it
        print("nightly: %s" % room, file=sys.stderr)
        return 2
    try:
        # Absolute: the runner works from the repository root, not from our directory.
        run_dir = new_run_dir(os.path.abspath(args.report_dir))
    except OSError as err:
        print("nightly: cannot create a folder under %s: %s" % (args.report_dir, err),
              file=sys.stderr)
        return 2
    status, results_path = run_suite(runner_command(args), args.repetitions,
                                     os.path.join(run_dir, "results.json"), run_args)
    if status != 0:
        return _failed(run_dir, "the run failed with exit status %d" % status)
    try:
        results = io.load_results(results_path)
    except io.ResultsError as err:
        return _failed(run_dir, "unusable results: %s" % err)

    info = store.RunInfo.from_results(results, config, run_args, args.repetitions)
    if conn is None:
        return _spool(args, info, results.source)
    try:
        return _judge_and_record(args, run_args, options, conn, named, run_dir, results, info)
    except store.HistoryUnavailable as err:
        print("nightly: history lost (%s); nothing half-written there" % err, file=sys.stderr)
        return _spool(args, info, results.source)


def _judge_and_record(args, run_args, options, conn, named, run_dir, results, info):
    with conn.snapshot():  # the baseline as of one moment, whatever others write meanwhile
        baseline, base_rows, base_runs, floors, floor_source = _read_baseline(
            conn, named, info, options)
    if baseline is not None and (baseline["host"], baseline["cpus"]) != (info.host, info.cpus):
        print("nightly: run %d was on %s with %d CPUs, this run is on %s with %d CPUs: results "
              "of different machines are never compared; nothing recorded"
              % (baseline["id"], baseline["host"], baseline["cpus"], info.host, info.cpus),
              file=sys.stderr)
        return 2
    # Before judging: timings taken with the counters attached and without are not alike.
    store.check_attribution(info, [named] if named is not None else store.find_baselines(
        conn, info.host, info.cpus, info.config, BASELINE_RUNS, info.machine))
    if named is not None and named["config"] != info.config:
        print("nightly: note: run %d had config '%s', this one '%s'"
              % (named["id"], named["config"], info.config))
    verdicts = []
    print("nightly: noise floors: %s" % (floor_source or "none yet for %s (run tools/perfscale "
                                         "calibrate; until then the threshold alone)"
                                         % info.lineage()))
    if baseline is not None:
        print("nightly: baseline: %s" % ("run %d" % baseline["id"] if len(base_rows) == 1 else
                                         "runs %s" % ", ".join(str(r["id"]) for r in base_rows)))
        # As compare says them: a count the kernel could not give, or that vanished.
        for line in io.count_notes([json.loads(row["context"]) for row in base_rows],
                                   results.context, base_runs, results.entries):
            print("nightly: %s" % line)
        verdicts = judge(base_runs, results.entries, options, floors, run_dir,
                         lambda names, path: _rerun(args, run_args, names, path),
                         args.confirm_rounds, args.confirm_budget, args.ci_target / 100)
        status, reason = stats.gate_status(verdicts)
        if status == 2:
            for verdict in verdicts:
                print(verdict.line())
            return _failed(run_dir, reason)
    run_id = store.record_run(conn, info, results, verdicts,
                                baseline["id"] if baseline is not None else None)
    for verdict in verdicts:
        print(verdict.line())
    page_paths = _write_report(conn, args, run_dir, run_id, info, results, baseline, verdicts)
    store.mark_complete(conn, run_id)
    grown = set()
    if baseline is not None:  # one alert per change: opened, joined, attached or fixed
        lines, _within, grown = alerting.after_night(
            conn, _lineage_key(info), store.get_run(conn, run_id), base_rows[0], verdicts)
        for line in lines:
            print("nightly: %s" % line)
    if grown:  # one mail per alert: when it opens and when it grows, not every night
        print("nightly: regression mail: %s" % _write_mail(args, run_dir, conn, run_id, grown))
    print("nightly: run %d recorded in %s; report: %s" % (run_id, conn.name, page_paths[0]))
    slower = [v.name for v in verdicts if v.regression]
    if baseline is None:
        print("nightly: no baseline yet for %s: this run is the baseline" % info.lineage())
    elif slower:
        print("nightly: REGRESSION against run %d: %d benchmark(s) slower: %s"
              % (baseline["id"], len(slower), ", ".join(slower)))
        return 1
    else:
        print("nightly: no regression against run %d" % baseline["id"])
    return 0


def _lineage_key(info):
    return (info.host, info.machine, info.cpus, info.config)


def _read_baseline(conn, named, info, options):
    """(baseline row, its runs' rows, their entries, floors, floors' source), read in the
    caller's snapshot. Says what changed when the host is another machine than before."""
    # Without --baseline, the lineage's alerts say which runs are baselines: an invalid
    # alert's runs are none (history.alerts); an acknowledged alert's benchmarks are
    # judged against its new level (alerting.accepted_base).
    auto = [] if named is not None else alerts.baseline_rows(conn, _lineage_key(info),
                                                              BASELINE_RUNS)
    baseline = named or (auto[0] if auto else None)
    if named is None:
        other = store.latest_of_other_machine(conn, *info.key(), info.machine)
        if other is not None:
            changed = identity.changes(json.loads(other["context"]), info.context)
            print("nightly: host %s is another machine than at run %d (%s): a new lineage, "
                  "not compared with it" % (info.host, other["id"], "; ".join(changed)))
    if baseline is not None:
        moved = identity.kernel_reported_changes(json.loads(baseline["context"]), info.context)
        if moved:  # part of the kernel's change, so judged, and named beside it
            print("nightly: the kernel under test reports otherwise than at baseline run %d "
                  "(kernel %s -> %s): %s" % (baseline["id"], baseline["kernel_release"],
                                             info.context.get("kernel_release", "?"),
                                             "; ".join(moved)))
    floors, floor_source = for_lineage(conn, *info.key(), options.alpha,
                                                   info.machine)
    base_rows, base_runs = [], []
    if baseline is not None:
        base_rows = [baseline] if named is not None else auto
        base_runs = [store.load_entries(conn, row["id"]) for row in base_rows]
        if named is None:  # an acknowledged alert's benchmarks: against the new level
            base_runs, lines = alerting.accepted_base(conn, _lineage_key(info), base_runs,
                                                      BASELINE_RUNS,
                                                      [row["id"] for row in base_rows])
            for line in lines:
                print("nightly: %s" % line)
    return baseline, base_rows, base_runs, floors, floor_source


def judge(base_runs, entries, options, floors, run_dir, rerun, rounds, budget_s, target):
    """The final verdicts on a new run's entries: screened against the baseline runs, the
    suspects rerun (rerun(names, out_path) -> ResultSet) up to `rounds` times in `budget_s`
    seconds, or until each interval's half-width is `target` (a fraction), and judged on
    all the runs. `trials --replay` calls it with the reruns a trial recorded."""
    verdicts = stats.compare_runs(base_runs, [entries], options, floors)
    return confirm.confirm_suspects(rerun, run_dir, base_runs, entries, verdicts, options,
                                    floors, rounds=rounds, budget_s=budget_s, target=target)


def _rerun(args, run_args, _names, out_path):
    """Reruns the whole suite, as the baseline runs were; confirm.confirm_suspects judges
    only the suspects on it. Returns the results or raises confirm.RerunError.

    Not only the suspects: what ran around a benchmark is part of what it measures. Reruns
    of the suspects alone timed some of them much slower than the full runs around them,
    and the gate confirmed that as a regression in an A/A trial
    (docs/measurements/2026-12-01-gate-real-time.md)."""
    extra = list(run_args) + ([] if "--" in run_args else ["--"])
    status, path = run_suite(runner_command(args), args.repetitions, out_path, extra)
    if status != 0:
        raise confirm.RerunError("the confirmation run failed with exit status %d" % status)
    try:
        return io.load_results(path)
    except io.ResultsError as err:
        raise confirm.RerunError("unusable confirmation results: %s" % err) from None


def _failed(run_dir, reason):
    """A failed run leaves a note in its folder and nothing in the history."""
    page = Page("perfscale nightly: run failed")
    page.text(reason + ". Nothing was recorded; the baseline is unchanged.")
    page.write(os.path.join(run_dir, "nightly"))
    print("nightly: %s; nothing recorded (note in %s)" % (reason, run_dir), file=sys.stderr)
    return 2


def _write_report(conn, args, run_dir, run_id, info, results, baseline, verdicts):
    from perfscale.plots import report  # the page sections of a single run
    slower = [v for v in verdicts if v.regression]
    state = ("REGRESSION (%d slower)" % len(slower) if slower else
             "no regression" if baseline is not None else "first run of its lineage")
    page = Page("perfscale nightly run %d: %s" % (run_id, state))
    page.heading("Run")
    context = info.context
    page.table(["field", "value"], [
        ["lineage", info.lineage()], ["run arguments", shlex.join(info.run_args) or "(none)"],
        ["repetitions", info.repetitions], ["kernel", context.get("kernel_release", "?")],
        ["perf_event_paranoid", context.get("perf_event_paranoid", "?")],
        ["perfscale revision", context.get("perfscale_revision", "?")],
        ["results", os.path.relpath(results.source, run_dir)]])
    page.heading("Baseline")
    if baseline is None:
        page.text("None: no earlier passing run of this lineage. This run is the baseline.")
    else:
        page.text("Run %d of %s (kernel %s, perfscale %s)%s. Gate: a benchmark calibrated "
                  "on this host is judged on whole runs (the median of the new run and the "
                  "reruns of a suspect against the mean of the baseline runs, against its "
                  "spread between runs); the others by the U test over >= %d repetitions "
                  "and past a between-run floor of %g%% assumed for them. "
                  "Either way p < %g after Holm's correction over the suite and slower by "
                  "more than %g%%; or an attributed count up beyond its noise." % (
                      baseline["id"], baseline["recorded_at"], baseline["kernel_release"],
                      baseline["perfscale_revision"],
                      " named with --baseline" if args.baseline is not None else
                      " and the lineage's earlier passing runs",
                      args.min_repetitions, args.between_runs_floor, args.alpha,
                      args.threshold))
        order = {stats.SLOWER: 0, stats.COUNTS: 1, stats.FASTER: 2}
        page.table(["benchmark", "verdict", "median change [95% CI]", "p (Holm)",
                    "noise floor", "runs (repetitions)", "counters moved", "note"],
                   [[display_name(v.name),
                     v.verdict, _pct(v.change) + _interval(v.ci),
                     "%s (%s)" % (_p(v.screen_p if v.screen_p == v.screen_p else v.pvalue),
                                  _p(v.p_adjusted)), _pct(v.noise_floor),
                     "%d vs %d (%d vs %d)" % (v.runs + v.repetitions), v.moved(),
                     "; ".join(x for x in (v.note, v.confirmation) if x)]
                    for v in sorted(verdicts, key=lambda v: order.get(v.verdict, 3))])
        baseline_json = _baseline_file(conn, baseline, run_dir)
        page.heading("compare.py")
        page.preformatted(comparepy.table(baseline_json, results.source, args.alpha))
    if slower and not args.no_plots:
        from perfscale.plots import plot
        trend_map = store.trends(conn, info.host, info.config)
        pictures = plot.history_plots(trend_map, run_dir, names={v.name for v in slower})
        page.heading("Trends of the slower benchmarks")
        for path, caption in pictures:
            page.image(os.path.relpath(path, run_dir), caption)
        page.text("To accept this run as the new baseline: tools/perfscale nightly "
                  "--baseline %d ..." % run_id)
    report.add_results_sections(page, results, run_dir, plots=not args.no_plots)
    report.add_calibration_section(page, conn, info.host, info.cpus, info.machine)
    with open(os.path.join(run_dir, "verdicts.json"), "w", encoding="utf-8") as f:
        f.write(io.dumps({"run_id": run_id, "baseline_id": baseline["id"]
                                  if baseline is not None else None,
                                  "regressions": [v.name for v in slower],
                                  "verdicts": [dataclasses.asdict(v) for v in verdicts]},
                         indent=1))
    return page.write(os.path.join(run_dir, "nightly"))


def _write_mail(args, run_dir, conn, run_id, grown):
    """The regression mail of each alert that opened or grew tonight, beside the report:
    the alert's, in the kernel test robot's shape (perfscale.plots.alert_view, the data
    of the dashboard's alert page too). One night is one change, so one alert at most;
    more get a file each."""
    from perfscale.plots import alert_view
    paths = []
    for alert_id in sorted(grown):
        name = ("regression-mail.txt" if len(grown) == 1 else
                "regression-mail-alert-%d.txt" % alert_id)
        text = alert_view.mail_text(conn, alert_id, run_id, store.describe(args.history))
        path = os.path.join(run_dir, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        paths.append(path)
    return ", ".join(paths)


def _baseline_file(conn, baseline, run_dir):
    """The baseline's results file for compare.py: the original while it is still there
    and intact, else one rebuilt from the history."""
    original = baseline["results_path"]
    if original and os.path.exists(original):
        try:
            io.load_results(original)
            return original
        except io.ResultsError:
            pass
    rebuilt = os.path.join(run_dir, "baseline.json")
    with open(rebuilt, "w", encoding="utf-8") as f:
        f.write(io.dumps(store.as_results_document(conn, baseline["id"]), indent=1))
    return rebuilt


def _pct(change):
    return "%+.1f%%" % (100 * change) if change is not None and change == change else "-"


def _interval(ci):
    low, high = ci
    return " [%+.1f%%, %+.1f%%]" % (100 * low, 100 * high) if low == low and high == high else ""


def _p(pvalue):
    return "%.4f" % pvalue if pvalue == pvalue else "-"
