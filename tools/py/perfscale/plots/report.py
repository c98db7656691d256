"""`tools/perfscale report RESULTS.json -o DIR`: one page with the figures that matter.

Writes DIR/report.md and DIR/report.html with the run's context, where each kernel-cost
counter came from, the headline figures (breakpoint slowdowns, IPIs saved by affinity,
synthesis speed-up, tracing overhead, uprobe hit and attach costs), each beside the kernel-cost counters of the two
runs it compares (ipis_sent/op, xcalls/op, lock_wait_us/op, ...), a table of every
benchmark and the scaling pictures, all relative to DIR so it can be published as is.
"""

import math
import os
import statistics

from perfscale.history import store
from perfscale.machine import identity
from perfscale.plots.page import Page
from perfscale.results import (headlines, io,
                               names, profile)
from perfscale.gate import comparability, stats

# Context keys worth a line on the page, in reading order (Google Benchmark's and ours).
_CONTEXT_KEYS = ("host_name", "date", "num_online_cpus", "online_cpus", "num_cpus",
                 "kernel_release",
                 "perf_event_paranoid", "hypervisor", "clocksource", "breakpoints_fire",
                 "perfscale_revision",
                 "cpu_scaling_enabled", "load_avg", "library_build_type", "executable",
                 "vm_kernel", "vm_vcpus", "vm_memory_mib", "vm_accelerator", "vm_host_cpus",
                 "vm_clock", "vm_guest_host_name", "timings_comparable", "timings_note",
                 "injector", "injector_added_ns")
# What the context's "attribution" means for the figures on the page.
_ATTRIBUTION_TEXT = {
    "counting_pass": "Attribution: counting_pass. The timings come from iterations with no "
                     "perf event of ours attached; the attributed counts from an untimed "
                     "counting pass of the same benchmark (count_ops operations)",
    "timed": "Attribution: timed. The attributed counters were attached during the timed "
             "iterations, so the timings include what counting costs",
    "off": "Attribution: off. No attributed counts; ipis_system and sys_us only",
}
_SHOWN_COUNTERS = 3  # per benchmark in the table; the JSON has them all


def add_results_sections(page, results, outdir, plots=True):
    """Context, headlines, the benchmark table and the pictures of `results`."""
    page.heading("Context")
    page.table(["field", "value"], [[k, _text(results.context[k])] for k in _CONTEXT_KEYS
                          if k in results.context])
    comparable, why = comparability.timings_comparable(results.context)
    if comparability.clock(results.context) == "instructions":
        page.text("**Timed on QEMU's instruction clock**: every figure is a path length in "
                  "guest instructions (1 ns each, idle time skipped), exact whatever the host "
                  "did, and comparable with other instruction-clock runs only; cache misses, "
                  "memory and real parallelism cost nothing here.")
    elif not comparable:
        page.text("**Timings not comparable with bare metal** (%s): read the counts (IPIs, "
                  "cross-CPU calls, contentions, context switches per operation), which say "
                  "what the kernel did; the times and speed-ups below are the guest's "
                  "only." % why)
    sources = io.counter_sources(results.context)
    if sources:
        page.heading("Where the kernel-cost counters come from")
        page.text(_ATTRIBUTION_TEXT[io.attribution(results.context)]
                  + " (docs/counters-pass.md)")
        page.table(["counter", "source"], [[k, v] for k, v in sources.items()])
    page.heading("Headline figures")
    for headline in headlines.compute(results):
        page.heading(headline.spec.title, 3)
        if headline.note:
            page.text(headline.note)
            continue
        page.text(headline.spec.explanation)
        page.table(headline.header, headline.rows)
    page.heading("All benchmarks")
    page.table(["benchmark", "repetitions", "median real time", "spread (min..max)",
                "counters (median)"], [_row(e) for e in results.entries.values()])
    profile.add_profile_section(page, results)
    errors = ["%s: %s" % (e.name, "; ".join(e.errors)) for e in results.entries.values()
              if e.errors]
    if errors:
        page.heading("Errors and skips")
        page.bullets(errors)
    if plots:
        from perfscale.plots import plot  # matplotlib is slow to import: only when drawing
        pictures = plot.scaling_plots([results], outdir)
        if pictures:
            page.heading("Scaling")
            for path, caption in pictures:
                page.image(os.path.relpath(path, outdir), caption)


def _row(entry):
    if not entry.real_ns:
        return [names.display_name(entry.name), 0, "-", "-", "error"]
    median = statistics.median(entry.real_ns)
    unit = io.readable_unit(entry.real_ns)
    scale = io.TIME_UNIT_NS[unit]
    spread = "-"
    if median and len(entry.real_ns) > 1:
        spread = "%+.1f%%..%+.1f%%" % (100 * (min(entry.real_ns) / median - 1),
                                       100 * (max(entry.real_ns) / median - 1))
    counters = ", ".join("%s=%.4g" % (k, statistics.median(v))
                         for k, v in list(entry.counters.items())[:_SHOWN_COUNTERS] if v)
    note = " (aggregates only)" if entry.aggregates_only else ""
    return [names.display_name(entry.name), "%d%s" % (len(entry.real_ns), note), "%.4g %s" % (median / scale, unit),
            spread, counters]


def _text(value):
    if isinstance(value, float) and not math.isfinite(value):
        return "n/a"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)


def write_report(results, outdir, plots=True, history_path=None):
    """Writes DIR/report.md and DIR/report.html; returns their paths."""
    # The history first: a mistyped path must not leave an empty report folder behind.
    conn = store.open_history(history_path, read_only=True) if history_path else None
    try:
        os.makedirs(outdir, exist_ok=True)
    except BaseException:
        if conn is not None:
            conn.close()
        raise
    page = Page("perfscale results: %s, %d CPUs" % (results.host, results.cpus))
    page.text("From %s." % results.source)
    add_results_sections(page, results, outdir, plots)
    if conn is not None:
        try:
            add_calibration_section(page, conn, results.host, results.cpus,
                                    identity.digest(results.context))
        finally:
            conn.close()
    return page.write(os.path.join(outdir, "report"))


def add_calibration_section(page, conn, host, cpus, machine=""):
    """What the gate can tell apart on this host: every calibrated config's floors."""
    page.heading("Gate calibration (noise floor, minimum detectable change)")
    configs = store.calibrated_configs(conn, host, cpus, machine)
    if not configs:
        page.text("Not calibrated on %s with %d CPUs: run `tools/perfscale calibrate -- "
                  "RUN_ARGS` (nightly then judges each benchmark against its own noise)."
                  % (host, cpus))
    for config in configs:
        rows = sorted((c for (_n, m), c in store.load_calibration(
            conn, host, cpus, config, machine).items() if m == stats.REAL_TIME),
            key=lambda c: c.mdc)
        page.text("Config '%s', calibrated %s from %d runs with no change. A slowdown "
                  "below its MDC may pass unseen; an A/A change below its floor never "
                  "fails the gate." % (config, rows[0].calibrated_at if rows else "?",
                                       max((c.runs for c in rows), default=0)))
        page.table(["benchmark", "sigma between runs", "noise floor", "MDC",
                    "injected slowdown"],
                   [[names.display_name(c.name), "%.1f%%" % (100 * c.sigma), _pct(c.noise_floor),
                     _pct(c.mdc), _pct(c.injected_change)] for c in rows])


def _pct(value):
    return "%+.1f%%" % (100 * value) if value is not None and math.isfinite(value) else "-"
