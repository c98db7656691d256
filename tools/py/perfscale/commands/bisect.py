"""`tools/perfscale bisect`: the first bad kernel of an ordered list, judged by a counter.

    tools/perfscale bisect --good A --bad B --kernels K1,K2,...|@FILE --benchmark REGEX
        --counter C [--cpus N] [--mem MIB] [--timeout S] [--repetitions N] [-- FLAGS...]

Each kernel is booted as `tools/perfscale vm` boots it and runs the one benchmark REGEX matches
(FLAGS go to the benchmark binary, e.g. --breakpoint_passive=8). A and B are members of the
list, A before B. Both are measured first: a kernel is bad when its counter's median is nearer
B's value than A's, so the direction (more or fewer) comes from the data. Kernels between
A and B are assumed to be good up to some point and bad after it (the usual bisection
premise); the answer is the first bad one, found in about log2(kernels) boots.
Counters rather than times are the judge: the guests run under TCG here, where times are
not comparable (see comparability).
"""

import argparse
import os
import re
import statistics
import sys
import tempfile

from perfscale.results import io
from perfscale.suite import runner
from perfscale.vm import qemu

# A and B must differ by at least this much, relative to the larger, to be worth bisecting.
MIN_SEPARATION = 0.10


class BisectError(Exception):
    pass


def first_bad(kernels, good, bad, measure, log=lambda line: None):
    """The index of the first bad kernel in kernels[good+1 .. bad].

    `measure(kernel) -> float` runs one kernel. Returns (index, {index: value}).
    """
    if not 0 <= good < bad < len(kernels):
        raise BisectError("--good must come before --bad in --kernels")
    values = {}

    def value(index):
        if index not in values:
            values[index] = measure(kernels[index])
            log("%s: %g" % (kernels[index], values[index]))
        return values[index]

    good_value, bad_value = value(good), value(bad)
    spread = max(abs(good_value), abs(bad_value))
    if spread == 0 or abs(bad_value - good_value) < MIN_SEPARATION * spread:
        raise BisectError("the good and bad kernels do not differ in the counter (%g vs %g):"
                          " nothing to bisect" % (good_value, bad_value))

    def is_bad(index):
        return abs(value(index) - bad_value) < abs(value(index) - good_value)

    low, high = good, bad  # low is known good, high known bad
    while high - low > 1:
        middle = (low + high) // 2
        if is_bad(middle):
            high = middle
        else:
            low = middle
        log("  %s judged %s" % (kernels[middle], "bad" if high == middle else "good"))
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


def vm_measure(args):
    """measure(kernel) that runs the benchmark in a guest booting it and reads the counter."""
    def measure(kernel):
        with tempfile.TemporaryDirectory(prefix="perfscale-bisect-") as scratch:
            out = os.path.join(scratch, "result.json")
            log = os.path.join(scratch, "run.log")
            options = runner.Options(repetitions=args.repetitions, out=out,
                                     flags=["--benchmark_filter=" + args.benchmark] + args.flags)
            machine = qemu.Machine(kernel, args.cpus, args.mem, args.timeout)
            # Quiet unless it fails: a bisection is a log of values, not of builds.
            with runner.output_to(log):
                try:
                    status = runner.run_suite(options, qemu.launcher(machine),
                                              "bisect-cpus%d" % args.cpus).status
                except (runner.UsageError, runner.BuildError) as err:
                    print(err)
                    status = 2
            if status != 0:
                with open(log, encoding="utf-8", errors="replace") as f:
                    tail = f.read().splitlines()[-10:]
                raise BisectError("the run on kernel %s failed (exit status %d):\n%s"
                                  % (kernel, status, "\n".join(tail)))
            return counter_median(io.load_results(out), args.benchmark, args.counter)
    return measure


def kernel_list(text):
    if text.startswith("@"):
        with open(text[1:]) as f:
            return [line.strip() for line in f if line.strip() and not line.startswith("#")]
    return [k for k in text.split(",") if k]


def main(argv):
    flags = []
    if "--" in argv:
        argv, flags = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    parser = argparse.ArgumentParser(prog="tools/perfscale bisect",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--good", required=True, metavar="KERNEL")
    parser.add_argument("--bad", required=True, metavar="KERNEL")
    parser.add_argument("--kernels", required=True, metavar="K1,K2,...|@FILE",
                        help="kernel images (or debian:...) in order, or a file of them")
    parser.add_argument("--benchmark", required=True, metavar="REGEX")
    parser.add_argument("--counter", required=True, metavar="NAME", help="e.g. ipis_sent/op")
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--mem", type=int, default=1024, metavar="MIB")
    parser.add_argument("--timeout", type=int, default=600, metavar="S")
    parser.add_argument("--repetitions", type=int, default=3)
    args = parser.parse_args(argv)
    args.flags = flags
    try:
        re.compile(args.benchmark)
    except re.error as err:
        parser.error("--benchmark: %s" % err)
    try:
        kernels = kernel_list(args.kernels)
    except OSError as err:
        parser.error("--kernels: %s" % err)
    for name in ("good", "bad"):
        if getattr(args, name) not in kernels:
            parser.error("--%s %s is not in --kernels" % (name, getattr(args, name)))
    problem = qemu.machine_problem(qemu.Machine("", args.cpus, args.mem, args.timeout))
    if problem:
        parser.error(problem)
    log = lambda line: print(line, flush=True)
    try:
        index, _ = first_bad(kernels, kernels.index(args.good), kernels.index(args.bad),
                             vm_measure(args), log)
    except (BisectError, io.ResultsError) as err:
        print("perfscale bisect: %s" % err, file=sys.stderr)
        return 2 if isinstance(err, BisectError) else 1
    print("first bad kernel: %s" % kernels[index])
    return 0
