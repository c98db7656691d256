"""`tools/perfscale bisect`: the first bad commit of a kernel tree, or the first bad kernel
of an ordered list, judged by the gate.

    tools/perfscale bisect --tree PATH --good REV --bad REV [options] [-- RUN OPTIONS [-- FLAGS]]
    tools/perfscale bisect --kernels K1,K2,...|@FILE --good K --bad K [options] [-- ...]

RUN OPTIONS are `tools/perfscale run`'s (--family, --quick, --profile, --budget; and FLAGS
after their own --, to the binary), as nightly takes them; --repetitions and --out are
bisect's. Each candidate boots in a QEMU guest as `tools/perfscale vm` boots it (a tree's
commit as tree:PATH@SHA, built once and kept). Both ends are measured first; the gate
says what moved (times, attributed counts), or bisect refuses with its figures (exit 2).
Each step measures the benchmarks that moved, alone, on the candidate nearest the middle
and judges it against both ends; a candidate that does not build or boot is skipped with
the reason. The first bad one and its parent are measured again to confirm it, and the
mail its author reads is written beside the measurements (--out; the same command
resumes an interrupted bisection from there). Exit 0: found and confirmed; 1: not
confirmed, left open by skipped candidates, or stopped; 2: usage, or refused; 130:
interrupted (perfscale.suite.bisect; this command parses the options and prints).
"""

import argparse
import re
import signal
import sys

from perfscale import options
from perfscale.suite import bisect
from perfscale.vm import qemu


def kernel_list(text):
    if text.startswith("@"):
        with open(text[1:]) as f:
            return [line.strip() for line in f if line.strip() and not line.startswith("#")]
    return [k for k in text.split(",") if k]


def _terminate_as_interrupt(_signum, _frame):
    raise KeyboardInterrupt


