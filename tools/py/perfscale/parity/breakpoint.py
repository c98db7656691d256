"""`tools/perfscale parity breakpoint`: perf bench breakpoint thread|enable vs
//benchmarks:breakpoint on the same parameters.

perf bench does one timed run of --repeat operations per invocation. Ours repeats the
same run until --benchmark_min_time has passed (thread churn: 0.5 s; enable: as long as
perf bench's toggles took in the same round), three times over (Google Benchmark
repetitions, each with fresh threads), and takes the median: where the threads land
decides much of the figure, and three placements per round steady it.
"""

from perfscale.parity import common

# The command's --help line (perfscale.commands.parity.breakpoint).
DESCRIPTION = "perf bench breakpoint vs //benchmarks:breakpoint"

# The default cases; `parity breakpoint --thread/--enable` gives others.
THREAD_REPEAT = 56  # batches per run, as in the seed
THREAD_CASES = [(b, 2, 20, THREAD_REPEAT) for b in (0, 4)]  # (breakpoints, parallelism, threads, repeat)
ENABLE_CASES = [(0, 0, 20000), (8, 0, 5000), (0, 1, 5000)]  # (passive, active, repeat)


def cases(min_time: str, thread_cases=None, enable_cases=None):
    # A user's own cases also name their repeat, which the default cases' labels (kept as
    # the recorded sessions have them) leave out.
    custom = thread_cases is not None or enable_cases is not None
    result = []
    for b, p, t, repeat in THREAD_CASES if thread_cases is None else thread_cases:
        name = "BM_BreakpointThread/breakpoints:%d/parallelism:%d/threads:%d/real_time" % (b, p, t)
        result.append(common.Case(
            label="thread B=%d P=%d T=%d" % (b, p, t) + (" R=%d" % repeat if custom else ""),
            reference_cmd=["perf", "bench", "--repeat=%d" % repeat, "breakpoint",
                           "thread", "-b", str(b), "-p", str(p), "-t", str(t)],
            reference_parse=common.parse_perf_usecs_per_op,
            ours_args=["--breakpoint_breakpoints=%d" % b, "--breakpoint_parallelism=%d" % p,
                       "--breakpoint_threads=%d" % t, "--breakpoint_repeat=%d" % repeat,
                       "--breakpoint_passive=0", "--breakpoint_active=0",
                       "--benchmark_filter=^%s$" % name, "--benchmark_min_time=%ss" % min_time],
            ours_repetitions=3))
    for passive, active, repeat in ENABLE_CASES if enable_cases is None else enable_cases:
        name = ("BM_BreakpointEnable/passive:%d/active:%d/placement:unpinned/real_time" %
                (passive, active))
        result.append(common.Case(
            label="enable passive=%d active=%d" % (passive, active)
            + (" R=%d" % repeat if custom else ""),
            reference_cmd=["perf", "bench", "--repeat=%d" % repeat, "breakpoint", "enable",
                           "-p", str(passive), "-a", str(active)],
            reference_parse=common.parse_perf_usecs_per_op,
            ours_args=["--breakpoint_breakpoints=0", "--breakpoint_parallelism=1",
                       "--breakpoint_passive=%d" % passive, "--breakpoint_active=%d" % active,
                       "--breakpoint_placement=unpinned",
                       "--benchmark_filter=^%s$" % name],
            # As long as perf bench's toggles took in the same round: a toggle's IPIs
            # cost less the longer a loop keeps the other CPUs awake (0.75x perf bench's
            # figure over 0.5 s against its 0.2 s, 0.98x over the same length:
            # docs/measurements/2026-12-07-enable-placement.md).
            ours_min_time=lambda usecs_per_op, repeat=repeat: usecs_per_op * repeat / 1e6,
            ours_repetitions=3))
    return result


def run(args, thread_cases=None, enable_cases=None):
    """The parity with common.Settings `args` on the default cases, or on the cases given
    (thread: (breakpoints, parallelism, threads, repeat); enable: (passive, active,
    repeat)); prints the table: 0 within tolerance, 1 not, 2 it could not run."""
    if thread_cases is not None or enable_cases is not None:
        thread_cases, enable_cases = thread_cases or [], enable_cases or []
    return common.run_parity("breakpoint", cases("0.5", thread_cases, enable_cases), args)
