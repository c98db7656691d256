"""`tools/perfscale plot`: pictures of results people would rather look at than read.

    tools/perfscale plot RESULTS.json... -o DIR     scaling curves, one PNG per family and
                                                    numeric parameter (threads, breakpoints...)
    tools/perfscale plot --vs-cpus RESULTS.json... -o DIR  [--relative passive]
                                                    counts against vCPUs, one file per size
                                                    (see plots.cpus)
    tools/perfscale plot --history DB -o DIR        each benchmark's trend over nightly runs,
                                                    regressions marked

A point is the median over repetitions, its bar the fastest..slowest repetition, so noise
is visible next to the trend. The y axis is usecs/op when the family reports it (the
figure perf bench prints), else real time.
"""

import os
import re
import statistics

from perfscale.results import io
from perfscale.results.names import as_number, describe

_US_PER_OP = "usecs/op"
# Beyond this max/min ratio a linear axis flattens everything but the top curve.
_LOG_RATIO = 20.0
_MAX_LEGEND_ROWS = 12


def pyplot():
    import matplotlib
    matplotlib.use("Agg")  # files only: no display on CI or over ssh
    # Benchmark names and labels are data: a '$' in one must draw as '$', not start
    # mathtext (which dies on an unknown command such as \undefinedcmd).
    matplotlib.rcParams["text.parse_math"] = False
    import matplotlib.pyplot as plt
    return plt


def family_metric(entries):
    """(axis label, entry -> values) for a family: usecs/op if every instance has it."""
    if entries and all(e.counters.get(_US_PER_OP) for e in entries):
        return _US_PER_OP, lambda e: e.counters[_US_PER_OP]
    unit = io.readable_unit([v for e in entries for v in e.real_ns])
    scale = io.TIME_UNIT_NS[unit]
    return "real time (%s)" % unit, lambda e: [v / scale for v in e.real_ns]


def slug(text):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:120] or "benchmark"


def families(result_sets):
    """{family: [(source label, entry)]} over all files, instances with timings only."""
    out = {}
    several = len(result_sets) > 1
    for results in result_sets:
        label = os.path.basename(results.source) if several else ""
        for entry in results.entries.values():
            if entry.real_ns:
                out.setdefault(entry.family, []).append((label, entry))
    return out


def numeric_axes(entries):
    """Parameters that vary across the family and are numbers on every instance."""
    axes = []
    keys = dict.fromkeys(k for e in entries for k in e.params)  # name order, no repeats
    for key in keys:
        values = [e.params.get(key) for e in entries]
        numbers = [as_number(v) for v in values]
        if None not in numbers and len(set(numbers)) > 1:
            axes.append(key)
    return axes


def scaling_plots(result_sets, outdir):
    """Writes the scaling PNGs; returns [(path, caption)]."""
    plt = pyplot()
    os.makedirs(outdir, exist_ok=True)
    written = []
    for family, labelled in families(result_sets).items():
        entries = [e for _, e in labelled]
        ylabel, metric = family_metric(entries)
        axes = numeric_axes(entries)
        for axis in axes:
            series = {}
            for label, entry in labelled:
                key = (label,) + entry.parsed.without(axis)
                values = metric(entry)
                if values:
                    series.setdefault(key, []).append(
                        (as_number(entry.params[axis]), values))
            # A lone point is not a curve along this axis (e.g. active=2 against passive:
            # it was measured at passive=0 only); its own axis's picture shows it.
            series = {k: v for k, v in series.items() if len(v) > 1}
            if not series:
                continue
            fig, ax = plt.subplots(figsize=(8, 5))
            for key, points in sorted(series.items()):
                points.sort()
                xs = [x for x, _ in points]
                medians = [statistics.median(v) for _, v in points]
                low = [m - min(v) for m, (_, v) in zip(medians, points)]
                high = [max(v) - m for m, (_, v) in zip(medians, points)]
                name = " ".join(filter(None, (key[0], describe(key[1:]))))
                ax.errorbar(xs, medians, yerr=[low, high], marker="o", capsize=3, label=name)
            scale_axes(ax, series)
            ax.set_xlabel(axis)
            ax.set_ylabel(ylabel)
            ax.set_title("%s: %s against %s" % (family, ylabel, axis))
            legend(ax, len(series))
            path = os.path.join(outdir, "%s-%s.png" % (slug(family), slug(axis)))
            written.append((save(plt, fig, path), "%s: %s against %s (median, bars: min..max "
                            "of repetitions)" % (family, ylabel, axis)))
        if not axes:
            written.append(_bar_chart(plt, family, labelled, ylabel, metric, outdir))
    return written


