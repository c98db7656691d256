"""Which results' timings may be held against which, and what is left when they may not.

A guest under TCG (QEMU's emulator) runs many times slower than the host, and a guest
with more vCPUs than the host has CPUs time-slices them: neither run's timings mean
anything next to bare metal. What the kernel did (IPIs sent, cross-CPU calls, lock
contentions, context switches per operation) is counted, not timed, and stays
meaningful, so two such runs (two kernels in the same VM set-up) are judged on those.

A guest on the instruction clock (`vm --clock instructions`, QEMU's -icount) is timed in
guest instructions, 1 ns each: not a real machine's time either, but the same path takes
the same time on any host, busy or idle, so two such runs are judged on their timings
against each other, and never against real time. Such runs name their machine after the
clock (host_name INSTRUCTION_CLOCK_HOST), so a nightly history never mixes them with real
time runs, and one host's instruction-clock history holds for another's.
`vm` labels its results with vm_context(); `compare` calls judge() before it judges
timings.
"""

import statistics

from perfscale.gate import stats
from perfscale.results import io

# Counters that count kernel events rather than time (what plot --vs-cpus draws);
# everything else (usecs/op, sys_us/op, lock_wait_us/op) is a duration and shares the
# timings' fate.
COUNT_PREFIXES = ("ipis_sent/", "xcalls/", "lock_contended/", "ctx_switches/",
                  "cpu_migrations/", "page_faults/", "ipis_system/", "ipis/", "fds")
# Shown beside the gated counts, never judged: the only IPI count on kernels before 6.4.
SYSTEM_WIDE = ("ipis_system/op", "ipis_system/fd", "ipis/op", "ipis/fd")


CLOCKS = ("real", "instructions")
INSTRUCTION_CLOCK_HOST = "qemu-instruction-clock"
INSTRUCTION_CLOCK_NOTE = ("QEMU's instruction clock (-icount shift=0): 1 ns per guest "
                          "instruction, idle time skipped; comparable with other "
                          "instruction-clock runs only")


def vm_context(kernel, vcpus, mem_mib, accel, host_cpus, clock="real", guest_host_name=""):
    """The JSON context keys `vm` adds to a guest's results (all strings, as Google
    Benchmark's context is)."""
    reasons = []
    if clock == "instructions":
        reasons.append(INSTRUCTION_CLOCK_NOTE)
    elif accel != "kvm":
        reasons.append("emulated by QEMU TCG, not run on the CPU")
    if vcpus > host_cpus and clock != "instructions":
        reasons.append("%d vCPUs time-sliced on %d host CPUs" % (vcpus, host_cpus))
    context = {"vm_kernel": kernel, "vm_vcpus": str(vcpus), "vm_memory_mib": str(mem_mib),
               "vm_accelerator": accel, "vm_host_cpus": str(host_cpus), "vm_clock": clock,
               "timings_comparable": "no" if reasons else "yes",
               "timings_note": "; ".join(reasons) or "KVM guest within the host's CPUs"}
    if clock == "instructions":
        context.update({"host_name": INSTRUCTION_CLOCK_HOST,
                        "vm_guest_host_name": guest_host_name})
    return context


def clock(context):
    """'instructions' for a run timed on QEMU's instruction clock, else 'real'."""
    return "instructions" if context.get("vm_clock") == "instructions" else "real"


def timings_comparable(context):
    """(True, '') for bare metal and fair guests, else (False, the reason)."""
    if context.get("timings_comparable") == "no":
        return False, context.get("timings_note", "labelled not comparable")
    return True, ""


def describe(result):
    if "vm_kernel" not in result.context:
        return "%s (%s)" % (result.source, "bare metal or a host run")
    return "%s (guest %s, %s vCPUs, %s%s)" % (
        result.source, result.context.get("kernel_release", result.context["vm_kernel"]),
        result.context.get("vm_vcpus"), result.context.get("vm_accelerator"),
        ", instruction clock" if clock(result.context) == "instructions" else "")


def is_count(counter):
    return counter.startswith(COUNT_PREFIXES)


