"""Which end of a bisection a measurement is like: the gate's verdicts against the good end
and against the bad end (`tools/perfscale bisect`, perfscale.suite.bisect).

First what moved between the ends (moves): every benchmark the gate calls slower or
faster, and every attributed count it calls up or down (a count down is the reversed
comparison's count up), each with its direction. Times are judged only where the runs'
timings may be held against each other (perfscale.gate.comparability: bare metal, a fair
KVM guest, or the instruction clock); under TCG's real clock the counts alone. With a
counter named (`--counter`), that counter alone, through the gate's count test, whether
or not the gate counts it among the ones it gates (ipis_system/op is the only IPI count
before Linux 6.4).

Then each measurement in between (judge): for each thing that moved, whether the gate
tells it apart from the good end in the bad end's direction (it has the change), or from
the bad end back towards the good one (it has not). Where the gate tells it apart from
both ends, or from neither, the nearer end's median decides, and the line says so. The
things that moved vote; a tie goes to the largest move.

    ends = bisection.moves(good.entries, bad.entries, judging)
    verdict = bisection.judge(ends, good.entries, bad.entries, step.entries, judging)
"""

import dataclasses
import math
import statistics
from typing import Optional

from perfscale.gate import comparability, stats
from perfscale.results.names import display_name

GOOD, BAD = "good", "bad"


class NotJudged(Exception):
    """The runs cannot be judged against each other (too few repetitions, a benchmark
    that errored or did not run, timings of different clocks); the text says which."""


@dataclasses.dataclass(frozen=True)
class Judging:
    """How two runs are judged: the gate's options, whether their timings count (times),
    and the one counter to judge by instead of the gate's choice (counter, '' for none)."""
    gate: stats.Options = stats.Options()
    times: bool = True
    counter: str = ""


@dataclasses.dataclass(frozen=True)
class Move:
    """One benchmark's time or count, moved between two runs by the gate's verdict."""
    name: str
    metric: str      # stats.REAL_TIME or a counter (xcalls/op)
    direction: int   # +1: slower or more events; -1: faster or fewer
    before: float    # medians
    after: float
    line: str = ""   # the gate's words for it

    @property
    def key(self):
        return self.name, self.metric

    @property
    def change(self):
        return stats.change(self.before, self.after) if self.before or self.after else 0.0

    @property
    def label(self):
        """BM_X/....real_time_ns or BM_X/....xcalls/op: the robot's metric names."""
        return "%s.%s" % (display_name(self.name), "real_time_ns" if self.metric ==
                          stats.REAL_TIME else self.metric)


def timings_comparable(contexts):
    """(True, '') when the runs' timings may be judged against each other, else (False,
    why): the counts alone are judged then. Runs on different clocks are NotJudged."""
    clocks = {comparability.clock(c) for c in contexts}
    if len(clocks) > 1:
        raise NotJudged("some runs are timed on QEMU's instruction clock and some in real "
                        "time: measure every kernel alike")
    if clocks == {"instructions"}:
        return True, ""
    for context in contexts:
        comparable, why = comparability.timings_comparable(context)
        if not comparable:
            return False, why
    return True, ""


def metric_median(entries, name, metric):
    """The median of a benchmark's time (ns) or counter in one run; NaN without values."""
    entry = entries.get(name)
    if entry is None:
        return math.nan
    values = entry.real_ns if metric == stats.REAL_TIME else entry.counters.get(metric, [])
    values = [v for v in values if math.isfinite(v)]
    return statistics.median(values) if values else math.nan


def moves(base, new, judging):
    """{(name, metric): Move} of what the gate calls moved from run `base` to run `new`
    ({name: io.Entry} each), over the benchmarks both ran. Raises NotJudged when the gate
    could not judge what it was asked to (it never passes what it could not judge)."""
    common = [name for name in new if name in base]
    if not common:
        raise NotJudged("no benchmark ran in both runs")
    base = {name: base[name] for name in common}
    new = {name: new[name] for name in common}
    if judging.counter:
        return _counter_moves(base, new, judging)
    found = {}
    if judging.times:
        verdicts = stats.compare_runs([base], [new], judging.gate)
        status, reason = stats.gate_status(verdicts)
        if status == 2:
            raise NotJudged(reason)
        for v in verdicts:
            if v.verdict in (stats.SLOWER, stats.FASTER):
                direction = 1 if v.verdict == stats.SLOWER else -1
                found[v.name, stats.REAL_TIME] = Move(v.name, stats.REAL_TIME, direction,
                                                      v.base_median_ns, v.new_median_ns,
                                                      v.line())
        ups = {v.name: v.count_tests for v in verdicts if v.counter_regressions}
        regressions = {v.name: v.counter_regressions for v in verdicts}
        down = stats.compare_runs([new], [base], judging.gate)
        downs = {v.name: v.count_tests for v in down if v.counter_regressions}
        down_regressions = {v.name: v.counter_regressions for v in down}
    else:
        ups, regressions = _counts_up(base, new, common, judging.gate)
        downs, down_regressions = _counts_up(new, base, common, judging.gate)
    for tests, chosen, direction in ((ups, regressions, 1), (downs, down_regressions, -1)):
        for name, by_counter in tests.items():
            for counter in chosen.get(name, ()):
                found[name, counter] = _count_move(name, counter, direction,
                                                   by_counter[counter])
    return found


