"""The headline figures the seed threads argue about, computed from one results file.

Each headline compares instances of a family that differ only in the chosen parameters
against the instance at a base value: breakpoints=N against breakpoints=0, strategy
cpu_major against event_major, and so on. The table HEADLINES below is the only place
that knows family and parameter names; a family or parameter missing from the file
omits its headline with a note saying why, so a partial run still gets a report.
"""

import dataclasses
import statistics

from perfscale.results import io, names


@dataclasses.dataclass(frozen=True)
class Spec:
    title: str
    family: str
    keys: tuple  # the parameters that vary between a row and its base
    base: tuple  # their base values; None: the smallest number found (e.g. 1 worker)
    figure: str  # "slowdown", "speedup", "saved", "overhead", "scaling"
    metrics: tuple = ("usecs/op",)  # counters to use, first found; else real time
    explanation: str = ""
    # When set, a row's base is the base instance that agrees with it on these parameters
    # only (the base has fewer: set:none has no recorder or scope); else on all but `keys`.
    match: tuple = None
    where: tuple = ()  # (param, value): instances with another value are left out
    defaults: tuple = ()  # (param, value) shown for instances whose name omits the param


HEADLINES = (
    Spec("Breakpoint slowdown: thread creation", "BM_BreakpointThread", ("breakpoints",),
         ("0",), "slowdown",
         explanation="usecs/op with N inherited breakpoints over usecs/op with none, same "
                     "parallelism and threads (perf bench breakpoint thread)."),
    Spec("Breakpoint slowdown: enable/disable", "BM_BreakpointEnable", ("passive", "active"),
         ("0", "0"), "slowdown",
         explanation="usecs/op of one disable+enable with PASSIVE blocked and ACTIVE spinning "
                     "children over usecs/op with none (perf bench breakpoint enable)."),
    Spec("IPIs per fd saved by affinity", "BM_EventOpen", ("strategy",), ("event_major",),
         "saved", metrics=("ipis_sent/fd", "ipis_system/fd"), defaults=(("load", "0"),),
         explanation="IPIs per opened fd (the benchmark's own, ipis_sent, where counted; else "
                     "the machine's function-call IPIs), opening event by event on every CPU "
                     "(event_major) against each other strategy, same events and kind."),
    Spec("Open time per strategy, unloaded and loaded", "BM_EventOpen", ("strategy",),
         ("event_major",), "speedup", metrics=("usecs/fd",), where=(("phases", "lifecycle"),),
         defaults=(("load", "0"),),
         explanation="usecs per fd of perf stat's whole lifecycle (open, enable, read, "
                     "disable, close), event by event against each other strategy, with no "
                     "load and with L spinning threads pinned to the CPUs (load=CPUs: all "
                     "busy), where moving the opener waits for the scheduler."),
    Spec("Synthesis speed-up per strategy", "BM_Synthesize", ("workers",), (None,), "speedup",
         metrics=("usecs/record",),
         explanation="time with the fewest workers over time with more, per output strategy."),
    Spec("Tracing overhead", "BM_PipePingPong", ("set",), ("none",), "overhead",
         match=("tasks", "placement"), where=(("callchains", "off"), ("sink", "discard")),
         defaults=(("recorder", "ring"),),
         explanation="pipe round trip while a tracepoint set is recorded (recorder=ring: "
                     "perf record's ring buffers) or aggregated in the kernel (recorder=bpf: "
                     "perf lock contention --use-bpf) against nothing recorded (set=none), "
                     "same tasks and placement."),
    Spec("Uprobe hit cost against threads", "BM_UprobeHit", ("threads",), (None,),
         "slowdown", metrics=("usecs/hit",),
         explanation="usecs per call of one thread with T threads calling the probed "
                     "function against one thread, per probe (none: the baseline). Flat when "
                     "hits scale; growing when the hit path serializes (a global "
                     "uprobes_treelock, before Linux 6.12's lockless lookup), beside the "
                     "lock contentions and wait per hit."),
    Spec("Uprobe hits/s against threads", "BM_UprobeHit", ("threads",), (None,), "scaling",
         metrics=("hits/s",),
         explanation="the machine's hits per second with T threads over one thread's: T "
                     "when hits scale, about 1 when one lock serializes them (the published "
                     "2024 baseline: 3.03 M/s on 1 CPU, 3.72 M/s on 8, 2.29 M/s on 32)."),
    Spec("Uprobe attach cost against processes", "BM_UprobeAttach", ("processes",), ("0",),
         "slowdown", metrics=("usecs/probe",),
         explanation="usecs to open and close one system-wide uprobe with P processes "
                     "mapping the binary against none, same number of probes: registering "
                     "writes the breakpoint into every mapping process."),
)


