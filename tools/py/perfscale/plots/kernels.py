"""`tools/perfscale plot --vs-kernel`: a kernel A/B, one line per kernel.

The files are runs of the same benchmarks on several kernels (guests of `vm --kernel`,
one file per kernel, size and option set, in any order). Each benchmark is drawn against
the product of the `--x` parameters (threads x parallelism: the live threads of
BM_BreakpointThread), one line per kernel (the context's kernel release) and per value
of the parameters left over (breakpoints:0 and :4), one figure per family and vCPU count.
`--ratio PARAM` adds, per kernel, the largest value of PARAM against the smallest at the
same point (breakpoints:4 / breakpoints:0): the seed's "165x slower" as a column.

Figures are medians over the repetitions. Under TCG the times are emulated: a ratio
within one run (both rows interleaved in one guest) is what carries, not a time alone.
"""

import os
import statistics

from perfscale.plots import plot
from perfscale.plots.cpus import run_cpus
from perfscale.results import names


class KernelPlotError(Exception):
    """What made the A/B impossible to draw, in words the user can act on."""


def kernel_of(results):
    """The kernel a run ran on: the guest's release for `vm` runs, else the host's."""
    return str(results.context.get("kernel_release") or "unknown kernel")


def _x_value(entry, x_params):
    """The product of the entry's `x_params`, or None when one is absent or not a number."""
    value = 1.0
    for key in x_params:
        number = names.as_number(entry.params.get(key))
        if number is None:
            return None
        value *= number
    return value


def collect(result_sets, x_params, metric):
    """{(family, cpus): {(kernel, rest): {x: [values]}}}: `rest` is the tuple of the
    parameters neither on the x axis nor the same on every instance of the family."""
    points = {}
    for results in result_sets:
        kernel, cpus = kernel_of(results), run_cpus(results)
        for entry in results.entries.values():
            x = _x_value(entry, x_params)
            values = entry.counters.get(metric) if metric else None
            if values is None and not metric:
                values = [v / 1000.0 for v in entry.real_ns]  # us
            if x is None or not values:
                continue
            rest = tuple((k, v) for k, v in entry.params.items() if k not in x_params)
            points.setdefault((entry.family, cpus), {}).setdefault(
                (kernel, rest), {}).setdefault(x, []).extend(values)
    return points


def _kernel_sort_key(kernel):
    """5.10 before 6.1 before 6.12: each dotted part as a number, compared by its digits
    (a release of 5,000 digits is no int Python will parse; a part such as '١' or '²' is
    a digit to str.isdigit but not ASCII), other parts first."""
    numbers = []
    for part in kernel.replace("-", ".").split("."):
        digits = part.lstrip("0") or "0"
        numbers.append((len(digits), digits) if part.isascii() and part.isdigit()
                       else (-1, ""))
    return numbers


def table(points, x_params, ratio=None):
    """Markdown lines: per (family, cpus), one row per x and leftover parameters, a
    column per kernel (the median), and with `ratio` one more per kernel."""
    lines = []
    x_label = " x ".join(x_params)
    for (family, cpus), series in sorted(points.items()):
        kernels = sorted({k for k, _ in series}, key=_kernel_sort_key)
        rests = sorted({r for _, r in series})
        rows = {}
        for (kernel, rest), by_x in series.items():
            for x, values in by_x.items():
                rows.setdefault((x, rest), {})[kernel] = statistics.median(values)
        header = [x_label, "parameters"] + kernels
        if ratio:
            header += ["%s %s" % (kernel, ratio_label(rests, ratio)) for kernel in kernels]
        lines.append("%s, %d vCPUs:" % (family, cpus))
        lines.append("")
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        for (x, rest), medians in sorted(rows.items(), key=lambda item: (item[0][1], item[0][0])):
            cells = ["%g" % x, names.describe(rest)]
            cells += ["%.4g" % medians[k] if k in medians else "-" for k in kernels]
            if ratio:
                cells += [_ratio_cell(rows, x, rest, kernel, ratio) for kernel in kernels]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def ratio_label(rests, ratio):
    values = sorted({dict(r).get(ratio) for r in rests if ratio in dict(r)},
                    key=lambda v: names.as_number(v) if names.as_number(v) is not None else 0)
    return "%s:%s / %s:%s" % (ratio, values[-1], ratio, values[0]) if len(values) > 1 \
        else "%s ratio" % ratio


