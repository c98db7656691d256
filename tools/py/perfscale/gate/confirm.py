"""The confirmation step: rerun only the suspects, interleaved, and judge on pooled data.

A first run flags suspects; a transient (another job's build, a migration storm) makes one
run slow, not two. So before the alarm the suspects alone are run again with the same
interleaved repetitions, their samples pooled with the first run's, and the suite judged
again. A suspect stays a regression only if the pooled data still says so *and* the
rerun on its own moved the same way beyond the noise floor. Reruns repeat (adaptively)
until every remaining suspect's interval of the ratio is within the target half-width,
or the rounds or the time budget are spent; the verdict says what was reached.
"""

import copy
import math
import os
import time

from perfscale.gate import stats as results_stats

DEFAULT_ROUNDS = 2
DEFAULT_BUDGET_S = 300.0
DEFAULT_CI_TARGET = 0.05  # half-width of the ratio's interval, as a fraction


class RerunError(Exception):
    """The rerun could not be done; the suspects then stand (a gate fails closed)."""


def pooled(results, extra_runs):
    """The first run's entries with each rerun's samples and counters appended."""
    entries = copy.deepcopy(results.entries)
    for run in extra_runs:
        for name, entry in run.entries.items():
            if name in entries:
                target = entries[name]
                target.real_ns += entry.real_ns
                target.cpu_ns += entry.cpu_ns
                for counter, values in entry.counters.items():
                    target.counters.setdefault(counter, []).extend(values)
    return entries


def _half_width(verdict):
    low, high = verdict.ci
    return (high - low) / 2 if math.isfinite(low) and math.isfinite(high) else math.inf


def _persists(verdict):
    """The rerun alone moved the same way: its time beyond the margin, or its counts."""
    if verdict.verdict == results_stats.SLOWER or verdict.counter_regressions:
        return True
    floor = verdict.noise_floor if math.isfinite(verdict.noise_floor) else 0.0
    return verdict.change > floor and verdict.verdict in results_stats.JUDGED


def confirm_suspects(rerun, run_dir, base_entries, results, verdicts, options, floors,
                     rounds=DEFAULT_ROUNDS, budget_s=DEFAULT_BUDGET_S, target=DEFAULT_CI_TARGET):
    """Final verdicts after up to `rounds` reruns of the suspects.

    rerun(names, out_path) -> ResultSet runs only those benchmarks."""
    suspects = [v.name for v in verdicts if v.regression]
    started, extra, persisted = time.monotonic(), [], {name: True for name in suspects}
    final, stop = verdicts, "rounds spent"
    for round_index in range(1, rounds + 1):
        try:
            run = rerun(suspects, os.path.join(run_dir, "confirm-%d.json" % round_index))
        except RerunError as err:
            for verdict in final:
                if verdict.name in persisted:
                    verdict.confirmation = "not confirmed: %s; the suspect stands" % err
            return final
        extra.append(run)
        alone = {v.name: v for v in results_stats.compare_entries(
            base_entries, {n: e for n, e in run.entries.items() if n in persisted},
            options, floors)}
        for name in persisted:
            persisted[name] = persisted[name] and name in alone and _persists(alone[name])
        final = results_stats.compare_entries(base_entries, pooled(results, extra), options,
                                              floors)
        open_suspects = [v for v in final if v.name in persisted and v.regression
                         and persisted[v.name]]
        if not open_suspects:
            stop = "resolved"
            break
        if all(_half_width(v) <= target for v in open_suspects):
            stop = "interval within the +-%.0f%% target" % (100 * target)
            break
        if time.monotonic() - started > budget_s:
            stop = "time budget of %.0f s spent" % budget_s
            break
    reached = "%d rerun(s), %s" % (len(extra), stop)
    for verdict in final:
        if verdict.name not in persisted:
            continue
        width = _half_width(verdict)
        where = "%s; pooled %d vs %d repetitions, interval +-%.1f%%" % (
            reached, verdict.repetitions[0], verdict.repetitions[1],
            100 * width if math.isfinite(width) else math.nan)
        if verdict.regression and persisted[verdict.name]:
            verdict.confirmation = "confirmed (%s)" % where
        else:
            if verdict.regression:
                verdict.verdict = results_stats.SAME
                verdict.counter_regressions = []
            verdict.confirmation = "suspect not confirmed (%s)" % where
    return final