def _bar_chart(plt, family, labelled, ylabel, metric, outdir):
    """A family without a numeric parameter (strategies only) still gets a picture."""
    fig, ax = plt.subplots(figsize=(8, 1.5 + 0.4 * len(labelled)))
    labels, medians, low, high = [], [], [], []
    for label, entry in labelled:
        values = metric(entry)
        if values:
            labels.append(" ".join(filter(None, (label, describe(entry.params)))))
            medians.append(statistics.median(values))
            low.append(medians[-1] - min(values))
            high.append(max(values) - medians[-1])
    ax.barh(range(len(medians)), medians, xerr=[low, high], capsize=3)
    ax.set_yticks(range(len(medians)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xlabel(ylabel)
    ax.set_title(family)
    path = os.path.join(outdir, "%s.png" % slug(family))
    return save(plt, fig, path), "%s: median %s per instance" % (family, ylabel)


def scale_axes(ax, series):
    import matplotlib.ticker
    xs = [x for points in series.values() for x, _ in points]
    ys = [statistics.median(v) for points in series.values() for _, v in points]
    # A log axis labels its ticks in mathtext ($\mathdefault{10^{3}}$), which pyplot()
    # turns off for the sake of names: the numbers are written out instead.
    plain = matplotlib.ticker.FuncFormatter(lambda value, _position: "%g" % value)
    if min(xs) > 0 and max(xs) / min(xs) >= 8:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(plain)
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    if ys and min(ys) > 0 and max(ys) / min(ys) > _LOG_RATIO:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(plain)
    ax.grid(True, which="both", alpha=0.3)


def legend(ax, count):
    if count > 1:
        ax.legend(fontsize=7 if count > _MAX_LEGEND_ROWS else 8,
                  ncol=2 if count > _MAX_LEGEND_ROWS else 1)


def save(plt, fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def history_plots(trend_map, outdir, names=None):
    """One PNG per benchmark: median per run, min..max bar, regressions marked in red."""
    plt = pyplot()
    os.makedirs(outdir, exist_ok=True)
    written = []
    for name, points in trend_map.items():
        if names is not None and name not in names:
            continue
        points = [p for p in points if p["real_ns"]]
        if not points:
            continue
        unit = io.readable_unit([v for p in points for v in p["real_ns"]])
        scale = io.TIME_UNIT_NS[unit]
        fig, ax = plt.subplots(figsize=(8, 4.5))
        lineages = sorted({p["lineage"] for p in points})
        for lineage in lineages:
            # A lineage names host, CPUs and the run arguments, which can be long: the
            # legend keeps its start, the report keeps the whole text.
            short = lineage if len(lineage) <= 48 else lineage[:45] + "..."
            mine = [p for p in points if p["lineage"] == lineage]
            xs = [p["run_id"] for p in mine]
            values = [[v / scale for v in p["real_ns"]] for p in mine]
            medians = [statistics.median(v) for v in values]
            ax.errorbar(xs, medians, yerr=[[m - min(v) for m, v in zip(medians, values)],
                                           [max(v) - m for m, v in zip(medians, values)]],
                        marker="o", capsize=3, label=short)
            for verdict, style, text in (("slower", "rv", "regression"),
                                         ("faster", "g^", "faster")):
                marked = [(x, m) for x, m, p in zip(xs, medians, mine) if p["verdict"] == verdict]
                if marked:
                    ax.plot([x for x, _ in marked], [m for _, m in marked], style,
                            markersize=12, label=text)
        ax.set_xlabel("run")
        ax.set_ylabel("real time (%s)" % unit)
        ax.set_title(name, fontsize=9)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="best")
        path = os.path.join(outdir, "trend-%s.png" % slug(name))
        written.append((save(plt, fig, path), "%s over runs" % name))
    return written