def count_rows(base, new, options):
    """(name, counter, base median, new median, flagged) for each benchmark of both runs:
    the attributed counts the gate (gate.stats) saw move, flagged where it would call
    them a regression, and the system-wide IPI count as information (never flagged: it
    counts whatever else the guest did)."""
    rows = []
    common = [name for name in new.entries if name in base.entries]
    # The counts alone are the suite's tests here: one Holm family of them.
    judged, _times = stats.judge_counts(base.entries, new.entries, common, {}, options)
    for name in common:
        old, entry = base.entries[name], new.entries[name]
        moved, regressions, _tests = judged[name]
        for counter, before, after in moved:
            if stats.counter_kind(counter) in stats.GATED_COUNTS:
                rows.append((name, counter, before, after, counter in regressions))
        for counter in SYSTEM_WIDE:
            if old.counters.get(counter) and entry.counters.get(counter):
                rows.append((name, counter, statistics.median(old.counters[counter]),
                             statistics.median(entry.counters[counter]), False))
    return rows


def _fewest_counted(base, new, names):
    """The fewest repetitions behind a gated count in either run; None without any."""
    counts = [len(values) for name in names for run in (base, new)
              for counter, values in run.entries[name].counters.items()
              if stats.counter_kind(counter) in stats.GATED_COUNTS and values]
    return min(counts) if counts else None


def judge(base, new, out, options):
    """None when both runs' timings are comparable (compare goes on as usual), else the
    exit code: 2 when a non-comparable run meets a comparable one, otherwise 0/1 from
    the counts alone (gate.stats' counts gate), whose changes are printed to `out`."""
    mismatch = io.attribution_mismatch(base.context, new.context)
    if mismatch:
        print("perfscale compare: refusing to compare %s with %s: %s. Compare two runs made "
              "alike." % (describe(base), describe(new), mismatch), file=out)
        return 2
    if clock(base.context) != clock(new.context):
        print("perfscale compare: refusing to compare timings of %s with %s: one is timed "
              "on QEMU's instruction clock, the other in real time. Compare two runs made "
              "alike." % (describe(base), describe(new)), file=out)
        return 2
    if clock(new.context) == "instructions":
        print("timings on %s: judged against each other" % INSTRUCTION_CLOCK_NOTE, file=out)
        if base.cpus != new.cpus:
            print("note: %d vCPUs against %d" % (base.cpus, new.cpus), file=out)
        return None
    base_ok, base_why = timings_comparable(base.context)
    new_ok, new_why = timings_comparable(new.context)
    if base_ok and new_ok:
        return None
    if base_ok != new_ok:
        print("perfscale compare: refusing to compare timings of %s with %s: the first is "
              "%s, the second %s. Compare two runs made alike (e.g. two `vm` runs with "
              "the same --cpus)." % (
                  describe(base), describe(new),
                  base_why or "comparable", new_why or "comparable"), file=out)
        return 2
    print("timings not judged (%s); judging the counted kernel events only" % new_why,
          file=out)
    print("base: %s\nnew:  %s" % (describe(base), describe(new)), file=out)
    if base.cpus != new.cpus:
        print("note: %d CPUs against %d: counts that grow with the CPUs differ for that "
              "reason alone" % (base.cpus, new.cpus), file=out)
    for line in io.count_notes([base.context], new.context, [base.entries], new.entries):
        print(line, file=out)
    common = [n for n in new.entries if n in base.entries]
    if not common:
        print("no benchmark in both runs: nothing can be judged", file=out)
        return 2
    rows = count_rows(base, new, options)
    width = max([len(r[0]) for r in rows] + [1])
    for name, counter, before, after, flagged in rows:
        change = "%+.1f%%" % ((after / before - 1) * 100) if before else "new"
        print("%-*s  %-18s %10.4g -> %10.4g  %8s%s" % (
            width, name, counter, before, after, change, "  COUNTS UP" if flagged else ""),
            file=out)
    higher = sorted({r[0] for r in rows if r[4]})
    if higher:
        print("REGRESSION: counts up in %d benchmark(s): %s" % (len(higher), ", ".join(higher)),
              file=out)
        return 1
    fewest = _fewest_counted(base, new, common)
    if fewest is None:
        print("cannot judge: no benchmark in both runs has attributed counts to compare",
              file=out)
        return 2
    if fewest < options.min_repetitions:  # a gate never passes what it could not judge
        print("cannot judge the counts: %d repetition(s), need >= %d (run both with "
              "--repetitions %d)" % (fewest, options.min_repetitions, options.min_repetitions),
              file=out)
        return 2
    print("no count regression (counts judged with %d or more repetitions, each against "
          "its own spread: docs/counters.md)" % options.min_repetitions, file=out)
    return 0