def _ratio_cell(rows, x, rest, kernel, ratio):
    """At this point: the median at the largest value of `ratio` over that at the
    smallest, the other parameters alike; shown on the row of the largest value."""
    params = dict(rest)
    if ratio not in params:
        return "-"
    same = {r: m for (rx, r), m in rows.items() if rx == x and kernel in m
            and {k: v for k, v in r if k != ratio} == {k: v for k, v in rest if k != ratio}
            and ratio in dict(r)}
    if len(same) < 2:
        return "-"
    ordered = sorted(same, key=lambda r: names.as_number(dict(r)[ratio]) or 0)
    if rest != ordered[-1]:
        return ""
    low, high = same[ordered[0]][kernel], same[ordered[-1]][kernel]
    return "%.2fx" % (high / low) if low > 0 else "-"


def _short(label, most=100):
    """`label` cut to `most` characters: matplotlib's rasterizer fails on a line of some
    thousands (a kernel release as long, in a file's context)."""
    return label if len(label) <= most else label[:most - 1] + "\u2026"


def draw(points, x_params, metric, outdir):
    """One PNG per (family, vCPUs): a line per kernel and leftover parameters."""
    plt = plot.pyplot()
    os.makedirs(outdir, exist_ok=True)
    written = []
    styles = ["-", "--", ":", "-."]
    for (family, cpus), series in sorted(points.items()):
        if len({k for k, _ in series}) < 1 or all(len(v) < 2 for v in series.values()):
            continue
        kernels = sorted({k for k, _ in series}, key=_kernel_sort_key)
        rests = sorted({r for _, r in series})
        fig, ax = plt.subplots(figsize=(8, 5))
        for (kernel, rest), by_x in sorted(series.items()):
            xs = sorted(by_x)
            ax.plot(xs, [statistics.median(by_x[x]) for x in xs], marker="o",
                    color="C%d" % (kernels.index(kernel) % 10),
                    linestyle=styles[rests.index(rest) % len(styles)],
                    label=_short("%s %s" % (kernel, names.describe(rest))))
        ax.set_xlabel(_short(" x ".join(x_params)))
        ax.set_ylabel(_short(metric or "real time (us)"))
        ax.set_title(_short("%s, %d vCPUs" % (family, cpus)))
        plot.scale_axes(ax, {key: [(x, v) for x, v in by_x.items()]
                              for key, by_x in series.items()})
        plot.legend(ax, len(series))
        path = os.path.join(outdir, "%s-cpus%d.png" % (plot.slug(family), cpus))
        written.append((plot.save(plt, fig, path), family))
    return written


def left_out(result_sets, points, x_params, metric):
    """One line per run that gave the A/B no point (no benchmark with every --x parameter
    and the metric): its kernel's line would be missing without a word."""
    drawn = {kernel for series in points.values() for kernel, _ in series}
    lines = []
    for results in result_sets:
        kernel = kernel_of(results)
        if kernel not in drawn:
            lines.append("left out: %s (kernel %s): no benchmark with %s%s" % (
                results.source, kernel, " and ".join(x_params) or "--x",
                " and %s" % metric if metric else " and a real time"))
    return lines


def ab(result_sets, x_params, metric, outdir, ratio=None):
    """Writes the plots and DIR/ab.md; returns (written paths, the table's lines): the
    table after a line for each run left out."""
    points = collect(result_sets, x_params, metric)
    if not points:
        raise KernelPlotError(
            "no benchmark has every --x parameter (%s) as a number%s"
            % (", ".join(x_params), " and the metric %s" % metric if metric else ""))
    notes = left_out(result_sets, points, x_params, metric)
    lines = (notes + [""] if notes else []) + table(points, x_params, ratio)
    written = draw(points, x_params, metric, outdir)
    path = os.path.join(outdir, "ab.md")
    with open(path, "w") as out:
        out.write("\n".join(lines) + "\n")
    return written + [(path, "table")], lines
