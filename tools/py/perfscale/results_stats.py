"""Decides, per benchmark, whether a new run is faster, slower or unchanged.

Same statistics as Google Benchmark's compare.py, so our verdicts agree with its table:
change = (new - old) / |old| of the median real time over repetitions, and a two-sided
Mann-Whitney U test over the per-repetition real times. compare.py only prints them; we
turn them into a gate: slower by more than `threshold` with p < `alpha` is a regression.
The U test needs repetitions: below `min_repetitions` (compare.py's own recommendation)
a benchmark is reported as such, never as a regression.
"""

import dataclasses
import math
import statistics

from scipy.stats import mannwhitneyu

# compare.py (gbench/report.py UTEST_OPTIMAL_REPETITIONS) calls fewer "unreliable".
DEFAULT_MIN_REPETITIONS = 9
DEFAULT_ALPHA = 0.05
DEFAULT_THRESHOLD_PCT = 5.0

SLOWER, FASTER, SAME = "slower", "faster", "no significant change"
TOO_FEW, MISSING, ERROR = "too few repetitions", "not compared", "error"


@dataclasses.dataclass(frozen=True)
class Options:
    alpha: float = DEFAULT_ALPHA
    threshold_pct: float = DEFAULT_THRESHOLD_PCT
    min_repetitions: int = DEFAULT_MIN_REPETITIONS


@dataclasses.dataclass
class Verdict:
    name: str
    verdict: str
    change: float = math.nan  # (new - old) / |old| of the medians, as a fraction
    pvalue: float = math.nan
    base_median_ns: float = math.nan
    new_median_ns: float = math.nan
    repetitions: tuple = (0, 0)  # usable repetitions in base, new
    note: str = ""

    @property
    def regression(self):
        return self.verdict == SLOWER

    def line(self):
        """One line a person reads in a log: verdict, figures, and why."""
        if self.verdict in (MISSING, ERROR):
            return "%s: %s: %s" % (self.name, self.verdict, self.note)
        figures = []
        if math.isfinite(self.change):
            figures.append("%+.1f%% median real time" % (100 * self.change))
        if math.isfinite(self.pvalue):
            figures.append("p=%.4f" % self.pvalue)
        if self.verdict == TOO_FEW:
            return "%s: %s (%s)" % (self.name, self.note, ", ".join(figures))
        figures.append("repetitions %d vs %d" % self.repetitions)
        text = "%s: %s (%s)" % (self.name, self.verdict, ", ".join(figures))
        return text + ("; " + self.note if self.note else "")


def change(old, new):
    """compare.py's calculate_change, so the two tools print the same percentage."""
    if old == 0 and new == 0:
        return 0.0
    if old == 0:
        return (new - old) / ((old + new) / 2)
    return (new - old) / abs(old)


def utest_pvalue(base, new):
    """Two-sided U test p-value; identical samples (all ties) mean no evidence: 1.0."""
    pvalue = mannwhitneyu(base, new, alternative="two-sided").pvalue
    return 1.0 if math.isnan(pvalue) else float(pvalue)


def compare_samples(name, base, new, options=Options()):
    """Verdict for one benchmark from its per-repetition real times (any one unit)."""
    base = [v for v in base if math.isfinite(v)]
    new = [v for v in new if math.isfinite(v)]
    result = Verdict(name, SAME, repetitions=(len(base), len(new)))
    if not base or not new:
        result.verdict, result.note = MISSING, "no valid timings in the %s run" % (
            "baseline" if not base else "new")
        return result
    result.base_median_ns, result.new_median_ns = statistics.median(base), statistics.median(new)
    result.change = change(result.base_median_ns, result.new_median_ns)
    fewest = min(len(base), len(new))
    if fewest < options.min_repetitions:
        result.verdict = TOO_FEW
        result.note = "too few repetitions: %d, need >= %d for the U test" % (
            fewest, options.min_repetitions)
        return result
    result.pvalue = utest_pvalue(base, new)
    significant = result.pvalue < options.alpha
    beyond = abs(result.change) * 100 > options.threshold_pct
    if significant and beyond:
        result.verdict = SLOWER if result.change > 0 else FASTER
    elif significant:
        result.note = "significant but within the %g%% threshold" % options.threshold_pct
    return result


def compare_entries(base_entries, new_entries, options=Options()):
    """Verdicts for every benchmark of either run, in the new run's order."""
    verdicts = []
    for name, entry in new_entries.items():
        old = base_entries.get(name)
        if old is None:
            verdicts.append(Verdict(name, MISSING, note="new benchmark, not in the baseline"))
        elif entry.errors and not entry.real_ns:
            verdicts.append(Verdict(name, ERROR, note="; ".join(entry.errors)))
        elif old.errors and not old.real_ns:
            verdicts.append(Verdict(name, MISSING, note="baseline had an error: "
                                    + "; ".join(old.errors)))
        else:
            verdicts.append(compare_samples(name, old.real_ns, entry.real_ns, options))
    for name in base_entries:
        if name not in new_entries:
            verdicts.append(Verdict(name, MISSING, note="in the baseline only"))
    return verdicts
