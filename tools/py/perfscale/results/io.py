"""Reads Google Benchmark JSON results into per-benchmark samples, and writes clean JSON.

Google Benchmark writes bare NaN/Infinity tokens for counters it could not compute; the
json module reads them as floats. What we write never holds them (strict JSON), because
other tools (browsers, jq, our own DB) reject them.

Every problem with an input file becomes a ResultsError whose text can be shown as is:
the commands print it and exit 2.
"""

import dataclasses
import json
import math
import statistics

from perfscale.results import names

# Google Benchmark's time units, in nanoseconds. We keep every time in ns so that two
# files that picked different units for the same benchmark still compare.
TIME_UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}

# Keys of a benchmark entry that Google Benchmark itself writes; every other numeric key
# is a user counter (usecs/op, ipis_sent/op...).
_OWN_KEYS = frozenset({
    "name", "family_index", "per_family_instance_index", "run_name", "run_type",
    "repetitions", "repetition_index", "threads", "aggregate_name", "aggregate_unit",
    "error_occurred", "error_message", "skipped", "skip_message", "iterations",
    "real_time", "cpu_time", "time_unit", "label", "allocs_per_iter", "max_bytes_used",
    "cpu_coefficient", "real_coefficient", "big_o", "rms",
})

# Counters that say what the kernel did for a figure (benchmarks/harness/bench_support.h), as
# name prefixes: "ipis_sent" matches ipis_sent/op, ipis_sent/fd, ipis_sent/record. The
# attributed ones count the benchmark's own tasks (ipi_mask_calls only on kernels that
# cannot count cpumask IPIs per target); ipis_system counts the whole machine.
ATTRIBUTED_COUNTERS = ("ipis_sent", "ipi_mask_calls", "xcalls", "lock_contended",
                       "lock_wait_us", "ctx_switches", "cpu_migrations", "page_faults",
                       "syscalls", "sys_us")
KERNEL_COST_COUNTERS = ATTRIBUTED_COUNTERS + ("ipis_system",)


def attributed_counters(entry):
    """{counter: values} of `entry`'s kernel-cost counters, in KERNEL_COST_COUNTERS order."""
    found = {}
    for prefix in KERNEL_COST_COUNTERS:
        for name, values in entry.counters.items():
            if name.split("/", 1)[0] == prefix:
                found[name] = values
    return found


def counter_sources(context):
    """{counter prefix: source} from a run's context "counter_sources" (a JSON object in
    a string); {} when the run predates it or the text is not an object."""
    text = context.get("counter_sources")
    if not isinstance(text, str):
        return {}
    try:
        sources = json.loads(text)
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in sources.items()} if isinstance(sources, dict) else {}


def uncountable(base_context, new_context):
    """[(counter, side, reason)] of the attributed counters that one run counted and the
    other's kernel could not give ("unavailable: tracepoint csd:csd_queue_cpu does not
    exist on this kernel" on Linux 5.10): absent there, never zero, and said so rather
    than left out in silence."""
    base, new = counter_sources(base_context), counter_sources(new_context)
    missing = []
    for counter in _TASK_COUNTERS:
        base_has = counter in base and not base[counter].startswith("unavailable")
        new_has = counter in new and not new[counter].startswith("unavailable")
        if base_has and counter in new and not new_has:
            missing.append((counter, "new", new[counter]))
        elif new_has and counter in base and not base_has:
            missing.append((counter, "base", base[counter]))
    return missing


def uncountable_lines(base_context, new_context):
    """One line per counter uncountable() names, for compare's and the gate's output."""
    return ["not compared: %s, which the %s run could not count (%s)" % (counter, side, reason)
            for counter, side, reason in uncountable(base_context, new_context)]


