"""`tools/perfscale bisect`: the first bad kernel of an ordered list, judged by a counter.

    tools/perfscale bisect --good A --bad B --kernels K1,K2,...|@FILE --benchmark REGEX
        --counter C [--cpus N] [--mem MIB] [--timeout S] [--repetitions N] [-- FLAGS...]

Each kernel is booted as `tools/perfscale vm` boots it and runs the one benchmark REGEX matches
(FLAGS go to the benchmark binary, e.g. --breakpoint_passive=8). A and B are members of the
list, A before B. Both are measured first: a kernel is bad when its counter's median is nearer
B's value than A's, so the direction (more or fewer) comes from the data. Kernels between
A and B are assumed to be good up to some point and bad after it (the usual bisection
premise); the answer is the first bad one, found in about log2(kernels) boots
(perfscale.suite.bisect; this command parses the options and prints).
"""

import argparse
import re
import sys

from perfscale.options import KERNEL_HELP
from perfscale.results import io
from perfscale.suite import bisect
from perfscale.vm import qemu


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
                        help="kernels in order, or a file of them, one a line; each %s"
                        % KERNEL_HELP)
    parser.add_argument("--benchmark", required=True, metavar="REGEX")
    parser.add_argument("--counter", required=True, metavar="NAME", help="e.g. ipis_sent/op")
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--mem", type=int, default=1024, metavar="MIB")
    parser.add_argument("--timeout", type=int, default=600, metavar="S")
    parser.add_argument("--repetitions", type=int, default=3)
    args = parser.parse_args(argv)
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
    settings = bisect.Settings(args.benchmark, args.counter, flags, args.cpus, args.mem,
                               args.timeout, args.repetitions)
    problem = qemu.machine_problem(bisect.machine(settings))
    if problem:
        parser.error(problem)
    log = lambda line: print(line, flush=True)
    try:
        index, _ = bisect.first_bad(kernels, kernels.index(args.good),
                                    kernels.index(args.bad), bisect.vm_measure(settings), log)
    except (bisect.BisectError, io.ResultsError) as err:
        print("perfscale bisect: %s" % err, file=sys.stderr)
        return 2 if isinstance(err, bisect.BisectError) else 1
    print("first bad kernel: %s" % kernels[index])
    return 0
