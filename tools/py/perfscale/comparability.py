"""Which results' timings may be held against which, and what is left when they may not.

A guest under TCG (QEMU's emulator) runs many times slower than the host, and a guest
with more vCPUs than the host has CPUs time-slices them: neither run's timings mean
anything next to bare metal. What the kernel did (IPIs sent, cross-CPU calls, lock
contentions, context switches per operation) is counted, not timed, and stays
meaningful, so two such runs (two kernels in the same VM set-up) are judged on those.
`vm` labels its results with vm_context(); `compare` calls judge() before it judges
timings.
"""

import statistics

# Counters that count kernel events rather than time; everything else (usecs/op,
# sys_us/op, lock_wait_us/op) is a duration and shares the timings' fate.
COUNT_PREFIXES = ("ipis_sent/", "xcalls/", "lock_contended/", "ctx_switches/",
                  "cpu_migrations/", "page_faults/", "ipis_system/", "ipis/", "fds")
# A count is flagged when the new median is above the base by both of these: counts are
# nearly deterministic, but a system-wide one picks up a stray interrupt now and then.
COUNT_RISE_PCT = 10.0
COUNT_RISE_MIN = 0.5


def vm_context(kernel, vcpus, mem_mib, accel, host_cpus):
    """The JSON context keys `vm` adds to a guest's results (all strings, as Google
    Benchmark's context is)."""
    reasons = []
    if accel != "kvm":
        reasons.append("emulated by QEMU TCG, not run on the CPU")
    if vcpus > host_cpus:
        reasons.append("%d vCPUs time-sliced on %d host CPUs" % (vcpus, host_cpus))
    return {"vm_kernel": kernel, "vm_vcpus": str(vcpus), "vm_memory_mib": str(mem_mib),
            "vm_accelerator": accel, "vm_host_cpus": str(host_cpus),
            "timings_comparable": "no" if reasons else "yes",
            "timings_note": "; ".join(reasons) or "KVM guest within the host's CPUs"}


def timings_comparable(context):
    """(True, '') for bare metal and fair guests, else (False, the reason)."""
    if context.get("timings_comparable") == "no":
        return False, context.get("timings_note", "labelled not comparable")
    return True, ""


def describe(result):
    if "vm_kernel" not in result.context:
        return "%s (%s)" % (result.source, "bare metal or a host run")
    return "%s (guest %s, %s vCPUs, %s)" % (
        result.source, result.context.get("kernel_release", result.context["vm_kernel"]),
        result.context.get("vm_vcpus"), result.context.get("vm_accelerator"))


def is_count(counter):
    return counter.startswith(COUNT_PREFIXES)


def count_changes(base, new):
    """One row per (benchmark, count counter) in both runs: (name, counter, base median,
    new median, flagged)."""
    rows = []
    for name, new_entry in new.entries.items():
        base_entry = base.entries.get(name)
        if base_entry is None:
            continue
        for counter in sorted(new_entry.counters):
            if not is_count(counter) or not base_entry.counters.get(counter):
                continue
            if not new_entry.counters[counter]:
                continue
            before = statistics.median(base_entry.counters[counter])
            after = statistics.median(new_entry.counters[counter])
            flagged = (after - before > COUNT_RISE_MIN
                       and after > before * (1 + COUNT_RISE_PCT / 100))
            rows.append((name, counter, before, after, flagged))
    return rows


def judge(base, new, out):
    """None when both runs' timings are comparable (compare goes on as usual), else the
    exit code: 2 when a non-comparable run meets a comparable one, otherwise 0/1 from
    the count counters alone, whose changes are printed to `out`."""
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
    rows = count_changes(base, new)
    if not rows:
        print("no count counters in common: nothing can be judged", file=out)
        return 2
    width = max(len(r[0]) for r in rows)
    for name, counter, before, after, flagged in rows:
        change = "%+.1f%%" % ((after / before - 1) * 100) if before else "new"
        print("%-*s  %-18s %10.4g -> %10.4g  %8s%s" % (
            width, name, counter, before, after, change, "  HIGHER" if flagged else ""),
            file=out)
    higher = sorted({r[0] for r in rows if r[4]})
    if higher:
        print("COUNTS HIGHER in %d benchmark(s) (by > %g%% and > %g): %s" % (
            len(higher), COUNT_RISE_PCT, COUNT_RISE_MIN, ", ".join(higher)), file=out)
        return 1
    print("no count counter higher", file=out)
    return 0
