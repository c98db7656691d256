"""`tools/perfscale plot --vs-kernel`: a kernel A/B, one line per kernel; without --x,
every benchmark against the kernel release, one line per guest shape, steps marked.

The files are runs of the same benchmarks on several kernels (guests of `vm --kernel`,
one file per kernel, size and option set, in any order). Each benchmark is drawn against
the product of the `--x` parameters (threads x parallelism: the live threads of
BM_BreakpointThread), one line per kernel (the context's kernel release) and per value
of the parameters left over (breakpoints:0 and :4), one figure per family and vCPU count.
`--ratio PARAM` adds, per kernel, the largest value of PARAM against the smallest at the
same point (breakpoints:4 / breakpoints:0): the seed's "165x slower" as a column.

Figures are medians over the repetitions. Under TCG the times are emulated: a ratio
within one run (both rows interleaved in one guest) is what carries, not a time alone.

Against the release (a series of kernels, `tools/perfscale series`' runs or any files
from guests of several kernels): the runs are grouped by guest shape (vCPUs, memory,
clock), ordered by release within a shape (runs of one release in the order given: an
A/A), and each release is judged against the one before it by the gate
(perfscale.gate.steps); a table of benchmark x release and one figure per family (one
panel per benchmark, a line per shape) mark the steps.
"""

import os
import re
import statistics

from perfscale.gate import comparability, stats, steps
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


def release_key(release):
    """Orders kernel releases as versions: 5.10.0-46-cloud-amd64 < 6.1.0-57-... <
    6.12.118+deb12-... < 7.3.4+deb13-...: each part as a number, compared by its digits (a
    release of 5,000 digits is no int Python will parse; a part such as '١' or '²' is a
    digit to str.isdigit but not ASCII), other parts before them."""
    numbers = []
    for part in re.split(r"[-.+~]", release):
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
        kernels = sorted({k for k, _ in series}, key=release_key)
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
        kernels = sorted({k for k, _ in series}, key=release_key)
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


# --- Against the release -------------------------------------------------------------

MARKS = {stats.SLOWER: "slower", stats.FASTER: "faster",
         stats.COUNTS: "counts up", steps.COUNTS_DOWN: "counts down"}
_MARKERS = {stats.SLOWER: ("^", "#d62728"),
            stats.FASTER: ("v", "#2ca02c"),
            stats.COUNTS: ("D", "#ff7f0e"),
            steps.COUNTS_DOWN: ("d", "#9467bd")}
PANELS = 24  # benchmarks in one figure; a larger family gets more figures


def shape_of(results):
    """The guest shape a run ran in, as one label: the series' line, the run's lineage."""
    context = results.context
    clock = comparability.clock(context)
    if "vm_kernel" not in context:
        return "%s, %d CPUs" % (results.host, results.cpus)
    if clock == "instructions":
        where = "instruction clock"
    else:
        where = "%s time" % str(context.get("vm_accelerator", "?")).upper()
    return "%s vCPUs, %s MiB, %s" % (context.get("vm_vcpus", "?"),
                                     context.get("vm_memory_mib", "?"), where)


def by_shape(result_sets):
    """{shape: [ResultSet]}: each shape's runs ordered by kernel release, runs of one
    release in the order given."""
    shapes = {}
    for results in result_sets:
        shapes.setdefault(shape_of(results), []).append(results)
    return {shape: sorted(runs, key=lambda r: release_key(kernel_of(r)))
            for shape, runs in shapes.items()}


def column_labels(runs):
    """A column label per run: its release, numbered where a release comes again."""
    labels, seen = [], {}
    for results in runs:
        release = kernel_of(results)
        seen[release] = seen.get(release, 0) + 1
        labels.append(release if seen[release] == 1 else "%s (%d)" % (release, seen[release]))
    return labels


def judge_releases(runs, options_for=steps.options_for):
    """{column index: ({name: Verdict}, how)} of each run against the one before it;
    `options_for(clock)` gives the gate's options. A pair the gate refuses (another
    clock) is left out with its reason as `how`."""
    judged = {}
    for index in range(1, len(runs)):
        base, new = runs[index - 1], runs[index]
        try:
            verdicts, how = steps.judge_step(
                base, new, options_for(comparability.clock(new.context)))
        except steps.StepError as err:
            judged[index] = ({}, "not judged: %s" % err)
            continue
        judged[index] = ({v.name: v for v in verdicts}, how)
    return judged


def _median_us(entry):
    times = [v for v in entry.real_ns if v == v] if entry else []
    return statistics.median(times) / 1000.0 if times else None


