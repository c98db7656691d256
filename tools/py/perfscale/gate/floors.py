"""Per-benchmark noise floors and minimum detectable changes, learned from repeated runs.

On a shared VM whole runs shift: the median of one run differs from the next by more
than its repetitions spread, so a U test within two runs calls A/A noise significant.
What a gate needs is the spread *between* runs of the same benchmark on the same host:
sigma, the standard deviation of log(median) over runs with no change.

The nightly judges a benchmark on runs (perfscale.gate.stats.compare_runs): the mean of
the lineage's last K passing runs against the new run; a suspect (one-sided p < SCREEN_P)
is rerun, and the median of its m runs is judged at Holm's level over the n benchmarks
of the suite. So, with s(m) = sigma * sqrt(1/K + c/m) (c: the median's variance factor):

(z: Student's t with K - 1 degrees of freedom for a sigma learned from K runs)

    noise floor  exp(z(1 - alpha/n) * s(m)) - 1: the change a confirmed regression needs
    MDC          the slowdown flagged 9 times in 10: screened (z(1 - SCREEN_P) * s(1)),
                 confirmed (z(1 - alpha/n) * s(m)) and above the 5% threshold

An attributed counter gets a floor on its relative spread (two runs, no reruns). Learned
by `tools/perfscale calibrate` (stored in the history), or from the lineage's recent
complete, passing runs.
"""

import collections
import dataclasses
import functools
import json
import math
import statistics
import threading

import numpy
from scipy.stats import norm
from scipy.stats import t as student

from perfscale.gate import confirm, stats
from perfscale.history import store

POWER = 0.9
# The slowdown a nightly should see: a benchmark whose MDC is at most this can (calibrate
# names the families without one; trials check the promise on those).
DETECTABLE = 0.10
MIN_RUNS = 4  # fewer runs say too little about the spread between runs
HISTORY_RUNS = 10
BASELINE_RUNS = 8  # the nightly's baseline: the mean of the lineage's last passing runs
CONFIRM_RUNS = 1 + confirm.DEFAULT_ROUNDS


@functools.lru_cache(maxsize=256)
def z_suite(alpha, tests):
    """The one-sided z of Holm's first step over `tests` (kept: scipy's ppf costs a
    millisecond, and a suite's 200 benchmarks ask it of the same two numbers)."""
    return float(norm.ppf(1 - alpha / max(1, tests)))


def floor_and_mdc(sigma, alpha, tests, base_runs=BASELINE_RUNS, new_runs=CONFIRM_RUNS,
                  threshold=stats.DEFAULT_THRESHOLD_PCT / 100, df=0):
    """(noise floor, minimum detectable change) of a benchmark whose log(median) spreads
    by sigma between runs, judged as the nightly does (see the module comment). df: the
    degrees of freedom of sigma (runs it was learned from, less one), which the nightly's
    test uses (Student's t, stats._between_runs); 0: the normal."""
    return floors_and_mdcs([sigma], alpha, tests, base_runs, new_runs, threshold, df)[0]


def floors_and_mdcs(sigmas, alpha, tests, base_runs=BASELINE_RUNS, new_runs=CONFIRM_RUNS,
                    threshold=stats.DEFAULT_THRESHOLD_PCT / 100, df=0):
    """[floor_and_mdc(sigma, ...) for sigma in sigmas], the same figures to the bit: the
    MDC's bisection runs on every sigma at once, so Student's CDF is one scipy call per
    step for all of them (a call per benchmark cost a tenth of a millisecond each, 36,000
    of them for a lineage's 200 benchmarks: seconds before a server's first compare)."""
    sigma = numpy.asarray(sigmas, dtype=float)
    confirmed = stats.between_runs_spread(sigma, base_runs, new_runs)
    z = stats.quantile(1 - alpha / max(1, tests), df) if df else z_suite(alpha, tests)
    floors = [math.expm1(z * c) for c in confirmed]
    spread = ~(sigma <= 0)  # a NaN sigma goes through the bisection, as it always did
    if not spread.any():
        return [(floor, threshold) for floor in floors]
    sigma, confirmed = sigma[spread], confirmed[spread]
    first = stats.between_runs_spread(sigma, base_runs, 1)
    screen = stats.quantile(1 - stats.SCREEN_P, df) if df else float(norm.isf(stats.SCREEN_P))
    if df:
        def _cdf(x):
            return student.cdf(x, df=df)
    else:  # math.erfc per value: the figures the nightly's own normal gives
        def _cdf(x):
            return numpy.array([_normal_cdf(v) for v in x])

    def power(shift):
        chance = _cdf((shift - z * confirmed) / confirmed)
        chance *= _cdf((shift - math.log1p(threshold)) / confirmed)
        if new_runs > 1:  # it must first be screened as a suspect, on the first run alone
            chance *= _cdf((shift - screen * first) / first)
        return chance

    low = numpy.zeros_like(sigma)
    high = math.log1p(threshold) + 20 * sigma * math.sqrt(2) + 1
    for _ in range(60):
        middle = (low + high) / 2
        weak = power(middle) < POWER
        low, high = numpy.where(weak, middle, low), numpy.where(weak, high, middle)
    mdcs = iter(high)
    return [(floor, math.expm1(float(next(mdcs))) if positive else threshold)
            for floor, positive in zip(floors, spread)]


def _normal_cdf(x):
    return 0.5 * math.erfc(-x / math.sqrt(2))


