"""Decides, per benchmark and for the suite, whether a new run is slower than a baseline.

Two views of the same data. Uncalibrated, the figures are compare.py's, so our verdicts
agree with its table: change = (new - old) / |old| of the median real time over
repetitions, and a two-sided Mann-Whitney U test over the per-repetition real times. A
gate built on that alone fails most nights on a shared or virtual machine: whole runs
shift by more than their repetitions spread, so the U test calls A/A noise significant.

So a benchmark calibrated on this host (`tools/perfscale calibrate`: sigma, the spread of
log(median) between runs with no change) is judged on whole runs: the shift of the new
runs' median log(median) (the new run, plus the reruns of a suspect) from the mean over
the lineage's baseline runs, against sigma * sqrt(1/K + c/m), one-sided. An uncalibrated
benchmark is slower only past an assumed between-run floor (Options.between_runs_floor_pct,
25%) and beyond the slow mode its baseline already had (_decide_uncalibrated). Either way Holm's
correction runs over the whole suite, every verdict carries a 95% interval of the change,
and a change below the threshold (5%) is never a regression.

Attributed counters (ipis_sent/op, xcalls/op, ...) are judged against their own noise
too (count_test): a gated count is "up" only when a one-sided U test over its
per-repetition values says it rose, in the same Holm correction as the times, and its
median rose past a floor. Most counts depend on scheduling and idle states (IPIs really
sent, context switches, lock contentions): their floor is the larger of 25% of the
baseline, either run's whole spread over its repetitions and 0.1 per operation. Only a
cross-CPU call count (0.1/op or more) whose baseline repetitions agree within 2% is
exact, and there a rise of 2% (at least one event per counting pass) may flag
(docs/counters.md says which rows are which). Below
`min_repetitions` (compare.py's recommendation) nothing is judged, and a gate never
passes what it could not judge (gate_status).
"""

import copy
import dataclasses
import functools
import math
import statistics
import zlib

import numpy
from scipy.stats import binom, mannwhitneyu, norm, rankdata
from scipy.stats import t as student

from perfscale.results import io

from perfscale.results.names import NOISY_VARIANT, display_name

# compare.py (gbench/report.py UTEST_OPTIMAL_REPETITIONS) calls fewer "unreliable".
DEFAULT_MIN_REPETITIONS = 9
DEFAULT_ALPHA = 0.05
DEFAULT_THRESHOLD_PCT = 5.0

DEFAULT_COUNTER_THRESHOLD_PCT = 10.0
# Uncalibrated, a time must also move by more than whole runs of one build move on a
# shared machine. The U test over repetitions sees only the spread inside a run, and
# between two runs the other tenants shift rows by 12-20% with every repetition of the
# run agreeing (A/A on the 2-CPU VM: BreakpointEnable other_cpus +20.6% [95% CI
# +17.0%..+27.2%], p=0.001). The floor a calibration learns per row replaces it
# (docs/gate.md, "Uncalibrated: the between-run floor"); --between-runs-floor sets it.
DEFAULT_BETWEEN_RUNS_FLOOR_PCT = 25.0
# A baseline whose slowest repetition took this many times its median has a second mode
# (an unpinned thread on the other CPU: 2 us or 78 us a toggle), and a new run that lands
# in that mode moves the median by the gap between modes, with nothing changed.
MODES_RATIO = 2.0
CONFIDENCE = 0.95  # of the bootstrap intervals shown in every verdict
BOOTSTRAP_RESAMPLES = 2000
_Z_INTERVAL = float(norm.ppf(0.5 + CONFIDENCE / 2))  # once, not once per benchmark
# A count must move by at least this much per operation (1 IPI in 20 ops) to count.
COUNTER_MIN_DELTA = 0.05
# A scheduling-dependent count (below) must also rise by this share of its baseline and
# by its baseline's whole spread over repetitions: whole runs move those counts by more
# than their repetitions spread (A/A on the 2-CPU VM: ipis_sent/op of a breakpoint toggle
# 6.5 -> 9.95, as whether a cross-CPU call needs an IPI follows the other CPU's idle
# state), so a U test over repetitions alone calls that noise significant.
SCHEDULED_COUNT_FLOOR = 0.25
SCHEDULED_COUNT_MIN = 0.1  # per operation (fd, record): one event in ten operations
# Counts fixed by the code path when their baseline says so: cross-CPU calls queued
# (per toggle of a breakpoint N threads inherited, 2 per copy on another CPU). IPIs sent,
# context switches and lock contentions also follow the other tenants and idle states,
# so they are never treated as exact, even when a quiet baseline held them constant.
PATH_FIXED_COUNTS = ("xcalls",)
EXACT_SPREAD = 0.02  # a path-fixed count is exact when its repetitions agree this well
# A calibrated benchmark this likely slower on its first run (one-sided p, before Holm's
# correction) is a suspect: rerun before the verdict. Loose on purpose: the reruns are
# cheap and a 10% slowdown must get through this screen 9 times in 10 and more.
SCREEN_P = 0.2