def release_rows(runs, judged, labels=None):
    """(header, rows): a row per benchmark, a column per run (its median real time in
    us), a step's change and verdict beside the figure of the release it arrived in."""
    labels = labels or column_labels(runs)
    rows = []
    for name in dict.fromkeys(n for r in runs for n in r.entries):
        cells = [names.display_name(name)]
        for index, results in enumerate(runs):
            median = _median_us(results.entries.get(name))
            cell = "%.4g" % median if median is not None else "-"
            verdict = judged.get(index, ({}, ""))[0].get(name)
            if verdict is not None and verdict.verdict in MARKS:
                change = ("%+.1f%% " % (100 * verdict.change)
                          if verdict.change == verdict.change else "")
                cell += " (%s%s)" % (change, MARKS[verdict.verdict])
            cells.append(cell)
        rows.append(cells)
    return ["benchmark (median real time, us)"] + list(labels), rows


def release_table(runs, judged, labels=None):
    """release_rows as Markdown lines."""
    header, rows = release_rows(runs, judged, labels)
    cell = lambda text: str(text).replace("|", "\\|")
    return (["| " + " | ".join(map(cell, header)) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(map(cell, row)) + " |" for row in rows])


def release_plots(shapes, judged_by_shape, outdir):
    """One PNG per family (and PANELS benchmarks): a panel per benchmark, its median
    real time (us) against the release, a line per shape, each step's point marked
    (slower, faster, counts up or down). Returns [(path, caption)]."""
    plt = plot.pyplot()
    os.makedirs(outdir, exist_ok=True)
    releases = sorted({kernel_of(r) for runs in shapes.values() for r in runs}, key=release_key)
    by_family = {}
    for runs in shapes.values():
        for results in runs:
            for name, entry in results.entries.items():
                if entry.real_ns:
                    by_family.setdefault(entry.family, dict())[name] = None
    written = []
    for family, benchmark_names in sorted(by_family.items()):
        ordered = list(benchmark_names)
        for part in range(0, len(ordered), PANELS):
            chunk = ordered[part:part + PANELS]
            columns = min(4, len(chunk))
            rows = (len(chunk) + columns - 1) // columns
            fig, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.2 * rows),
                                     squeeze=False)
            for ax, name in zip(axes.flat, chunk):
                _release_panel(ax, name, shapes, judged_by_shape, releases)
            for ax in list(axes.flat)[len(chunk):]:
                ax.set_visible(False)
            suffix = "" if len(ordered) <= PANELS else "-%d" % (part // PANELS + 1)
            path = os.path.join(outdir, "%s-releases%s.png" % (plot.slug(family), suffix))
            written.append((plot.save(plt, fig, path), "%s against the kernel release"
                            % family))
    return written


def _release_panel(ax, name, shapes, judged_by_shape, releases):
    for colour, (shape, runs) in enumerate(sorted(shapes.items())):
        judged = judged_by_shape.get(shape, {})
        xs, ys = [], []
        for index, results in enumerate(runs):
            median = _median_us(results.entries.get(name))
            if median is None:
                continue
            x = releases.index(kernel_of(results))
            xs.append(x)
            ys.append(median)
            verdict = judged.get(index, ({}, ""))[0].get(name)
            if verdict is not None and verdict.verdict in _MARKERS:
                marker, marker_colour = _MARKERS[verdict.verdict]
                ax.plot([x], [median], marker=marker, color=marker_colour, markersize=11,
                        linestyle="none", zorder=3)
        ax.plot(xs, ys, marker="o", markersize=3, color="C%d" % (colour % 10), label=shape)
    ax.set_title(names.display_name(name)[:60], fontsize=7)
    ax.set_xticks(range(len(releases)))
    ax.set_xticklabels([r.split("-")[0] for r in releases], rotation=45, fontsize=7)
    ax.set_ylabel("real time (us)", fontsize=7)
    ax.tick_params(axis="y", labelsize=7)
    ax.grid(True, alpha=0.3)
    if len(shapes) > 1:
        ax.legend(fontsize=6)


def vs_release(result_sets, outdir):
    """`plot --vs-kernel` without --x: writes the plots and DIR/releases.md (the table of
    each shape); returns (written paths, the table's lines)."""
    if not result_sets:
        raise KernelPlotError("no results files")
    shapes = by_shape(result_sets)
    judged_by_shape = {shape: judge_releases(runs) for shape, runs in shapes.items()}
    lines = []
    for shape, runs in sorted(shapes.items()):
        lines += ["%s:" % shape, ""]
        lines += release_table(runs, judged_by_shape[shape])
        notes = ["%s -> %s: %s" % (column_labels(runs)[i - 1], column_labels(runs)[i], how)
                 for i, (_v, how) in sorted(judged_by_shape[shape].items())]
        lines += [""] + ["- " + note for note in notes] + [""]
    written = release_plots(shapes, judged_by_shape, outdir)
    path = os.path.join(outdir, "releases.md")
    with open(path, "w") as out:
        out.write("\n".join(lines) + "\n")
    return written + [(path, "table")], lines