def parse(argv):
    """(Sequence, Settings, the parsed options) from the command line; exits 2 on a usage
    error."""
    ours, run_args = options.split_run_args(argv)
    parser = argparse.ArgumentParser(
        prog="tools/perfscale bisect", description=__doc__.split("\n\n")[0],
        epilog="RUN OPTIONS are `tools/perfscale run`'s (--family, --quick, --profile, "
               "--budget) and FLAGS the binary's, as nightly takes them. Each candidate "
               "boots in a QEMU guest as `tools/perfscale vm` boots it. Exit 0: found and "
               "confirmed (DIR/mail.txt); 1: not confirmed, left open by skips, or stopped; "
               "2: usage or refused; 130: interrupted (the same command resumes). "
               "docs/vm.md, 'Bisecting a slowdown to the commit'.",
        usage="%(prog)s (--tree PATH | --kernels K1,K2,...|@FILE) --good G --bad B "
              "[options] [-- RUN OPTIONS [-- FLAGS...]]")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--tree", metavar="PATH", help="a kernel git tree: bisect the commits "
                        "from --good to --bad (revisions git takes: tags, branches, SHAs)")
    source.add_argument("--kernels", metavar="K1,K2,...|@FILE",
                        help="kernels in order (each %s), or a file of them, one a line: "
                        "--good and --bad are two of them" % options.KERNEL_HELP)
    parser.add_argument("--good", required=True, metavar="REV|KERNEL")
    parser.add_argument("--bad", required=True, metavar="REV|KERNEL")
    parser.add_argument("--benchmark", metavar="REGEX",
                        help="only the benchmarks this matches (the binary's "
                        "--benchmark_filter)")
    parser.add_argument("--counter", metavar="NAME",
                        help="judge by this counter alone (e.g. ipis_system/op, the only IPI "
                        "count before Linux 6.4); default: what the gate judges, the times "
                        "(where comparable) and the attributed counts")
    parser.add_argument("--repetitions", type=int, default=bisect.Settings.repetitions,
                        metavar="N", help="repetitions of each measurement (default "
                        "%(default)s; the gate judges nothing below --min-repetitions)")
    defaults = qemu.Machine("", 2)
    parser.add_argument("--cpus", type=int, default=defaults.cpus, metavar="N",
                        help="the guest's vCPUs (default %(default)s)")
    parser.add_argument("--mem", type=int, default=defaults.mem, metavar="MIB",
                        help="guest memory (default %(default)s)")
    parser.add_argument("--timeout", type=int, default=defaults.timeout, metavar="S",
                        help="seconds a guest may take (default %(default)s)")
    parser.add_argument("--append", default=defaults.append, metavar="ARGS",
                        help="more kernel command-line arguments, as vm takes them")
    parser.add_argument("--clock", default=defaults.clock, metavar="real|instructions",
                        help="the guests' clock: real time (the default; under TCG only the "
                        "counts are judged) or QEMU's instruction clock (times judged too)")
    parser.add_argument("--out", metavar="DIR",
                        help="where the measurements, the state and the mail go (default: "
                        "a folder of results/bisect/ named after the ends and settings, so "
                        "the same command resumes)")
    parser.add_argument("--retry-skipped", action="store_true",
                        help="resuming, try the candidates recorded as skipped again (a "
                        "build that failed for a reason since fixed)")
    options.add_gate_options(parser)
    args = parser.parse_args(ours)
    options.check_gate_options(parser, args)
    if args.benchmark is not None:
        try:
            re.compile(args.benchmark)
        except re.error as err:
            parser.error("--benchmark: %s" % err)
    if args.repetitions < 1:
        parser.error("--repetitions must be 1 or more")
    options.check_suite_args(parser, run_args)
    machine = qemu.Machine("", args.cpus, args.mem, args.timeout, args.append,
                           clock=args.clock)
    problem = qemu.machine_problem(machine)
    if problem:
        parser.error(problem)
    if args.benchmark is not None:
        run_args = run_args + ([] if "--" in run_args else ["--"]) + [
            "--benchmark_filter=" + args.benchmark]
    settings = bisect.Settings(run_args=run_args, repetitions=args.repetitions,
                               counter=args.counter or "",
                               gate=options.gate_options(args), machine=machine)
    try:
        if args.tree is not None:
            sequence = bisect.tree_sequence(args.tree, args.good, args.bad)
        else:
            try:
                kernels = kernel_list(args.kernels)
            except OSError as err:
                parser.error("--kernels: %s" % err)
            sequence = bisect.kernel_sequence(kernels, args.good, args.bad)
    except bisect.BisectUsageError as err:
        parser.error(str(err))
    return sequence, settings, args


def main(argv):
    sequence, settings, args = parse(argv)
    log = lambda line: print(line, flush=True)
    try:
        state = bisect.State(args.out or bisect.default_folder(sequence, settings), sequence,
                             settings)
    except bisect.BisectUsageError as err:
        print("perfscale bisect: %s" % err, file=sys.stderr)
        return 2
    log("bisect: measurements, state and mail in %s" % state.folder)
    if args.retry_skipped:
        log("bisect: %d skip(s) forgotten: those are tried again" % state.forget_skips())
    previous = signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    try:
        return bisect.run(sequence, settings, state, bisect.vm_measure(settings, log),
                          ["tools/perfscale", "bisect"] + list(argv), log)
    except bisect.Refused as err:
        print("perfscale bisect: %s; the gate's figures:" % err, file=sys.stderr)
        for line in err.figures:
            print("  " + line, file=sys.stderr)
        return 2
    except bisect.BisectError as err:
        print("perfscale bisect: %s" % err, file=sys.stderr)
        print("perfscale bisect: %d measurement(s) kept in %s; the same command resumes"
              % (state.count(), state.folder), file=sys.stderr)
        return 2 if isinstance(err, bisect.BisectUsageError) else 1
    except KeyboardInterrupt:
        print("perfscale bisect: interrupted; %d measurement(s) kept in %s; the same command "
              "resumes" % (state.count(), state.folder), file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
