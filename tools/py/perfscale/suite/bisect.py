"""The first bad kernel of an ordered list, judged by a counter (`tools/perfscale bisect`).

Each kernel is booted as `tools/perfscale vm` boots it and runs the one benchmark the regex
matches. The good and bad kernels are measured first: a kernel is bad when its counter's
median is nearer the bad one's value than the good one's, so the direction (more or
fewer) comes from the data. Kernels between them are assumed to be good up to some point
and bad after it (the usual bisection premise); the answer is the first bad one, found in
about log2(kernels) boots. A kernel that does not boot is skipped, with its reason, and
the next nearest the middle is tried; where skipped kernels leave the answer open, all it
can be are named. Counters rather than times are the judge: the guests run under
TCG here, where times are not comparable (perfscale.gate.comparability).
"""

import dataclasses
import os
import re
import statistics
import tempfile
from typing import List

from perfscale.results import io
from perfscale.suite import runner
from perfscale.vm import errors, qemu

# A and B must differ by at least this much, relative to the larger, to be worth bisecting.
MIN_SEPARATION = 0.10


class BisectError(Exception):
    pass


class Skipped(Exception):
    """A kernel that cannot be judged (it does not boot on the machine asked for): the
    bisection goes around it, as `git bisect skip` does."""


@dataclasses.dataclass
class Settings:
    """One guest run per kernel (`tools/perfscale bisect`'s options, typed): the benchmark
    (a regex matching exactly one), the counter judged, the binary's further flags, and
    the guest's size."""
    benchmark: str
    counter: str
    flags: List[str] = dataclasses.field(default_factory=list)
    cpus: int = 2
    mem: int = 1024
    timeout: int = 600
    repetitions: int = 3


def first_bad(kernels, good, bad, measure, log=lambda line: None):
    """The index of the first bad kernel in kernels[good+1 .. bad].

    `measure(kernel) -> float` runs one kernel; it raises Skipped for one that cannot be
    judged, and the bisection tries the next nearest the middle. Returns (index,
    {index: value, None for a skipped one}).
    """
    if not 0 <= good < bad < len(kernels):
        raise BisectError("--good must come before --bad in --kernels")
    values, skipped = {}, {}

    def value(index):
        if index not in values:
            try:
                values[index] = measure(kernels[index])
                log("%s: %g" % (kernels[index], values[index]))
            except Skipped as why:
                values[index] = None
                skipped[index] = str(why)
                log("%s: skipped: %s" % (kernels[index], why))
        return values[index]

    for end, name in ((good, "good"), (bad, "bad")):
        if value(end) is None:
            raise BisectError("the %s kernel %s cannot be measured: %s"
                              % (name, kernels[end], skipped[end]))
    good_value, bad_value = values[good], values[bad]
    spread = max(abs(good_value), abs(bad_value))
    if spread == 0 or abs(bad_value - good_value) < MIN_SEPARATION * spread:
        raise BisectError("the good and bad kernels do not differ in the counter (%g vs %g):"
                          " nothing to bisect" % (good_value, bad_value))

    low, high = good, bad  # low is known good, high known bad
    while True:
        untried = [i for i in range(low + 1, high) if i not in skipped]
        if not untried:
            break
        middle = min(untried, key=lambda i: (abs(i - (low + high) / 2), i))
        if value(middle) is None:
            continue
        if abs(values[middle] - bad_value) < abs(values[middle] - good_value):
            high = middle
        else:
            low = middle
        log("  %s judged %s" % (kernels[middle], "bad" if high == middle else "good"))
    if any(low < i < high for i in skipped):
        raise BisectError("the first bad kernel is one of %s: %s"
                          % (", ".join(kernels[low + 1:high + 1]), "; ".join(
                              "%s was skipped (%s)" % (kernels[i], skipped[i].split("\n")[0])
                              for i in range(low + 1, high))))
    return high, values


def counter_median(results, benchmark, counter):
    """The median of `counter` over the one benchmark whose name `benchmark` matches."""
    pattern = re.compile(benchmark)
    matches = [e for name, e in results.entries.items() if pattern.search(name)]
    if len(matches) != 1:
        raise BisectError("--benchmark '%s' matched %d benchmarks in %s%s" % (
            benchmark, len(matches), results.source,
            (": " + ", ".join(e.name for e in matches[:5])) if matches else ""))
    values = matches[0].counters.get(counter)
    if not values:
        raise BisectError("%s has no counter '%s' (it has: %s)" % (
            matches[0].name, counter, ", ".join(sorted(matches[0].counters)) or "none"))
    return statistics.median(values)


def machine(settings, kernel=""):
    """The guest a kernel boots in (qemu.machine_problem says whether it may)."""
    return qemu.Machine(kernel, settings.cpus, settings.mem, settings.timeout)


def vm_measure(settings):
    """measure(kernel) that runs the benchmark in a guest booting it and reads the counter."""
    def measure(kernel):
        with tempfile.TemporaryDirectory(prefix="perfscale-bisect-") as scratch:
            out = os.path.join(scratch, "result.json")
            log = os.path.join(scratch, "run.log")
            options = runner.Options(repetitions=settings.repetitions, out=out,
                                     flags=["--benchmark_filter=" + settings.benchmark]
                                     + settings.flags)
            # Quiet unless it fails: a bisection is a log of values, not of builds.
            with runner.output_to(log):
                try:
                    status = runner.run_suite(options, qemu.launcher(machine(settings, kernel)),
                                              "bisect-cpus%d" % settings.cpus).status
                except (runner.UsageError, runner.BuildError) as err:
                    print(err)
                    status = 2
            if status != 0:
                with open(log, encoding="utf-8", errors="replace") as f:
                    lines = f.read().splitlines()
                if status == errors.DID_NOT_BOOT_STATUS:
                    raise Skipped(next((l[len("perfscale vm: "):] for l in lines
                                        if l.startswith("perfscale vm: the kernel did not boot")),
                                       "it did not boot"))
                raise BisectError("the run on kernel %s failed (exit status %d):\n%s"
                                  % (kernel, status, "\n".join(lines[-10:])))
            return counter_median(io.load_results(out), settings.benchmark, settings.counter)
    return measure