def _count_move(name, counter, direction, test):
    """The Move of a count the gate's CountTest `test` found up (direction 1), or up in
    the reversed comparison (-1: down)."""
    before, after = (test.base, test.new) if direction > 0 else (test.new, test.base)
    return Move(name, counter, direction, before, after, "%s: %s %s -> %s %s" % (
        display_name(name), counter, _figure(before), _figure(after), test.text()))


def _counts_up(base, new, names, gate):
    """({name: {counter: CountTest}}, {name: [counters up]}) of the gated counts alone,
    one Holm family (the timings are not judged). NotJudged when no count had the
    repetitions to be judged."""
    judged, _times = stats.judge_counts(base, new, names, {}, gate)
    if not any(tests for _moved, _regressions, tests in judged.values()):
        raise NotJudged("no benchmark has attributed counts in both runs with %d or more "
                        "repetitions to judge (a kernel before Linux 6.4 counts none: "
                        "--counter ipis_system/op judges by the system-wide IPI count), and "
                        "the timings are not comparable here (--clock instructions makes "
                        "them so)" % gate.min_repetitions)
    return ({name: tests for name, (_m, _r, tests) in judged.items()},
            {name: regressions for name, (_m, regressions, _t) in judged.items()})


def _counter_moves(base, new, judging):
    """Moves of the one counter named, up and down, by the gate's count test, in one Holm
    family over the benchmarks that have it."""
    counter, gate = judging.counter, judging.gate
    tests, fewest = [], None
    for name in base:
        old, entry = base[name], new[name]
        values = [len(old.counters.get(counter, [])), len(entry.counters.get(counter, []))]
        if not all(values):
            continue
        fewest = min(values + ([fewest] if fewest is not None else []))
        if min(values) < gate.min_repetitions:
            continue
        for direction, (a, b) in ((1, (old, entry)), (-1, (entry, old))):
            test = stats.count_test(name, counter, a, b, {})
            if test is not None and test.candidate:
                tests.append((name, direction, test))
    if fewest is None:
        raise NotJudged("no benchmark has the counter '%s' in both runs" % counter)
    if fewest < gate.min_repetitions:
        raise NotJudged("%s: %d repetition(s), need >= %d to judge it (--repetitions)"
                        % (counter, fewest, gate.min_repetitions))
    found = {}
    for (name, direction, test), p in zip(tests, stats.holm([t.pvalue for _n, _d, t in tests])):
        test.p_adjusted = p
        if p < gate.alpha:
            found[name, counter] = _count_move(name, counter, direction, test)
    return found


def _figure(value):
    return "%.4g" % value


@dataclasses.dataclass
class Verdict:
    """What one measurement is: GOOD or BAD, and a line per thing that moved saying why."""
    verdict: str
    lines: list


def judge(ends, good, bad, step, judging):
    """The Verdict of run `step` against the ends, {name: io.Entry} each; `ends` is
    moves(good, bad). NotJudged when the step lacks a benchmark that moved (it did not
    run on that kernel: a skip) or the gate could not judge it."""
    missing = sorted({m.name for m in ends.values()} - set(step))
    if missing:
        raise NotJudged("%s did not run there" % ", ".join(display_name(n) for n in missing))
    absent = [m.name for m in ends.values() if m.metric != stats.REAL_TIME
              and not step[m.name].counters.get(m.metric)]
    if absent:
        raise NotJudged("%s: no %s there" % (display_name(absent[0]), ", ".join(
            sorted({m.metric for m in ends.values() if m.name == absent[0]}))))
    names = {m.name for m in ends.values()}
    keep = lambda entries: {n: e for n, e in entries.items() if n in names}
    from_good = moves(keep(good), keep(step), judging)
    from_bad = moves(keep(bad), keep(step), judging)
    votes, lines = [], []
    for key, move in ends.items():
        left = from_good.get(key)
        back = from_bad.get(key)
        has = left is not None and left.direction == move.direction
        lacks = back is not None and back.direction == -move.direction
        value = metric_median(step, *key)
        if has != lacks:
            vote, how = (BAD if has else GOOD), "the gate tells it from the %s end" % (
                GOOD if has else BAD)
        else:
            vote = BAD if abs(value - move.after) < abs(value - move.before) else GOOD
            how = ("the gate tells it from %s end: the nearer median decides"
                   % ("both ends" if has else "neither"))
        votes.append((vote, abs(math.log(move.after / move.before))
                      if move.before > 0 and move.after > 0 else math.inf))
        lines.append("%s %s (good %s, bad %s): %s; %s" % (
            move.label, _figure(value), _figure(move.before), _figure(move.after), vote, how))
    bad_votes = sum(1 for vote, _size in votes if vote == BAD)
    good_votes = len(votes) - bad_votes
    if bad_votes != good_votes:
        verdict = BAD if bad_votes > good_votes else GOOD
    else:
        verdict = max(votes, key=lambda v: v[1])[0]
        lines.append("as many votes each way: the largest move decides")
    return Verdict(verdict, lines)


def lines(found):
    """The gate's words for moves: a benchmark whose time moved by its verdict's line
    (which names its counts that moved too), the others by each count's line."""
    timed = {m.name for m in found.values() if m.metric == stats.REAL_TIME}
    return [m.line for m in sorted(found.values(), key=lambda m: m.key)
            if m.metric == stats.REAL_TIME or m.name not in timed]


def worst(ends) -> Optional[Move]:
    """The move a mail's subject names: a time where times moved, else a count; the
    largest change."""
    timed = [m for m in ends.values() if m.metric == stats.REAL_TIME]
    pool = timed or list(ends.values())
    return max(pool, key=lambda m: abs(m.change) if math.isfinite(m.change) else 0.0,
               default=None)
