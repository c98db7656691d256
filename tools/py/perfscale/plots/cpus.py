"""`tools/perfscale plot --vs-cpus RESULTS.json...`: counted kernel events against CPUs.

Each file is one run at one size (`vm --cpus 2,4,8,16` writes one per size). A curve is
one benchmark (one counter) across the files, x the run's vCPUs (or online CPUs). Only
counts are drawn (comparability.is_count): under TCG or oversubscribed vCPUs the times
mean nothing, while the counts still say what the kernel did.

Parameters that the suite sizes from the CPU count (passive threads default to CPUs and
4x CPUs) name a different benchmark at each size; `--relative passive` writes them as a
multiple of the CPUs (passive:4xCPUs) so that they join one curve.
"""

import os
import statistics

from perfscale.plots import plot
from perfscale.results import names
from perfscale.gate import comparability


def run_cpus(results):
    return int(names.as_number(results.context.get("vm_vcpus")) or results.cpus)


def series_name(entry, cpus, relative):
    """The benchmark's name with each `relative` parameter as a multiple of `cpus`."""
    parts = [entry.family]
    for key, value in entry.params.items():
        number = names.as_number(value)
        if key in relative and number:
            ratio = number / cpus
            value = "%gxCPUs" % ratio
        parts.append("%s:%s" % (key, value))
    return "/".join(parts)


def collect(result_sets, relative):
    """{(family, counter): {series: [(cpus, values)]}} over every count counter."""
    curves = {}
    for results in result_sets:
        cpus = run_cpus(results)
        for entry in results.entries.values():
            name = series_name(entry, cpus, relative)
            for counter, values in entry.counters.items():
                if comparability.is_count(counter) and values:
                    curves.setdefault((entry.family, counter), {}).setdefault(
                        name, []).append((cpus, values))
    return curves


def plots(result_sets, outdir, relative=()):
    """Writes one PNG per (family, counter) with a curve over two sizes or more."""
    plt = plot.pyplot()
    os.makedirs(outdir, exist_ok=True)
    written = []
    for (family, counter), series in sorted(collect(result_sets, set(relative)).items()):
        series = {k: sorted(v) for k, v in series.items() if len({c for c, _ in v}) > 1}
        if not series:
            continue
        fig, ax = plt.subplots(figsize=(8, 5))
        for name, points in sorted(series.items()):
            xs = [c for c, _ in points]
            medians = [statistics.median(v) for _, v in points]
            low = [m - min(v) for m, (_, v) in zip(medians, points)]
            high = [max(v) - m for m, (_, v) in zip(medians, points)]
            ax.errorbar(xs, medians, yerr=[low, high], marker="o", capsize=3,
                        label=name[len(family) + 1:] or family)
            for x, y in zip(xs, medians):
                ax.annotate("%.3g" % y, (x, y), textcoords="offset points", xytext=(4, 4),
                            fontsize=7)
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted({c for v in series.values() for c, _ in v}))
        ax.get_xaxis().set_major_formatter(plt.matplotlib.ticker.ScalarFormatter())
        ax.set_xlabel("vCPUs")
        ax.set_ylabel(counter)
        ax.set_title("%s: %s against vCPUs" % (family, counter))
        plot.legend(ax, len(series))
        path = os.path.join(outdir, "%s-%s-vs-cpus.png" % (plot.slug(family), plot.slug(counter)))
        written.append((plot.save(plt, fig, path),
                        "%s: %s against vCPUs (median, bars: min..max)" % (family, counter)))
    return written