# Context keys whose value is a list the kernel decided (benchmarks/trace_overhead): what
# it lists, and which rows its content moves (a test on a parsed name). Comma-separated;
# "none" is an empty list; "unavailable: why" is no list.
KERNEL_LISTS = {
    "lock_tracepoints": (
        "lock tracepoints", "the set:lock rows record every one",
        lambda parsed: parsed.params.get("set") == "lock" and "recorder" not in parsed.params),
    "syscall_user_fields": (
        "user memory the syscall trace events copy",
        "the tracepoints:syscalls rows' records carry it",
        lambda parsed: (parsed.family == "BM_TracedSyscall"
                        and parsed.params.get("tracepoints") == "syscalls")),
}
_UNAVAILABLE = "unavailable"


def kernel_list(context, key):
    """The list at context[key] as a set; None when the run has none (absent, not a string,
    or "unavailable: why")."""
    text = context.get(key)
    if not isinstance(text, str) or text.startswith(_UNAVAILABLE):
        return None
    return {item.strip() for item in text.split(",") if item.strip() and item.strip() != "none"}


def kernel_list_lines(base_context, new_context, benchmark_names=()):
    """One line per KERNEL_LISTS entry that differs between two runs: what the new run's
    kernel has that the base's lacks, and the reverse, with how many of
    `benchmark_names` it concerns; and a line where one run could not list it. A count
    or time that moved in those rows may have moved for that alone."""
    lines = []
    for key, (what, rows, concerns) in KERNEL_LISTS.items():
        base, new = kernel_list(base_context, key), kernel_list(new_context, key)
        if base is None and new is None:
            continue
        if base is None or new is None:
            side, context = ("base", base_context) if base is None else ("new", new_context)
            if key in context:
                lines.append("not compared: %s, which the %s run could not list (%s)"
                             % (what, side, context[key]))
            continue
        if base == new:
            continue
        changes = []
        if new - base:
            changes.append("the new run's kernel has %s, which the base run's lacks"
                           % ", ".join(sorted(new - base)))
        if base - new:
            changes.append("the new run's kernel lacks %s, which the base run's had"
                           % ", ".join(sorted(base - new)))
        affected = [n for n in benchmark_names if concerns(names.parse_name(n))]
        lines.append("kernel changed %s (context %s): %s; %s, so %d of these rows may have "
                     "moved for that alone" % (what, key, "; ".join(changes), rows,
                                               len(affected)))
    return lines


def vanished_counts(base_runs, new_entries):
    """{counter: [benchmark]}: the kernel-cost counts (KERNEL_COST_COUNTERS) that a
    benchmark had in a baseline run ({name: Entry} each) and lacks in the new run, which
    has the benchmark: no test of that count was made, so it is named, not passed over."""
    gone = {}
    for name, entry in new_entries.items():
        had = set()
        for base in base_runs:
            if name in base:
                had.update(c for c, values in attributed_counters(base[name]).items() if values)
        for counter in sorted(had):
            if not entry.counters.get(counter):
                gone.setdefault(counter, []).append(name)
    return gone


def count_notes(base_contexts, new_context, base_runs, new_entries):
    """The lines compare, the nightly and the counts-only judgement print before their
    verdicts: each counter one run's kernel could not give (uncountable_lines, against
    each baseline run), and each count the baseline had that vanished from the new run
    without such a reason (vanished_counts), and each list the kernel decided that
    differs between the last baseline run and the new one (kernel_list_lines)."""
    lines, said = [], set()
    for context in base_contexts:
        for line in uncountable_lines(context, new_context):
            if line not in lines:
                lines.append(line)
        said.update(c for c, side, _ in uncountable(context, new_context) if side == "new")
    for counter, benchmarks in vanished_counts(base_runs, new_entries).items():
        if counter.split("/", 1)[0] in said:
            continue
        lines.append("not compared: %s, which the new run lacks in %d benchmark(s) the "
                     "baseline counted it in: %s" % (counter, len(benchmarks), ", ".join(
                         benchmarks[:5]) + (", ..." if len(benchmarks) > 5 else "")))
    if base_contexts:
        lines += kernel_list_lines(base_contexts[-1], new_context, list(new_entries))
    return lines