SLOWER, FASTER, SAME = "slower", "faster", "no significant change"
COUNTS = "counts up"  # time not judged slower, but an attributed count rose
TOO_FEW, MISSING, ERROR = "too few repetitions", "not compared", "error"
# The note of a benchmark the baseline timed and the new run does not have at all.
VANISHED = "timed in the baseline, absent from the new run"
JUDGED = (SLOWER, FASTER, SAME, COUNTS)

# The attributed counters (before the /unit). The counts gate; the times (lock_wait_us,
# sys_us) are too noisy to gate but are shown when moved.
ATTRIBUTED = io.ATTRIBUTED_COUNTERS
# Page faults and migrations are shown but not gated: they follow the machine's memory and
# scheduler state as much as the path measured (an A/A nightly here saw page_faults/record
# of a synthesis benchmark triple, 0.025 -> 0.079, with no change).
GATED_COUNTS = ("ipis_sent", "ipi_mask_calls", "xcalls", "lock_contended", "ctx_switches")
REAL_TIME = "real_time"  # the metric name of a benchmark's time in the calibration
NOISY_VARIANT = NOISY_VARIANT


def counter_kind(name):
    """'ipis_sent' for 'ipis_sent/op' or 'ipis_sent/fd'; None for other counters."""
    prefix, slash, _unit = name.partition("/")
    return prefix if slash and prefix in ATTRIBUTED else None


@dataclasses.dataclass(frozen=True)
class Options:
    alpha: float = DEFAULT_ALPHA
    threshold_pct: float = DEFAULT_THRESHOLD_PCT
    min_repetitions: int = DEFAULT_MIN_REPETITIONS
    counter_threshold_pct: float = DEFAULT_COUNTER_THRESHOLD_PCT
    between_runs_floor_pct: float = DEFAULT_BETWEEN_RUNS_FLOOR_PCT


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
    ci: tuple = (math.nan, math.nan)  # bootstrap interval of new/base median, as changes
    p_adjusted: float = math.nan  # Holm over the suite
    noise_floor: float = math.nan  # learned A/A spread (fraction); NaN: not calibrated
    assumed_floor: float = math.nan  # uncalibrated: the between-run floor assumed instead
    runs: tuple = (1, 1)  # whole runs behind each side: baseline runs, new run + reruns
    sigma: float = math.nan  # calibrated spread of log(median) between runs; NaN: none
    sigma_df: int = 0  # its degrees of freedom (the runs it came from, less one); 0: normal
    screen_p: float = math.nan  # one-sided p of the between-runs test, before Holm
    counters: list = dataclasses.field(default_factory=list)  # (name, base, new) that moved
    counter_regressions: list = dataclasses.field(default_factory=list)
    count_tests: dict = dataclasses.field(default_factory=dict)  # counter -> CountTest
    confirmation: str = ""  # what the confirmation rerun said, when there was one
    baseline_valid: bool = True  # False: the baseline could not be judged on this one

    @property
    def regression(self):
        return self.verdict in (SLOWER, COUNTS)

    def moved(self):
        """'ipis_sent/op 8.0 -> 16.0; ...': the attributed counters that moved."""
        return "; ".join("%s %s -> %s%s" % (
            name, _figure(old), _figure(new),
            " " + self.count_tests[name].text() if name in self.count_tests else "")
            for name, old, new in self.counters)

    def line(self):
        """One line a person reads in a log: verdict, figures with their interval, why."""
        label = display_name(self.name)
        if self.verdict in (MISSING, ERROR):
            return "%s: %s: %s" % (label, self.verdict, self.note)
        figures = []
        if math.isfinite(self.change):
            figure = "%+.1f%% time" % (100 * self.change)
            if all(math.isfinite(c) for c in self.ci):
                figure += " [%d%% CI %+.1f%%..%+.1f%%]" % (
                    round(100 * CONFIDENCE), 100 * self.ci[0], 100 * self.ci[1])
            figures.append(figure)
        if math.isfinite(self.screen_p):  # judged on whole runs: that p decided
            figures.append("p=%.4f over %d vs %d runs" % ((self.screen_p,) + self.runs) + (
                " (Holm %.4f)" % self.p_adjusted if math.isfinite(self.p_adjusted) else ""))
        elif math.isfinite(self.pvalue):
            figures.append("p=%.4f" % self.pvalue + (
                " (Holm %.4f)" % self.p_adjusted if math.isfinite(self.p_adjusted) else ""))
        if self.verdict == TOO_FEW:
            return "%s: %s (%s)" % (label, self.note, ", ".join(figures))
        if math.isfinite(self.noise_floor):
            figures.append("noise floor %.1f%%" % (100 * self.noise_floor))
        elif math.isfinite(self.assumed_floor):
            figures.append("not calibrated: between-run floor %g%% assumed"
                           % (100 * self.assumed_floor))
        else:
            figures.append("noise floor not calibrated")
        figures.append("repetitions %d vs %d" % self.repetitions)
        text = "%s: %s (%s)" % (label, self.verdict, ", ".join(figures))
        for extra in (self.moved(), self.note, self.confirmation):
            if extra:
                text += "; " + extra
        return text


