"""Change points over a whole series: E-Divisive means (Matteson and James, "A
nonparametric approach for multiple change point analysis of multivariate data", JASA
2014), the method MongoDB's CI and Apache Otava run over their nightly histories.

Separate from the nightly's verdict (gate/stats.py), which judges one night against its
baseline: this looks back over every night of a lineage and says where a sustained step
began, even one made of nights that each passed.

Bisection: the split that maximises the divergence statistic Q over the current segments
is kept if a permutation test finds it significant (p < alpha), and the search goes on in
the two halves; no segment is shorter than min_size runs. The series is log(median time)
so a step is judged as a ratio, whatever the benchmark's scale.
"""

import dataclasses
import functools
import zlib

import numpy

DEFAULT_ALPHA = 0.01
DEFAULT_PERMUTATIONS = 199
DEFAULT_MIN_SIZE = 5


@dataclasses.dataclass
class ChangePoint:
    index: int      # first point of the new level
    pvalue: float   # permutation p of the split when it was found
    before: float   # median of the segment before (in the series' own values)
    after: float    # median of the segment after

    @property
    def change(self):
        """(after - before) / before: the step as a fraction."""
        return (self.after - self.before) / self.before if self.before else float("nan")


# Distance matrices held at once by the permutation test: about one L2 cache. On this
# project's VM 1 MB batches ran the 365-run series twice as fast as 32 MB ones (memory
# traffic, not arithmetic, is the cost).
_BATCH_BYTES = 1 << 20


@functools.lru_cache(maxsize=16)
def _strictly_lower(n):
    return numpy.tri(n, n, -1)


def _q_batch(series, min_size):
    """Q(tau) for every admissible tau of each row of `series` (shape (B, n)); returns
    (taus, q of shape (B, len(taus))).

    With exponent 1 the three sums of Q are sums of |x_i - x_j| over pairs: within the
    left part (L), within the right part (R) and across (the rest of the total), so one
    pass of row sums of the distance matrix's lower triangle gives them for every tau.
    A row's full sum depends on its value only (the permutation test reorders values), so
    it comes from one sorted pass, not from the matrix."""
    batch, n = series.shape
    taus = numpy.arange(min_size, n - min_size + 1)
    if taus.size == 0:
        return taus, numpy.empty((batch, 0))
    dist = series[:, :, None] - series[:, None, :]
    numpy.abs(dist, out=dist)
    lower = numpy.einsum("bij,ij->bi", dist, _strictly_lower(n))  # per i: over j < i
    upper = _row_sums(series) - lower                               # per i: over j > i
    left = numpy.concatenate([numpy.zeros((batch, 1)), lower.cumsum(axis=1)], axis=1)
    right = numpy.concatenate([upper[:, ::-1].cumsum(axis=1)[:, ::-1],
                               numpy.zeros((batch, 1))], axis=1)
    total = left[:, -1:]
    within_left, within_right = left[:, taus], right[:, taus]
    between = total - within_left - within_right
    t = taus.astype(float)
    u = n - t
    q = (t * u / n) * (2.0 * between / (t * u) - 2.0 * within_left / (t * (t - 1))
                       - 2.0 * within_right / (u * (u - 1)))
    return taus, q


def _row_sums(series):
    """sum_j |x_i - x_j| for each i of each row, from the sorted values: O(n log n)."""
    n = series.shape[1]
    order = numpy.argsort(series, axis=1)
    ranked = numpy.take_along_axis(series, order, axis=1)
    below = numpy.concatenate([numpy.zeros((series.shape[0], 1)),
                               ranked.cumsum(axis=1)[:, :-1]], axis=1)
    k = numpy.arange(n)
    sums_sorted = ranked * (2 * k - n + 1) + (ranked.sum(axis=1, keepdims=True) - below
                                             - ranked) - below
    out = numpy.empty_like(sums_sorted)
    numpy.put_along_axis(out, order, sums_sorted, axis=1)
    return out


def _best_split(values, min_size):
    taus, q = _q_batch(values[None, :], min_size)
    if taus.size == 0:
        return None, -numpy.inf
    best = int(numpy.argmax(q[0]))
    return int(taus[best]), float(q[0, best])


def _significance(values, observed, min_size, permutations, alpha, rng):
    """Permutation p of `observed` (the segment's best Q), the permutations drawn in
    batches; stops once the answer cannot fall under alpha."""
    n = len(values)
    batch_size = max(1, min(permutations, _BATCH_BYTES // (8 * n * n)))
    exceed, done, limit = 0, 0, alpha * (permutations + 1)
    while done < permutations:
        size = min(batch_size, permutations - done)
        shuffled = rng.permuted(numpy.broadcast_to(values, (size, n)), axis=1)
        _taus, q = _q_batch(shuffled, min_size)
        exceed += int((q.max(axis=1) >= observed).sum())
        done += size
        if exceed + 1 > limit:
            return (exceed + 1) / (done + 1)
    return (exceed + 1) / (permutations + 1)


def detect(series, alpha=DEFAULT_ALPHA, permutations=DEFAULT_PERMUTATIONS,
           min_size=DEFAULT_MIN_SIZE, seed=None):
    """Change points of `series` (floats, oldest first; non-positive or NaN values are
    dropped before looking, and indexes refer to the original series), oldest first.

    seed: the permutations' seed; by default one derived from the values, so a page
    shows the same points every time it is drawn."""
    raw = numpy.asarray(series, dtype=float)
    keep = numpy.flatnonzero(numpy.isfinite(raw) & (raw > 0))
    values = numpy.log(raw[keep])
    if seed is None:
        seed = zlib.crc32(values.tobytes())
    rng = numpy.random.default_rng(seed)
    found = {}  # index into `values` -> p of the split
    while True:
        bounds = [0] + sorted(found) + [len(values)]
        best = None
        for start, end in zip(bounds, bounds[1:]):
            tau, q = _best_split(values[start:end], min_size)
            if tau is not None and (best is None or q > best[2]):
                best = (start, end, q, start + tau)
        if best is None:
            break
        start, end, q, cut = best
        p = _significance(values[start:end], q, min_size, permutations, alpha, rng)
        if p >= alpha:
            break
        found[cut] = p
    points = []
    bounds = [0] + sorted(found) + [len(values)]
    for i, cut in enumerate(sorted(found)):
        before = numpy.exp(numpy.median(values[bounds[i]:cut]))
        after = numpy.exp(numpy.median(values[cut:bounds[i + 2]]))
        points.append(ChangePoint(int(keep[cut]), found[cut], float(before), float(after)))
    return points