# How a run took its attributed counts: the context's "attribution" (bench_support.h,
# docs/counters-pass.md). "counting_pass" and "off" time with no perf event of ours
# attached; "timed" times the counters too, as every run did before the counting pass.
ATTRIBUTION_MODES = ("counting_pass", "timed", "off")
_TASK_COUNTERS = ("ipis_sent", "ipi_mask_calls", "xcalls", "lock_contended", "lock_wait_us",
                  "ctx_switches", "cpu_migrations", "page_faults")


def attribution(context):
    """The run's attribution mode. A run from before the counting pass has no
    "attribution": it counted during its timed iterations ("timed") where its
    counter_sources name an available attributed counter, else "off" (counters off, or a
    run older than the counters)."""
    mode = context.get("attribution")
    if mode in ATTRIBUTION_MODES:
        return mode
    sources = counter_sources(context)
    counted = any(not sources.get(name, "unavailable").startswith("unavailable")
                  for name in _TASK_COUNTERS)
    return "timed" if counted else "off"


def timed_with_counters(context):
    """True when the run's timings include our counters' hooks (mode "timed")."""
    return attribution(context) == "timed"


def attribution_mismatch(base_context, new_context):
    """None when two runs' timings were taken alike (both with or both without the
    counters attached); else one line saying why they cannot be held against each other."""
    base_timed, new_timed = timed_with_counters(base_context), timed_with_counters(new_context)
    if base_timed == new_timed:
        return None
    def how(context):
        mode = attribution(context)
        if mode == "timed" and "attribution" not in context:
            return "timed with the attribution counters attached (recorded before the counting pass)"
        if mode == "timed":
            return "timed with the attribution counters attached (--attribution=timed)"
        return "timed with no perf event of ours attached (attribution: %s)" % mode
    return ("the baseline was %s, this run %s: their timings differ by what counting costs "
            "(up to a third), so they are never judged against each other"
            % (how(base_context), how(new_context)))


# How close to the end a JSON syntax error must be to call the file truncated rather
# than corrupt: a killed writer leaves at most a partial line behind.
_TRUNCATION_SLACK = 2


class ResultsError(Exception):
    """An input that cannot be used; the message says which file and why."""


@dataclasses.dataclass
class Entry:
    """One benchmark instance (one name) of a results file, all repetitions together."""
    name: str
    parsed: names.BenchmarkName
    time_unit: str = "ns"
    real_ns: list = dataclasses.field(default_factory=list)  # one per repetition
    cpu_ns: list = dataclasses.field(default_factory=list)
    counters: dict = dataclasses.field(default_factory=dict)  # name -> finite values
    # Why repetitions have no timing, one line each: a skip reads "SKIPPED: <reason>",
    # whichever Google Benchmark wrote it (skip_message from 1.8, SKIPPED-prefixed
    # error_message before), an error its own message.
    errors: list = dataclasses.field(default_factory=list)
    aggregates_only: bool = False  # the file had no per-repetition entries for it
    order: tuple = ()  # Google Benchmark's registration order, as compare.py sorts

    @property
    def family(self):
        return self.parsed.family

    @property
    def skipped(self):
        """True when the only untimed repetitions were skips (what the machine forbids)."""
        return bool(self.errors) and all(e.startswith(SKIP_PREFIX) for e in self.errors)

    @property
    def params(self):
        return self.parsed.params


@dataclasses.dataclass
class ResultSet:
    source: str
    context: dict
    entries: dict  # name -> Entry, in file order

    @property
    def host(self):
        return str(self.context.get("host_name") or "unknown")

    @property
    def cpus(self):
        """Online CPUs when our binaries said so, else Google Benchmark's count (which
        counts configured CPUs, offline ones too)."""
        count = names.as_number(self.context.get("num_online_cpus"))
        if count is None:
            count = cpu_list_size(self.context.get("online_cpus"))
        if count is None:
            count = names.as_number(self.context.get("num_cpus"))
        return int(count) if count is not None else 0


