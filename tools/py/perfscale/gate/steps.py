"""One kernel release against the one before it: the gate's verdicts on a step of a series
(`tools/perfscale series`, `plot --vs-kernel`).

A step is judged as `compare` judges two result files: on the timings where they mean
something (the instruction clock, bare metal, a fair KVM guest), on the attributed counts
alone where they do not (TCG time: comparability). Unlike a nightly's gate, a series looks
for change in both directions: a release that made a path faster or sends fewer IPIs is a
step too. So besides the gate's `slower`, `faster` and `counts up`, a count that fell
(the same one-sided test with the sides swapped) makes a step `counts down`.
"""

import statistics

from perfscale.gate import comparability, stats
from perfscale.results import io

COUNTS_DOWN = "counts down"
FLAGGED = (stats.SLOWER, stats.FASTER, stats.COUNTS, COUNTS_DOWN)


# On the instruction clock whole runs of one kernel move by 0.01-0.8% between runs
# (docs/measurements/2026-12-02-instruction-clock.md), not the 25% that other tenants move
# a shared host's real time: there an uncalibrated benchmark is judged on its own
# repetitions' spread and the threshold, with no assumed between-run floor above it.
def between_runs_floor_pct(clock, threshold_pct=stats.DEFAULT_THRESHOLD_PCT):
    """The between-run floor (percent) assumed for an uncalibrated benchmark of a step
    on `clock`, when none is given."""
    if clock == "instructions":
        return threshold_pct
    return stats.DEFAULT_BETWEEN_RUNS_FLOOR_PCT


def options_for(clock):
    """The gate's default options for a step on `clock` (between_runs_floor_pct)."""
    return stats.Options(between_runs_floor_pct=between_runs_floor_pct(clock))


class StepError(Exception):
    """Two runs that cannot be held against each other (another clock, attribution)."""


def timed(base, new):
    """(True, '') when the two runs' timings may be judged against each other, else
    (False, why only the counts are). Raises StepError for runs never to be compared."""
    mismatch = io.attribution_mismatch(base.context, new.context)
    if mismatch:
        raise StepError(mismatch)
    if comparability.clock(base.context) != comparability.clock(new.context):
        raise StepError("one run is timed on QEMU's instruction clock, the other in real time")
    if comparability.clock(new.context) == "instructions":
        return True, ""
    base_ok, base_why = comparability.timings_comparable(base.context)
    new_ok, new_why = comparability.timings_comparable(new.context)
    if base_ok and new_ok:
        return True, ""
    if base_ok != new_ok:
        raise StepError("one run's timings are a real machine's, the other's are not (%s)"
                        % (base_why or new_why))
    return False, new_why


def judge_step(base, new, options=stats.Options(), floors=None):
    """The verdicts of `new` against `base` (io.ResultSets), one per benchmark, and the
    words for how they were judged. `floors`: a calibration's ({(name, metric): ...}, as
    gate.floors gives them), else each benchmark is judged on its own spread."""
    floors = floors or {}
    judged_times, why = timed(base, new)
    if judged_times:
        verdicts = stats.compare_runs([base.entries], [new.entries], options, floors)
        how = "timings and attributed counts"
    else:
        verdicts = _counts_only(base, new, options, floors, why)
        how = "attributed counts only (timings not comparable: %s)" % why
    _counts_that_fell(base, new, verdicts, options, floors)
    return verdicts, how


def _counts_only(base, new, options, floors, why):
    """Verdicts on the attributed counts alone, in one Holm family of counts (as `compare`
    judges two TCG guests); the change of the median time is shown, never judged."""
    common = [name for name in new.entries if name in base.entries]
    judged, _ = stats.judge_counts(base.entries, new.entries, common, floors, options)
    verdicts = []
    for name in new.entries:
        if name not in judged:
            verdicts.append(stats.Verdict(name, stats.MISSING,
                                          note="new benchmark, not in the release before"))
            continue
        moved, regressions, tests = judged[name]
        old_times = [v for v in base.entries[name].real_ns if v == v]
        new_times = [v for v in new.entries[name].real_ns if v == v]
        verdict = stats.Verdict(name, stats.COUNTS if regressions else stats.SAME,
                                repetitions=(len(old_times), len(new_times)),
                                counters=moved, counter_regressions=regressions,
                                count_tests=tests, note="time not judged: " + why)
        if old_times and new_times:
            verdict.base_median_ns = statistics.median(old_times)
            verdict.new_median_ns = statistics.median(new_times)
            verdict.change = stats.change(verdict.base_median_ns, verdict.new_median_ns)
        verdicts.append(verdict)
    return verdicts


def _counts_that_fell(base, new, verdicts, options, floors):
    """Marks `counts down` where the gate's count test, sides swapped, finds a gated
    count lower, and the time did not already make the step."""
    same = [v.name for v in verdicts if v.verdict == stats.SAME]
    if not same:
        return
    fell, _ = stats.judge_counts(new.entries, base.entries, same, floors, options)
    for verdict in verdicts:
        if verdict.name in fell and fell[verdict.name][1]:
            verdict.verdict = COUNTS_DOWN
            lower = ", ".join(fell[verdict.name][1])
            verdict.note = "; ".join(n for n in (verdict.note, "lower: " + lower) if n)


def flagged(verdicts):
    """The verdicts that make a step: slower, faster, or a count up or down."""
    return [v for v in verdicts if v.verdict in FLAGGED]