def _figure(value):
    return "%.3g" % value if abs(value) < 100 else "%.0f" % value


def change(old, new):
    """compare.py's calculate_change, so the two tools print the same percentage."""
    if old == 0 and new == 0:
        return 0.0
    if old == 0:
        return (new - old) / ((old + new) / 2)
    return (new - old) / abs(old)


def utest_pvalue(base, new):
    """Two-sided U test p-value; identical samples (all ties) mean no evidence: 1.0."""
    pvalue = u_test(base, new, "two-sided")
    return 1.0 if math.isnan(pvalue) else pvalue


# scipy's mannwhitneyu(method='auto') is exact up to this many values on either side (and
# no ties), asymptotic above.
_EXACT_U_MAX = 8


def u_test(x, y, alternative):
    """scipy.stats.mannwhitneyu(x, y, alternative=...).pvalue (x, y without NaN). Where
    scipy's 'auto' method is the asymptotic one (more than 8 values each side, which the
    gate's minimum repetitions ask for), the same arithmetic here: ranks with ties
    averaged, the tie-corrected spread and the continuity correction. Equal to scipy's to
    the last bits (testing/py/test_gate.py checks it), without its per-call machinery of
    about 2 ms, which 200 benchmarks paid on every compare page."""
    n1, n2 = len(x), len(y)
    if min(n1, n2) <= _EXACT_U_MAX:
        return float(mannwhitneyu(x, y, alternative=alternative).pvalue)
    ranks = rankdata(numpy.concatenate([numpy.asarray(x, dtype=float),
                                        numpy.asarray(y, dtype=float)]))
    u1 = float(ranks[:n1].sum()) - n1 * (n1 + 1) / 2
    u2 = n1 * n2 - u1
    u, factor = {"greater": (u1, 1), "less": (u2, 1)}.get(alternative, (max(u1, u2), 2))
    _values, ties = numpy.unique(ranks, return_counts=True)
    n = n1 + n2
    spread = math.sqrt(n1 * n2 / 12 * ((n + 1) - float((ties ** 3 - ties).sum()) / (n * (n - 1))))
    numerator = u - n1 * n2 / 2 - 0.5
    if spread > 0:
        z = numerator / spread
    else:  # every value tied: scipy's division gives +-inf (or nan)
        z = math.copysign(math.inf, numerator) if numerator else math.nan
    return min(max(factor * float(norm.sf(z)) if not math.isfinite(z) else
                   factor * 0.5 * math.erfc(z / math.sqrt(2)), 0.0), 1.0)


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
    result.ci = ratio_interval(name, base, new)
    # Judged alone (one benchmark, no floor) until judge_suite adds the suite's view.
    _decide(result, result.pvalue, math.nan, options)
    return result