def cpu_list_size(text):
    """CPUs in a kernel CPU list such as '0-3,8'; a bare number is taken as a count."""
    if not isinstance(text, str) or not text.strip():
        return None
    if "-" not in text and "," not in text:
        return names.as_number(text)
    total = 0
    for part in text.strip().split(","):
        low, _, high = part.partition("-")
        try:
            total += int(high or low) - int(low) + 1
        except ValueError:
            return None
    return total


def load_results(path):
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as err:
        raise ResultsError("%s: cannot read: %s" % (path, err.strerror or err)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ResultsError("%s: not a text file, so not Google Benchmark JSON" % path) from None
    return parse_results(text, path)


def parse_results(text, source="<results>"):
    """Parses Google Benchmark JSON `text`; `source` names it in error messages."""
    document = _decode(text, source)
    if (not isinstance(document, dict) or not isinstance(document.get("benchmarks"), list)
            or not isinstance(document.get("context"), dict)):
        raise ResultsError(
            "%s: not Google Benchmark JSON (expected an object with 'context' and "
            "'benchmarks'; write it with --benchmark_out=FILE or --benchmark_format=json)"
            % source)
    if not document["benchmarks"]:
        raise ResultsError("%s: holds no benchmark results (did --benchmark_filter match "
                           "nothing?)" % source)
    _refuse_lone_surrogates(document, source)
    entries, aggregates, repetitions_seen = {}, {}, set()
    for index, item in enumerate(document["benchmarks"]):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise ResultsError("%s: benchmark entry %d has no name: not Google Benchmark "
                               "JSON" % (source, index))
        _refuse_a_second_copy(item, index, repetitions_seen, source)
        _add_item(item, entries, aggregates)
    # A file written with --benchmark_report_aggregates_only still plots: its median
    # stands for the instance, one value, so no U test can be done on it.
    for name, medians in aggregates.items():
        entry = entries.get(name)
        if entry is None or (not entry.real_ns and not entry.errors):
            entry = entry or _new_entry(name, medians[0], len(entries))
            entry.aggregates_only = True
            _add_sample(entry, medians[0])
            entries[name] = entry
    if not entries:
        raise ResultsError("%s: holds no usable benchmark results" % source)
    # Interleaved repetitions come in random order; show benchmarks as registered.
    ordered = sorted(entries.values(), key=lambda e: e.order)
    results = ResultSet(source, document["context"], {e.name: e for e in ordered})
    if not 0 <= results.cpus <= MAX_CPUS:
        raise ResultsError("%s: the context's CPU count is %s, not a number of CPUs (0..%d)"
                           % (source, results.cpus, MAX_CPUS))
    return results


# Linux's NR_CPUS is at most 8192; anything far beyond is a corrupt or hostile context
# (and past 2^63 overflows a history's integer column).
MAX_CPUS = 1 << 16


def _refuse_a_second_copy(item, index, seen, source):
    """A file holds each repetition of a benchmark once: one that lists a benchmark again
    (two results files pasted together) would be judged as one merged sample, and the gate
    must fail closed rather than average two runs into one."""
    if item.get("run_type") == "aggregate":
        return
    repetition = item.get("repetition_index")
    if isinstance(repetition, bool) or not isinstance(repetition, int):
        return
    instance = item.get("run_name") if isinstance(item.get("run_name"), str) else item["name"]
    key = (instance, repetition, item.get("threads"))
    if key in seen:
        raise ResultsError("%s: lists %s twice (repetition %d again at entry %d): a results "
                           "file holds one run of each benchmark; compare the two runs as "
                           "two files" % (source, instance, repetition, index))
    seen.add(key)


def _refuse_lone_surrogates(document, source):
    """JSON's \\uD800 escapes decode to a str no UTF-8 output (a terminal, a history)
    can hold; say so here rather than fail wherever the string is first written."""
    try:
        json.dumps(document, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise ResultsError("%s: holds a lone surrogate escape (such as \\ud800) in a "
                           "string: not valid Unicode" % source) from None


def _decode(text, source):
    if not text.strip():
        raise ResultsError("%s: empty file (the run was probably interrupted)" % source)
    try:
        return json.loads(text)
    except RecursionError:
        raise ResultsError("%s: JSON nested too deep to be Google Benchmark results"
                           % source) from None
    except json.JSONDecodeError as err:
        # The json module calls a string unterminated only when the text ends inside it.
        if (err.pos >= len(text.rstrip()) - _TRUNCATION_SLACK
                or err.msg.startswith("Unterminated string")):
            raise ResultsError(
                "%s: truncated JSON (ends at line %d before the document is complete; "
                "the run was probably killed while writing)" % (source, err.lineno)) from None
        raise ResultsError("%s: not valid JSON: %s at line %d column %d"
                           % (source, err.msg, err.lineno, err.colno)) from None


def _new_entry(name, item, seen):
    unit = item.get("time_unit")
    order = tuple(item.get(k) if isinstance(item.get(k), int) else math.inf
                  for k in ("family_index", "per_family_instance_index")) + (seen,)
    return Entry(name, names.parse_name(name),
                 unit if unit in TIME_UNIT_NS else "ns", order=order)


def _add_item(item, entries, aggregates):
    instance = item.get("run_name") if isinstance(item.get("run_name"), str) else item["name"]
    if item.get("run_type") == "aggregate":
        if item.get("aggregate_name") == "median" and _time_ns(item, "real_time") is not None:
            aggregates.setdefault(instance, []).append(item)
        return
    entry = entries.get(instance)
    if entry is None:
        entry = entries[instance] = _new_entry(instance, item, len(entries))
    message = untimed_reason(item)
    if message is not None:
        if message not in entry.errors:
            entry.errors.append(message)
        return
    _add_sample(entry, item)


SKIP_PREFIX = "SKIPPED: "


def untimed_reason(item):
    """Why a benchmark row has no timing, or None when it was timed. Google Benchmark 1.8+
    writes a skip as "skipped": true with "skip_message" (SkipWithMessage), and an error as
    "error_occurred" with "error_message"; before 1.8 both were errors, and perfscale's
    skips said "SKIPPED: <reason>". Both read the same: a skip is "SKIPPED: <reason>"."""
    if item.get("skipped") is True:
        return SKIP_PREFIX + str(item.get("skip_message") or "no reason given")
    if item.get("error_occurred") is True:
        return str(item.get("error_message") or "error")
    return None


def _add_sample(entry, item):
    real, cpu = _time_ns(item, "real_time"), _time_ns(item, "cpu_time")
    if real is None:
        return  # a NaN time says nothing about speed: leave it out of the samples
    entry.real_ns.append(real)
    entry.cpu_ns.append(cpu if cpu is not None else math.nan)
    for key, value in item.items():
        if key in _OWN_KEYS or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if math.isfinite(value):
            entry.counters.setdefault(key, []).append(float(value))


def _time_ns(item, key):
    value, unit = item.get(key), item.get("time_unit", "ns")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or unit not in TIME_UNIT_NS:
        return None
    # A negative time is a broken clock or a hand-edited file, as unusable as NaN: kept, it
    # reads as a benchmark faster than instant.
    return float(value) * TIME_UNIT_NS[unit] if math.isfinite(value) and value >= 0 else None


def readable_unit(values_ns):
    """The time unit that puts the typical value between 1 and 1000."""
    typical = statistics.median(values_ns) if values_ns else 1.0
    for unit in ("s", "ms", "us"):
        if typical >= TIME_UNIT_NS[unit]:
            return unit
    return "ns"


def finite_or_none(value):
    """`value` with every non-finite float replaced by None, so it serializes strictly."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite_or_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_none(v) for v in value]
    return value


def dumps(value, **kwargs):
    """Strict JSON text: allow_nan=False makes a slipped-through NaN an error, not output."""
    return json.dumps(finite_or_none(value), allow_nan=False, **kwargs)
