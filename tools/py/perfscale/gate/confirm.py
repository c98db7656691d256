"""The confirmation step: rerun the suite, interleaved, and judge the suspects on all runs.

One run says little on a machine whose whole runs shift: a transient (another job's
build, a migration storm) makes one run slow, not several. So the first run only
screens: a benchmark calibrated on this host is a suspect when its first run is likely
slower (perfscale.gate.stats.SCREEN_P), an uncalibrated one when the first run alone
says slower, and so is any benchmark whose attributed counts rose. The suite is run
again, each rerun a whole new process with the same interleaved repetitions, in the same
company as the baseline runs (a benchmark's neighbours are part of what it measures; see
perfscale.suite.nightly._rerun), and the suspects are judged again on all the runs:
calibrated benchmarks on the median of their runs against the baseline runs, the others
on the pooled repetitions, where the rerun on its own must also have moved the same way.
Reruns repeat (adaptively) until no suspect is left open, or every open one's interval
is within the target half-width, or the rounds or the time budget are spent; every
suspect's verdict says what was reached.
"""

import math
import os
import time

from perfscale.gate import stats

DEFAULT_ROUNDS = 4
DEFAULT_BUDGET_S = 300.0
DEFAULT_CI_TARGET = 0.05  # half-width of the ratio's interval, as a fraction


class RerunError(Exception):
    """The rerun could not be done; the suspects then stand (a gate fails closed)."""


def is_suspect(verdict):
    """Worth a rerun before the verdict: slower, counts up, or (calibrated) likely slower."""
    return verdict.regression or (math.isfinite(verdict.screen_p)
                                  and verdict.screen_p < stats.SCREEN_P)


def _half_width(verdict):
    low, high = verdict.ci
    return (high - low) / 2 if math.isfinite(low) and math.isfinite(high) else math.inf


def _persists(verdict):
    """An uncalibrated rerun alone moved the same way: its time, or its counts."""
    if verdict.verdict == stats.SLOWER or verdict.counter_regressions:
        return True
    floor = verdict.noise_floor if math.isfinite(verdict.noise_floor) else 0.0
    return verdict.change > floor and verdict.verdict in stats.JUDGED


def confirm_suspects(rerun, run_dir, base_runs, first_entries, verdicts, options, floors,
                     rounds=DEFAULT_ROUNDS, budget_s=DEFAULT_BUDGET_S, target=DEFAULT_CI_TARGET):
    """Final verdicts after up to `rounds` reruns of the suspects.

    base_runs: the baseline's runs ({name: Entry} each); first_entries: the new run's.
    rerun(names, out_path) -> ResultSet runs (at least) the open suspects `names`; only
    they are judged on it."""
    suspects = [v.name for v in verdicts if is_suspect(v)]
    if not suspects or rounds <= 0:
        return verdicts
    started, reruns, final, stop = time.monotonic(), [], verdicts, "rounds spent"
    uncalibrated_persist = {v.name: True for v in verdicts
                            if v.name in suspects and not math.isfinite(v.sigma)}
    open_names = list(suspects)
    for round_index in range(1, rounds + 1):
        try:
            run = rerun(open_names, os.path.join(run_dir, "confirm-%d.json" % round_index))
        except RerunError as err:
            for verdict in final:
                if verdict.name in suspects:
                    verdict.confirmation = "not confirmed: %s; %s" % (
                        err, "the suspect stands" if verdict.regression else "not a regression "
                        "on the first run")
            return final
        rerun_entries = {n: e for n, e in run.entries.items() if n in open_names}
        reruns.append(rerun_entries)
        if uncalibrated_persist:
            alone = {v.name: v for v in stats.compare_runs(
                base_runs, [rerun_entries], options, floors)}
            for name in uncalibrated_persist:
                if name in open_names:
                    uncalibrated_persist[name] = (uncalibrated_persist[name] and name in alone
                                                  and _persists(alone[name]))
        final = stats.compare_runs(base_runs, [first_entries] + reruns, options, floors)
        for verdict in final:
            if not uncalibrated_persist.get(verdict.name, True) and verdict.regression:
                verdict.verdict, verdict.counter_regressions = stats.SAME, []
        open_verdicts = [v for v in final if v.name in open_names and is_suspect(v)]
        open_names = [v.name for v in open_verdicts]
        if not open_verdicts:
            stop = "resolved"
            break
        if all(_half_width(v) <= target for v in open_verdicts):
            stop = "interval within the +-%.0f%% target" % (100 * target)
            break
        if time.monotonic() - started > budget_s:
            stop = "time budget of %.0f s spent" % budget_s
            break
    reached = "%d rerun(s), %s" % (len(reruns), stop)
    for verdict in final:
        if verdict.name not in suspects:
            continue
        width = _half_width(verdict)
        where = "%s; %d vs %d runs, %d vs %d repetitions, interval +-%.1f%%" % (
            reached, verdict.runs[0], verdict.runs[1], verdict.repetitions[0],
            verdict.repetitions[1], 100 * width if math.isfinite(width) else math.nan)
        verdict.confirmation = ("confirmed (%s)" if verdict.regression
                                else "suspect not confirmed (%s)") % where
    return final