def resampled_medians(values, rng, resamples):
    """numpy.median(values[rng.integers(0, n, (resamples, n))], 1): the medians of
    `resamples` bootstrap resamples, the same draws giving the same figures to the bit,
    found by counting rather than by partitioning each resample (which cost a compare page
    of 200 benchmarks most of a second). The median of a resample is the sorted sample's
    value at the middle rank the drawn indices reach, and a rank's count per resample is
    one bincount."""
    values = numpy.asarray(values, dtype=float)
    n = len(values)
    draws = rng.integers(0, n, (resamples, n))
    if not n or not numpy.isfinite(values).all():  # NaN orders differently: numpy's way
        return numpy.median(values[draws], 1)
    order = numpy.argsort(values, kind="stable")
    rank = numpy.empty(n, dtype=numpy.intp)
    rank[order] = numpy.arange(n)
    ordered = values[order]
    counts = numpy.bincount((rank[draws] + n * numpy.arange(resamples)[:, None]).ravel(),
                            minlength=resamples * n).reshape(resamples, n)
    below = numpy.cumsum(counts, 1)

    def nth(k):  # the k-th smallest (from 1) of each resample
        return ordered[(below < k).sum(1)]
    if n % 2:
        return nth((n + 1) // 2)
    return (nth(n // 2) + nth(n // 2 + 1)) / 2


def percentiles(values, qs):
    """numpy.percentile(values, qs) (its default, linear interpolation), to the bit: the
    same index arithmetic and interpolation on the sorted values, without its per-call
    machinery (a millisecond, twice per benchmark of a compare page). NaN or fewer than
    two values: numpy's own."""
    values = numpy.asarray(values, dtype=float)
    n = len(values)
    if n < 2 or not numpy.isfinite(values).all():
        return [float(v) for v in numpy.percentile(values, list(qs))]
    ordered = numpy.sort(values)
    found = []
    for q in qs:
        index = (n - 1) * (q / 100)
        if not 0 <= index < n - 1:
            found.append(float(numpy.percentile(values, q)))
            continue
        below = math.floor(index)
        low, high = float(ordered[below]), float(ordered[below + 1])
        gamma = index - below
        difference = high - low
        found.append(high - difference * (1 - gamma) if gamma >= 0.5 else
                     low + difference * gamma)
    return found


def ratio_interval(name, base, new, confidence=CONFIDENCE, resamples=BOOTSTRAP_RESAMPLES):
    """Bootstrap interval of median(new) / median(base), as changes (ratio - 1).

    Seeded from the name: the same data always gives the same verdict."""
    rng = numpy.random.default_rng(zlib.crc32(name.encode()))
    base_medians = resampled_medians(base, rng, resamples)
    new_medians = resampled_medians(new, rng, resamples)
    with numpy.errstate(divide="ignore", invalid="ignore"):
        ratios = new_medians / base_medians
    ratios = ratios[numpy.isfinite(ratios)]
    if not len(ratios):
        return math.nan, math.nan
    tail = 100 * (1 - confidence) / 2
    low, high = percentiles(ratios, (tail, 100 - tail))
    return float(low) - 1, float(high) - 1


def _decide(result, p_value, noise_floor, options, assumed_floor=math.nan):
    """slower/faster/same from the (corrected) p, the interval and the noise floor (the
    learned one, else `assumed_floor`, the uncalibrated between-run floor)."""
    threshold = options.threshold_pct / 100
    floor = noise_floor if math.isfinite(noise_floor) else assumed_floor
    margin = max(threshold, floor) if math.isfinite(floor) else threshold
    result.noise_floor, result.assumed_floor = noise_floor, assumed_floor
    significant = p_value < options.alpha
    low, high = result.ci
    slower = result.change > margin and (not math.isfinite(low) or low > threshold)
    faster = result.change < -margin and (not math.isfinite(high) or high < -threshold)
    result.verdict, result.note = SAME, ""
    if significant and (slower or faster):
        result.verdict = SLOWER if slower else FASTER
    elif significant and abs(result.change) > threshold and math.isfinite(noise_floor):
        result.note = "within this benchmark's noise floor"
    elif significant and abs(result.change) > threshold and math.isfinite(floor):
        result.note = ("within the %g%% between-run floor assumed uncalibrated "
                       "(--between-runs-floor; `calibrate` learns each benchmark's own)"
                       % (100 * floor))
    elif significant:
        result.note = "significant but within the %g%% threshold" % options.threshold_pct


def holm(pvalues):
    """Holm's step-down adjustment: family-wise error <= alpha over all of them."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    adjusted, running = [1.0] * len(pvalues), 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(pvalues) - rank) * pvalues[index]))
        adjusted[index] = running
    return adjusted


@dataclasses.dataclass
class CountTest:
    """One gated count of one benchmark, judged against its own noise (count_test)."""
    counter: str
    base: float  # median over the baseline's values (repetitions, or runs' medians)
    new: float
    exact: bool  # fixed by the code path: one event per counting pass may flag
    floor: float  # the rise of the median it needs, in the count's own units
    pvalue: float  # one-sided (new > base) over the values, before Holm
    ci: tuple  # bootstrap interval of median(new) - median(base)
    p_adjusted: float = math.nan  # Holm's, when it was a candidate
    regression: bool = False
    # (base, new) median count_ops, where the new run's counting pass was shorter: its
    # floor then holds what a fixed cost per pass alone would add (pass_length_slack)
    pass_lengths: tuple = ()

    @property
    def candidate(self):
        """Up past its floor: only then can it be a regression (and a test in Holm's
        family; a count below its floor is never flagged, whatever its p)."""
        # (The rounding slack: a count per op of one event per pass is 1/count_ops.)
        return self.new > self.base and self.new - self.base >= self.floor * (1 - 1e-9)

    def text(self):
        """'[95% CI +1.5..+2.1], exact, p=1e-05 (Holm 0.003)' for a verdict's line."""
        low, high = self.ci
        text = "[%d%% CI %s..%s]" % (round(100 * CONFIDENCE), _signed(low), _signed(high)) \
            if math.isfinite(low) and math.isfinite(high) else "[no interval]"
        text += ", %s" % ("exact" if self.exact else "floor %s" % _signed(self.floor))
        if self.pass_lengths:
            text += ", counting passes of %s and %s ops" % tuple(
                _figure(ops) for ops in self.pass_lengths)
        if math.isfinite(self.pvalue):
            text += ", p=%.2g" % self.pvalue
        if math.isfinite(self.p_adjusted):
            text += " (Holm %.2g)" % self.p_adjusted
        return text


def _signed(value):
    return ("+" if value >= 0 else "-") + _figure(abs(value))


def _one_sided_p(base, new):
    """p that `new` is higher than `base`. A U test; against one value (a single stored
    baseline run's median) a sign test of the new values above it, since a U test
    against one value can never be significant. All ties: no evidence, 1.0."""
    if len(base) == 1:
        above = sum(1 for v in new if v > base[0])
        return float(binom.sf(above - 1, len(new), 0.5)) if above else 1.0
    pvalue = u_test(new, base, "greater")
    return 1.0 if math.isnan(pvalue) else pvalue


def difference_interval(key, base, new, confidence=CONFIDENCE, resamples=BOOTSTRAP_RESAMPLES):
    """Bootstrap interval of median(new) - median(base), in the count's units (a ratio
    has no meaning for a count whose baseline is 0). Seeded from `key`."""
    rng = numpy.random.default_rng(zlib.crc32(key.encode()))
    # The new side's draws first, as they always were: the same seed, the same interval.
    new_medians = resampled_medians(new, rng, resamples)
    differences = new_medians - resampled_medians(base, rng, resamples)
    tail = 100 * (1 - confidence) / 2
    low, high = percentiles(differences, (tail, 100 - tail))
    return float(low), float(high)


# The largest count a counting pass can add once, whatever its length, with room: twice
# the 7 cross-CPU calls per pass measured on the instruction clock (a toggle that
# interrupts an active thread's vCPU: 7 + 2 per toggle, over passes of 1, 2 and 3).
PER_PASS_COUNT_BOUND = 16.0


def pass_length_slack(before, base_ops, new_ops):
    """How far a count per op can rise only because the new run's counting pass was
    shorter. The counting pass runs min(count_iterations, the timed pass's iterations)
    operations, so a row that times only 1-3 iterations (a toggle that IPIs a busy vCPU
    under -icount) counts passes of different lengths from run to run, and a fixed cost
    per pass then moves the count per op: xcalls/op 7/2 + 2 = 5.5 in one run and
    7/1 + 2 = 9 in the next, with nothing changed. A fixed part `a` adds a/new_ops -
    a/base_ops, with `a` at most the whole baseline pass (before x base_ops) and at most
    PER_PASS_COUNT_BOUND. Zero when the pass was not shorter."""
    if not base_ops or not new_ops or new_ops >= base_ops:
        return 0.0
    fixed = min(abs(before) * base_ops, PER_PASS_COUNT_BOUND)
    return fixed * (1 / new_ops - 1 / base_ops)


def count_test(name, counter, old, entry, floors):
    """CountTest of a gated count of benchmark `name`, or None when a side has no values.

    Exact only for a path-fixed count of at least SCHEDULED_COUNT_MIN whose baseline
    values' middle half agree within EXACT_SPREAD: its floor is EXACT_SPREAD of its
    median, or one event per counting pass (1 / count_ops of the new run) or that
    interquartile spread if larger. Any other count is scheduling-dependent: its floor is
    the largest of SCHEDULED_COUNT_FLOOR of the baseline, either run's whole spread over
    its repetitions, SCHEDULED_COUNT_MIN and, where calibrated, its spread between runs.
    Either floor grows by pass_length_slack where the new run's counting pass was the
    shorter."""
    base, new = old.counters.get(counter), entry.counters.get(counter)
    if not base or not new:
        return None
    before, after = statistics.median(base), statistics.median(new)
    # Either run's whole spread: under load thread churn's lock contentions fall from ~5
    # to ~0.2 per op for whole runs (A/A on the VM), so a quiet-looking baseline says
    # little on its own about where an identical run lands.
    spread = max(max(base) - min(base), max(new) - min(new))
    # Exactness on the middle half: one stray event in one repetition (a TLB shootdown
    # beside 16 calls per toggle) does not make a path-fixed count scheduling-dependent.
    # A count near 0 is only stray events, which follow the load: not exact.
    quartiles = numpy.percentile(base, [25, 75])
    middle = float(quartiles[1] - quartiles[0])
    ops = entry.counters.get("count_ops")
    new_ops = statistics.median(ops) if ops else 0.0
    one_event = 1.0 / new_ops if new_ops > 0 else 0.0
    base_ops = statistics.median(old.counters["count_ops"]) \
        if old.counters.get("count_ops") else 0.0
    slack = pass_length_slack(before, base_ops, new_ops)
    exact = (counter_kind(counter) in PATH_FIXED_COUNTS and abs(before) >= SCHEDULED_COUNT_MIN
             and middle <= EXACT_SPREAD * abs(before))
    if exact:
        # Stray events move even a path-fixed count between runs by up to ~1% (A/A:
        # EventOpen's xcalls/fd 2.00 -> 2.02), so the rise must pass EXACT_SPREAD too.
        floor = max(one_event, middle, EXACT_SPREAD * abs(before))
    else:
        calibrated = floors.get((name, counter))
        # The calibrated floor is z * sqrt(2) times its relative spread between runs
        # (floors.counter_floor), relative to the baseline's mean, not its median: a count
        # that is mostly 0 with a context switch now and then has a median of 0.
        scale = max(abs(before), abs(statistics.mean(base)))
        noise = math.log1p(calibrated.noise_floor) * scale if calibrated else 0.0
        # Beyond the spread, by an event per pass: a count with two modes (unpinned
        # toggles: 0 or 2.05 calls per op, whichever CPU the thread landed on) whose
        # median flips between runs moves by exactly its spread.
        beyond = spread + max(one_event, 1e-9 * spread)
        floor = max(SCHEDULED_COUNT_FLOOR * abs(before), beyond, SCHEDULED_COUNT_MIN, noise)
    if slack:
        # On top of the count's own floor: a shorter pass and real noise can add up.
        floor += slack
    return CountTest(counter, before, after, exact, floor, _one_sided_p(base, new),
                     difference_interval(name + "|" + counter, base, new),
                     pass_lengths=(base_ops, new_ops) if slack else ())


def count_tests(old, entry, floors, options):
    """{counter: CountTest} of a benchmark's gated counts, enough values on the new side."""
    tests = {}
    for counter, values in entry.counters.items():
        if counter_kind(counter) in GATED_COUNTS and len(values) >= options.min_repetitions:
            test = count_test(entry.name, counter, old, entry, floors)
            if test is not None:
                tests[counter] = test
    return tests


def counter_moves(old, entry, floors, options):
    """The attributed counters that moved enough to show: by at least COUNTER_MIN_DELTA,
    the counter threshold and, where calibrated, the count's spread between runs."""
    moved = []
    for name, values in entry.counters.items():
        if counter_kind(name) is None or not values or not old.counters.get(name):
            continue
        before, after = statistics.median(old.counters[name]), statistics.median(values)
        delta = after - before
        calibrated = floors.get((entry.name, name))
        scale = max(abs(before), abs(statistics.mean(old.counters[name])))
        noise = math.log1p(calibrated.noise_floor) * scale if calibrated else 0.0
        margin = max(options.counter_threshold_pct / 100 * abs(before), noise)
        if abs(delta) >= COUNTER_MIN_DELTA and abs(delta) > margin:
            moved.append((name, before, after))
    return moved


def judge_counts(base_entries, new_entries, names, floors, options, time_pvalues=()):
    """{name: (moved, regressions, tests)} for the benchmarks `names`, and the Holm-
    adjusted time p-values: every count up past its floor is a test in one Holm family
    with `time_pvalues` (the suite's time tests), and a regression when its adjusted p
    is below alpha. A count regression also needs the new side's repetitions
    (min_repetitions), as a time does."""
    judged, candidates = {}, []
    for name in names:
        old, entry = base_entries[name], new_entries[name]
        tests = count_tests(old, entry, floors, options)
        moved = counter_moves(old, entry, floors, options)
        shown = {counter for counter, _before, _after in moved}
        for counter, test in tests.items():
            if test.candidate:
                candidates.append(test)
                if counter not in shown:  # a regression is always shown
                    moved.append((counter, test.base, test.new))
        judged[name] = (moved, [], tests)
    adjusted = holm(list(time_pvalues) + [t.pvalue for t in candidates])
    for test, p_adjusted in zip(candidates, adjusted[len(time_pvalues):]):
        test.p_adjusted = p_adjusted
        test.regression = p_adjusted < options.alpha
    for name, (moved, regressions, tests) in judged.items():
        regressions.extend(c for c, t in tests.items() if t.regression)
    return judged, adjusted[:len(time_pvalues)]


def compare_entries(base_entries, new_entries, options=Options(), floors=None):
    """compare_runs of one run on each side (two result files, say)."""
    return compare_runs([base_entries], [new_entries], options, floors)


def pool(runs):
    """{name: Entry}: every run's repetitions and counters of a benchmark, together."""
    pooled, copied = {}, set()
    for entries in runs:
        for name, entry in entries.items():
            if name not in pooled:
                # Copied only when a second run adds to it (a compare page's one run each
                # side deep-copied 200 entries for nothing); never changed in place.
                pooled[name] = entry
                continue
            if name not in copied:
                pooled[name] = copy.deepcopy(pooled[name])
                copied.add(name)
            target = pooled[name]
            target.real_ns = target.real_ns + entry.real_ns
            target.cpu_ns = target.cpu_ns + entry.cpu_ns
            target.errors = target.errors + [e for e in entry.errors if e not in target.errors]
            for counter, values in entry.counters.items():
                target.counters[counter] = target.counters.get(counter, []) + list(values)
    return pooled


def log_medians(runs, name):
    """log(median real time) of each run that timed `name`."""
    logs = []
    for entries in runs:
        entry = entries.get(name)
        times = [v for v in entry.real_ns if math.isfinite(v) and v > 0] if entry else []
        if times:
            logs.append(math.log(statistics.median(times)))
    return logs


# Variance of the median of n normal values, in units of sigma^2 / n (n <= 2: the mean).
_MEDIAN_VARIANCE = {1: 1.0, 2: 1.0, 3: 1.347, 4: 1.193, 5: 1.434, 6: 1.287, 7: 1.465,
                    8: 1.340, 9: 1.478, 10: 1.372}


def between_runs_spread(sigma, base_runs, new_runs):
    """Standard deviation of centre(new) - centre(base) with no change, where a side's
    centre is the mean of its runs' log medians (baseline) or their median (new side:
    one transient run among the reruns must not carry the verdict)."""
    factor = _MEDIAN_VARIANCE.get(new_runs, math.pi / 2)
    return sigma * math.sqrt(1.0 / base_runs + factor / new_runs)


def compare_runs(base_runs, new_runs, options=Options(), floors=None):
    """Verdicts for every benchmark, in the new runs' order, judged as one suite.

    base_runs, new_runs: lists of {name: Entry}, one per whole run (the baseline runs of
    the lineage; the new run and any reruns of its suspects). `floors`: {(name, metric):
    object with .noise_floor and .sigma} from perfscale.gate.floors.

    On this kind of machine whole runs shift by more than their repetitions spread, so a
    benchmark calibrated on this host (its sigma between runs known) is judged on the
    runs, not the repetitions: the change of the centre of log(median) over the runs
    against sigma * sqrt(1/K + c/m). Uncalibrated ones fall back to the U test over the
    pooled repetitions. Holm's correction runs over every benchmark's p together."""
    floors = floors or {}
    base_entries, new_entries = pool(base_runs), pool(new_runs)
    verdicts = _per_benchmark(base_entries, new_entries, options)
    tested = []
    for verdict in verdicts:
        if verdict.verdict not in JUDGED or not math.isfinite(verdict.pvalue):
            continue
        verdict.runs = (len(log_medians(base_runs, verdict.name)),
                        len(log_medians(new_runs, verdict.name)))
        calibrated = floors.get((verdict.name, REAL_TIME))
        if calibrated is not None and getattr(calibrated, "sigma", 0) > 0:
            _between_runs(verdict, calibrated.sigma, log_medians(base_runs, verdict.name),
                          log_medians(new_runs, verdict.name),
                          degrees_of_freedom(getattr(calibrated, "runs", 0)))
        tested.append(verdict)
    pvalues = [v.screen_p if math.isfinite(v.screen_p) else v.pvalue for v in tested]
    judged_names = [v.name for v in verdicts if v.verdict in JUDGED]
    counts, time_adjusted = judge_counts(base_entries, new_entries, judged_names, floors,
                                         options, pvalues)
    level = 1 - options.alpha / max(1, len(tested))
    for verdict, adjusted in zip(tested, time_adjusted):
        verdict.p_adjusted = adjusted
        if math.isfinite(verdict.sigma):
            spread = between_runs_spread(verdict.sigma, *verdict.runs)
            z_suite = quantile(level, verdict.sigma_df)
            _decide_between_runs(verdict, adjusted, math.expm1(z_suite * spread), options,
                                 len(tested))
        else:
            calibrated = floors.get((verdict.name, REAL_TIME))
            if calibrated:
                _decide(verdict, adjusted, calibrated.noise_floor, options)
            else:
                _decide_uncalibrated(verdict, adjusted, base_entries[verdict.name].real_ns,
                                     options)
    for verdict in verdicts:
        if verdict.verdict in JUDGED:
            verdict.counters, verdict.counter_regressions, verdict.count_tests = \
                counts[verdict.name]
            if verdict.counter_regressions and verdict.verdict != SLOWER:
                verdict.verdict = COUNTS
    return verdicts


def _decide_uncalibrated(verdict, p_adjusted, base_times, options):
    """A benchmark with no learned floor, on the U test over the pooled repetitions,
    which do not see how whole runs move: slower only past the between-run floor
    assumed for it (Options.between_runs_floor_pct), and not where the baseline's own
    repetitions already reached the new median (modes: a second mode the baseline had,
    MODES_RATIO), within that floor."""
    floor = options.between_runs_floor_pct / 100
    _decide(verdict, p_adjusted, math.nan, options, floor)
    times = [v for v in base_times if math.isfinite(v)]
    if verdict.verdict != SLOWER or not times:
        return
    slowest, middle = max(times), statistics.median(times)
    if slowest > MODES_RATIO * middle and verdict.new_median_ns <= slowest * (1 + floor):
        verdict.verdict = SAME
        verdict.note = ("within the baseline's own modes: its slowest repetition took %.3gx "
                        "its median, and the new median is within %g%% of it"
                        % (slowest / middle, 100 * floor))


def degrees_of_freedom(runs):
    """Degrees of freedom of a spread between runs estimated from `runs` runs (a
    calibration's 8: 7), or 0 (the normal) when the count is unknown."""
    return max(0, int(runs or 0) - 1)


@functools.lru_cache(maxsize=256)  # scipy's ppf costs a millisecond; a suite asks few
def quantile(level, df=0):
    """The one-sided critical value at `level`: Student's t with df degrees of freedom,
    the normal when df is 0."""
    return float(student.ppf(level, df) if df else norm.ppf(level))


def _between_runs(verdict, sigma, base_logs, new_logs, df=0):
    """The runs' view: change of the centres, its interval and one-sided p (slower).

    sigma is not known but estimated from the calibration's K runs, so the shift over its
    spread follows Student's t with K - 1 degrees of freedom, not the normal: with K = 8,
    the tail at Holm's first step over 34 benchmarks lies at 4.5 spreads, not 3.0. Taken
    as known, a row whose 8 runs happened to agree (and most rows' sigma comes out low
    one time in several) was called slower on A/A nights (3 of the first 4 calibrated A/A
    nightlies on the 2-CPU VM, +39% to +140%; docs/measurements/2026-12-04-aa-trust-times.md)."""
    if not base_logs or not new_logs:
        return
    verdict.sigma, verdict.runs = sigma, (len(base_logs), len(new_logs))
    verdict.sigma_df = df
    spread = between_runs_spread(sigma, len(base_logs), len(new_logs))
    shift = statistics.median(new_logs) - statistics.mean(base_logs)
    verdict.change = math.expm1(shift)
    half = (quantile(0.5 + CONFIDENCE / 2, df) if df else _Z_INTERVAL) * spread
    verdict.ci = (math.expm1(shift - half), math.expm1(shift + half))
    if spread > 0:
        verdict.screen_p = float(student.sf(shift / spread, df) if df else
                                 norm.sf(shift / spread))
    else:
        verdict.screen_p = 0.0 if shift > 0 else 1.0


def _decide_between_runs(result, p_adjusted, noise_floor, options, tests):
    """slower when Holm's p over the suite says so and the change is worth a look;
    faster likewise, mirrored (shown, never gated)."""
    threshold = options.threshold_pct / 100
    result.noise_floor = noise_floor
    result.verdict, result.note = SAME, ""
    p_faster = 1 - result.screen_p
    if p_adjusted < options.alpha and result.change > threshold:
        result.verdict = SLOWER
    elif p_faster * tests < options.alpha and result.change < -threshold:
        result.verdict = FASTER
    elif p_adjusted < options.alpha:
        result.note = "significant but within the %g%% threshold" % options.threshold_pct
    elif result.change > threshold:
        result.note = "within this benchmark's noise between runs"


def gate_status(verdicts):
    """(exit status, reason): 1 on a regression; 2 when something that should have been
    judged could not be (fail closed); 0 only when everything judgeable passed."""
    slower = [v.name for v in verdicts if v.regression]
    if slower:
        return 1, "REGRESSION: %d benchmark(s) slower: %s" % (len(slower), ", ".join(slower))
    if not any(v.verdict in JUDGED for v in verdicts):
        return 2, ("cannot judge: no benchmark has valid timings in both runs (%s)"
                   % (_reasons(verdicts) or "no benchmarks"))
    vanished = [v.name for v in verdicts if v.verdict == MISSING and v.note == VANISHED]
    if vanished:
        # A row the new run lacks was not judged: passing it would let a run that lost
        # benchmarks (a filter, a flag, a machine limit) hide a regression in them.
        return 2, ("cannot judge %d benchmark(s) of the baseline that the new run lacks: %s. "
                   "Run the same benchmarks as the baseline; if they were dropped on "
                   "purpose, compare against a baseline without them (nightly: a new "
                   "--config)" % (len(vanished), ", ".join(vanished)))
    unjudged = [v for v in verdicts if v.verdict in (TOO_FEW, ERROR) or (
        v.verdict == MISSING and v.baseline_valid and v.note.startswith("no valid timings"))]
    if unjudged:
        return 2, "cannot judge %d benchmark(s) that the baseline had: %s" % (
            len(unjudged), _reasons(unjudged))
    return 0, "no regression"


def _reasons(verdicts):
    notes = {}
    for v in verdicts:
        notes.setdefault(v.note or v.verdict, []).append(v.name)
    return "; ".join("%s (%d)" % (note, len(names)) for note, names in notes.items())


def _per_benchmark(base_entries, new_entries, options):
    verdicts = []
    for name, entry in new_entries.items():
        old = base_entries.get(name)
        if old is None:
            verdicts.append(Verdict(name, MISSING, note="new benchmark, not in the baseline",
                                    baseline_valid=False))
        elif entry.errors and not entry.real_ns and old.errors and not old.real_ns:
            # What the machine forbade on both sides (a skip, in either result format) is
            # said as such: nothing failed.
            if entry.skipped and old.skipped:
                both = "skipped in both runs: " + "; ".join(
                    e[len(io.SKIP_PREFIX):] for e in entry.errors)
            else:
                both = "error in both runs: " + "; ".join(entry.errors)
            verdicts.append(Verdict(name, MISSING, note=both, baseline_valid=False))
        elif entry.errors and not entry.real_ns:
            verdicts.append(Verdict(name, ERROR, note="; ".join(entry.errors)))
        elif old.errors and not old.real_ns:
            verdicts.append(Verdict(name, MISSING, note="baseline had an error: "
                                    + "; ".join(old.errors), baseline_valid=False))
        else:
            verdict = compare_samples(name, old.real_ns, entry.real_ns, options)
            verdict.baseline_valid = any(math.isfinite(v) for v in old.real_ns)
            verdicts.append(verdict)
    for name, old in base_entries.items():
        if name not in new_entries:
            timed = any(math.isfinite(v) for v in old.real_ns)
            verdicts.append(Verdict(name, MISSING, note=VANISHED if timed else
                                    "in the baseline only (no timings there either)",
                                    baseline_valid=timed))
    return verdicts