def counter_floor(relative_sigma, alpha, tests):
    """A count's floor: two runs of it differ by sqrt(2) * its relative spread."""
    return math.expm1(z_suite(alpha, tests) * math.sqrt(2) * relative_sigma)


def _stdev(values):
    """statistics.stdev in floats (it sums exact fractions: a quarter second over a
    lineage's 10 runs of 200 benchmarks, on every compare page); equal to 1e-15."""
    mean = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))


def learn(runs, alpha=stats.DEFAULT_ALPHA):
    """{(name, metric): store.Calibration} from a list of runs ({name: Entry}) taken
    with no change between them."""
    by_metric = {}
    for entries in runs:
        for name, entry in entries.items():
            times = [v for v in entry.real_ns if math.isfinite(v) and v > 0]
            if times:
                by_metric.setdefault((name, stats.REAL_TIME), []).append(
                    math.log(statistics.median(times)))
            for counter, values in entry.counters.items():
                if stats.counter_kind(counter) and values:
                    by_metric.setdefault((name, counter), []).append(statistics.median(values))
    tests = len({name for name, metric in by_metric if metric == stats.REAL_TIME})
    learned, times = {}, {}
    for (name, metric), values in by_metric.items():
        if len(values) < MIN_RUNS:
            continue
        if metric == stats.REAL_TIME:  # judged below, all of one run count at once
            times.setdefault(len(values), []).append((name, _stdev(values)))
            continue
        # Relative spread of a count; a constant count has none.
        mean = math.fsum(values) / len(values)
        sigma = _stdev(values) / abs(mean) if mean else 0.0
        floor = counter_floor(sigma, alpha, tests)
        learned[(name, metric)] = store.Calibration(name, metric, floor, floor, sigma,
                                                      len(values))
    for runs_seen, sigmas in times.items():
        found = floors_and_mdcs([sigma for _name, sigma in sigmas], alpha, tests,
                                min(runs_seen, BASELINE_RUNS),
                                df=stats.degrees_of_freedom(runs_seen))
        for (name, sigma), (floor, mdc) in zip(sigmas, found):
            learned[(name, stats.REAL_TIME)] = store.Calibration(
                name, stats.REAL_TIME, floor, mdc, sigma, runs_seen)
    return {key: learned[key] for key in by_metric if key in learned}  # the order it had


# What from_history learned, per history, runs and alpha, kept in the process (a server's
# compare pages of one lineage learn from the same runs again and again: 10 runs of 200
# benchmarks read and learned took a quarter second a page). A run's figures never change
# once recorded, so the ids of the runs are the key; a new passing run is another key.
_LEARNED_KEPT = 32
_learned = collections.OrderedDict()
_learned_lock = threading.Lock()


def from_history(conn, host, cpus, config, alpha=stats.DEFAULT_ALPHA, machine="",
                 shared=None):
    """Learned from the lineage's latest complete, passing runs; {} with too few.
    shared: where other processes keep what they learned (the dashboard's cache at the
    history's change stamp, perfscale.web.cache: get_or_make(key, make) of bytes), so a
    lineage is learned once per change of the history, not once per process."""
    ids = tuple(store.passing_run_ids(conn, host, cpus, config, HISTORY_RUNS, machine))
    if len(ids) < MIN_RUNS:
        return {}
    key = (conn.name, ids, alpha)
    with _learned_lock:
        if key in _learned:
            _learned.move_to_end(key)
            return dict(_learned[key])

    def learned():
        return learn([store.load_entries(conn, run_id) for run_id in ids], alpha)
    if shared is None:
        found = learned()
    else:
        found = _decoded(shared.get_or_make("floors %r" % (key,),
                                            lambda: _encoded(learned())))
    with _learned_lock:
        _learned[key] = found
        while len(_learned) > _LEARNED_KEPT:
            _learned.popitem(last=False)
    return dict(found)


def _encoded(learned):
    return json.dumps([dataclasses.asdict(c) for c in learned.values()]).encode()


def _decoded(data):
    return {(c.name, c.metric): c for c in (store.Calibration(**fields)
                                             for fields in json.loads(data))}


def for_lineage(conn, host, cpus, config, alpha=stats.DEFAULT_ALPHA, machine="",
                shared=None):
    """(floors, source): `calibrate`'s where it ran, else the history's, else none.
    shared: as from_history's.

    A calibration's runs come minutes apart; the machine also moves over hours (on this
    VM, whole runs 20% faster for half an hour). Where the lineage's recent passing runs
    spread more than the calibration did, their wider floor and MDC are used instead: a
    floor that only ever shrinks would raise false alarms and promise power it lacks."""
    calibrated = store.load_calibration(conn, host, cpus, config, machine)
    learned = from_history(conn, host, cpus, config, alpha, machine, shared)
    if calibrated:
        source = "tools/perfscale calibrate of %s" % min(
            c.calibrated_at for c in calibrated.values())
        wider = {key: dataclasses.replace(learned[key], injected_change=c.injected_change,
                                          calibrated_at=c.calibrated_at)
                 for key, c in calibrated.items()
                 if key in learned and learned[key].sigma > c.sigma}
        if wider:
            source += (", widened for %d of %d metrics that the lineage's last %d passing "
                       "runs spread more" % (len(wider), len(calibrated),
                                             max(c.runs for c in wider.values())))
        return {**calibrated, **wider}, source
    if learned:
        return learned, "the lineage's last %d passing runs" % max(
            c.runs for c in learned.values())
    return {}, ""
