"""Per-benchmark noise floors and minimum detectable changes, learned from repeated runs.

On a shared VM whole runs shift: the median of one run differs from the next by more
than its repetitions spread, so a U test within two runs calls A/A noise significant.
What a gate needs is the spread *between* runs of the same benchmark on the same host:
sigma, the standard deviation of log(median) over runs with no change. Two runs then
differ by sigma * sqrt(2), and with n benchmarks judged at once (family-wise alpha,
one-sided since only slower fails):

    noise floor = exp(z(1 - alpha / n) * sqrt(2) * sigma) - 1
    minimum detectable change = exp((z(1 - alpha / n) + z(power)) * sqrt(2) * sigma) - 1

An attributed counter gets the same, on its relative spread. Learned by `tools/perfscale
calibrate` (stored in the history), or from the lineage's recent complete, passing runs.
"""

import math
import statistics

from scipy.stats import norm

from perfscale.gate import stats as results_stats
from perfscale.history import store as history

POWER = 0.9
MIN_RUNS = 4  # fewer runs say too little about the spread between runs
HISTORY_RUNS = 10


def z_suite(alpha, tests):
    return float(norm.ppf(1 - alpha / max(1, tests)))


def floor_and_mdc(sigma, alpha, tests):
    z = z_suite(alpha, tests)
    spread = math.sqrt(2) * sigma
    return math.expm1(z * spread), math.expm1((z + float(norm.ppf(POWER))) * spread)


def learn(runs, alpha=results_stats.DEFAULT_ALPHA):
    """{(name, metric): history.Calibration} from a list of runs ({name: Entry}) taken
    with no change between them."""
    by_metric = {}
    for entries in runs:
        for name, entry in entries.items():
            times = [v for v in entry.real_ns if math.isfinite(v) and v > 0]
            if times:
                by_metric.setdefault((name, results_stats.REAL_TIME), []).append(
                    math.log(statistics.median(times)))
            for counter, values in entry.counters.items():
                if results_stats.counter_kind(counter) and values:
                    by_metric.setdefault((name, counter), []).append(statistics.median(values))
    tests = len({name for name, metric in by_metric if metric == results_stats.REAL_TIME})
    learned = {}
    for (name, metric), values in by_metric.items():
        if len(values) < MIN_RUNS:
            continue
        if metric == results_stats.REAL_TIME:
            sigma = statistics.stdev(values)
        else:  # relative spread of a count; a constant count has none
            mean = statistics.mean(values)
            sigma = statistics.stdev(values) / abs(mean) if mean else 0.0
        floor, mdc = floor_and_mdc(sigma, alpha, tests)
        learned[(name, metric)] = history.Calibration(name, metric, floor, mdc, sigma,
                                                      len(values))
    return learned


def from_history(conn, host, cpus, config, alpha=results_stats.DEFAULT_ALPHA):
    """Learned from the lineage's latest complete, passing runs; {} with too few."""
    ids = [r["id"] for r in conn.execute(
        "SELECT id FROM runs WHERE host = ? AND cpus = ? AND config = ? AND regressions = 0 "
        "AND complete = 1 ORDER BY id DESC LIMIT ?", (host, cpus, config, HISTORY_RUNS))]
    if len(ids) < MIN_RUNS:
        return {}
    return learn([history.load_entries(conn, run_id) for run_id in ids], alpha)


def for_lineage(conn, host, cpus, config, alpha=results_stats.DEFAULT_ALPHA):
    """(floors, source): `calibrate`'s where it ran, else the history's, else none."""
    calibrated = history.load_calibration(conn, host, cpus, config)
    if calibrated:
        return calibrated, "tools/perfscale calibrate of %s" % min(
            c.calibrated_at for c in calibrated.values())
    learned = from_history(conn, host, cpus, config, alpha)
    if learned:
        return learned, "the lineage's last %d passing runs" % max(
            c.runs for c in learned.values())
    return {}, ""