@dataclasses.dataclass
class Headline:
    spec: Spec
    header: list = dataclasses.field(default_factory=list)
    rows: list = dataclasses.field(default_factory=list)
    note: str = ""


def compute(results, specs=HEADLINES):
    return [_compute_one(results, spec) for spec in specs]


def _compute_one(results, spec):
    headline = Headline(spec)
    entries = [e for e in results.entries.values() if e.family == spec.family and e.real_ns
               and all(e.params.get(k, v) == v for k, v in spec.where)]
    if not entries:
        headline.note = "omitted: no %s results in %s" % (spec.family, results.source)
        return headline
    if any(k not in e.params for e in entries for k in spec.keys):
        headline.note = "omitted: %s has no parameter %s in its names" % (
            spec.family, "/".join(spec.keys))
        return headline
    label, metric = _metric(entries, spec.metrics)
    for others, base, entry in _pairs(spec, entries):
        base_value = statistics.median(metric(base))
        value = statistics.median(metric(entry))
        headline.rows.append([
            names.describe(others),
            names.describe({k: entry.params[k] for k in spec.keys}),
            _number(base_value), _number(value), _figure(spec.figure, base_value, value),
            _attributed(base, entry)])
    base_text = names.describe(dict(zip(spec.keys, (b or "smallest" for b in spec.base))))
    headline.header = ["other parameters", "compared", "%s at %s" % (label, base_text),
                       label, spec.figure, "kernel cost (median, base -> this)"]
    if not headline.rows:
        headline.note = "omitted: no %s instance at %s with a sibling to compare" % (
            spec.family, base_text)
    return headline


def _pairs(spec, entries):
    """(the row's other parameters, its base instance, the row's instance) per row."""
    groups = {}
    for entry in entries:
        missing = tuple((k, v) for k, v in spec.defaults if k not in entry.params)
        groups.setdefault(entry.parsed.without(*spec.keys) + missing, []).append(entry)
    at_base = [e for e in entries if tuple(e.params[k] for k in spec.keys) == spec.base]
    for others, members in groups.items():
        if spec.match is None:
            base_values = _base_values(spec, members)
            base = [e for e in members if tuple(e.params[k] for k in spec.keys) == base_values]
        else:
            base = [b for b in at_base
                    if all(b.params.get(k) == members[0].params.get(k) for k in spec.match)]
        for entry in members:
            if base and entry is not base[0] and (spec.match is None or entry not in at_base):
                yield others, base[0], entry


def _metric(entries, counters):
    """The first counter every instance reports, else the median real time."""
    for counter in counters:
        if all(e.counters.get(counter) for e in entries):
            return counter, lambda e, c=counter: e.counters[c]
    unit = io.readable_unit([v for e in entries for v in e.real_ns])
    scale = io.TIME_UNIT_NS[unit]
    return "real time (%s)" % unit, lambda e: [v / scale for v in e.real_ns]


def _attributed(base, entry):
    """What the kernel did in both runs, e.g. "ipis_sent/op 0 -> 16; xcalls/op 0 -> 16":
    the counters either run reports, left out where both are about zero."""
    before = io.attributed_counters(base)
    after = io.attributed_counters(entry)
    parts = []
    for name in list(before) + [n for n in after if n not in before]:
        old = statistics.median(before[name]) if name in before else None
        new = statistics.median(after[name]) if name in after else None
        if all(v is None or abs(v) < 5e-4 for v in (old, new)):
            continue
        parts.append("%s %s -> %s" % (name, "-" if old is None else _number(old),
                                      "-" if new is None else _number(new)))
    return "; ".join(parts) or "-"


def _base_values(spec, members):
    values = []
    for key, base in zip(spec.keys, spec.base):
        if base is None:
            numbers = [(names.as_number(e.params[key]), e.params[key]) for e in members]
            numbers = [n for n in numbers if n[0] is not None]
            base = min(numbers)[1] if numbers else ""
        values.append(base)
    return tuple(values)


def _figure(kind, base, value):
    if kind == "slowdown":
        return "%.1fx" % (value / base) if base else "n/a"
    if kind == "scaling":
        return "%.2fx" % (value / base) if base else "n/a"
    if kind == "speedup":
        return "%.2fx" % (base / value) if value else "n/a"
    if kind == "saved":
        return "%s (%.1f%%)" % (_number(base - value), 100 * (base - value) / base) if base \
            else _number(base - value)
    if kind == "overhead":
        return "%+.1f%%" % (100 * (value - base) / base) if base else "n/a"
    raise ValueError("unknown headline figure %r" % kind)


def _number(value):
    return "%.4g" % value
