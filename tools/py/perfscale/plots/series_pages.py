"""A kernel series' pages (`tools/perfscale series`): one page per flagged step, and the
series' index.

A step's page says what moved (each flagged benchmark: the gate's verdict, the change of
its median with the interval, the attributed counts that moved with it), the profile
difference (the kernel functions whose share of the benchmark's samples moved most,
from `--profile` runs of both kernels), and what the sources say (the changed functions
among those, the files behind them, the hunks). It ends with the step's explanation: a
step is "explained" when a kernel function whose share moved by MIN_SHARE_MOVE or more
changed between the two releases' sources: that function's change is the candidate
cause, named as such. Otherwise the step is "unexplained", with the reason (no profile,
no kernel function moved, no sources, or none of the moved functions changed in the
sources searched), never left out.
"""

import dataclasses
import os
from typing import Dict, Optional

from perfscale.gate import steps
from perfscale.plots.page import Page
from perfscale.plots import plot
from perfscale.results import profile
from perfscale.results.names import display_name

MIN_SHARE_MOVE = 0.01  # of a benchmark's samples: a function moved by a point or more
SOURCE_SYMBOLS = 12    # kernel functions per flagged benchmark looked up in the sources
PROFILE_ROWS = 12      # rows of a benchmark's profile difference on the page
CANDIDATES = 4         # candidate causes named per benchmark
EXPLAINED, PARTLY, UNEXPLAINED = "explained", "partly explained", "unexplained"


@dataclasses.dataclass
class Side:
    """One kernel of a step."""
    label: str                      # the kernel as the series names it (--kernels)
    release: str                    # the guest's kernel_release
    results: str                    # its results file
    profile: Optional[dict] = None  # its --profile document (the flagged benchmarks)
    profile_note: str = ""          # why there is none


@dataclasses.dataclass
class Step:
    """A release against the one before it, as judged, profiled and looked up."""
    number: int
    old: Side
    new: Side
    verdicts: list                  # the gate's, every benchmark (gate.steps.judge_step)
    how: str                        # how they were judged
    changes: Optional[list] = None  # vm.sources.FunctionChange of the moved functions
    files: Dict[str, tuple] = dataclasses.field(default_factory=dict)  # path: (+, -)
    sources: str = ""               # which sources were compared, or why none

    @property
    def flagged(self):
        return steps.flagged(self.verdicts)

    @property
    def stem(self):
        return "step-%d-%s-to-%s" % (self.number, plot.slug(self.old.release),
                                     plot.slug(self.new.release))


def moves(step, name):
    """The profile difference of benchmark `name` (profile.share_moves), [] without
    both profiles."""
    base = profile.benchmark_profile(step.old.profile, name)
    head = profile.benchmark_profile(step.new.profile, name)
    if base is None or head is None:
        return []
    return profile.share_moves(base, head)


def _largest_move(move):
    _symbol, _kernel, (old_self, new_self), (old_children, new_children) = move
    return max(abs(new_self - old_self), abs(new_children - old_children))


def moved_symbols(step, per_benchmark=SOURCE_SYMBOLS):
    """The kernel functions to look up in the sources: of each flagged benchmark, the
    `per_benchmark` kernel symbols whose share moved most (MIN_SHARE_MOVE or more), in
    that order, each once."""
    symbols = {}
    for verdict in step.flagged:
        kernel = [m for m in moves(step, verdict.name)
                  if m[1] and _largest_move(m) >= MIN_SHARE_MOVE]
        for move in kernel[:per_benchmark]:
            symbols[move[0]] = max(symbols.get(move[0], 0.0), _largest_move(move))
    return list(symbols)


def benchmark_explanation(step, name, top=CANDIDATES):
    """(EXPLAINED or UNEXPLAINED, why) of one flagged benchmark: explained when a kernel
    function whose share of its samples moved by MIN_SHARE_MOVE or more changed between
    the releases' sources (those named, largest move first)."""
    if step.old.profile is None or step.new.profile is None:
        missing = [s.label for s in (step.old, step.new) if s.profile is None]
        notes = [s.profile_note for s in (step.old, step.new) if s.profile_note]
        return UNEXPLAINED, "no profile of %s (%s)" % (" or ".join(dict.fromkeys(missing)),
                                                       notes[0] if notes else "not profiled")
    moved = {m[0]: _largest_move(m) for m in moves(step, name)
             if m[1] and _largest_move(m) >= MIN_SHARE_MOVE}
    if not moved:
        return UNEXPLAINED, ("no kernel function's share of its samples moved by %s or more"
                             % _points(MIN_SHARE_MOVE))
    if step.changes is None:
        return UNEXPLAINED, "the sources could not be compared: %s" % (step.sources or
                                                                       "not fetched")
    looked = [c for c in step.changes if c.symbol in moved]
    changed = sorted((c for c in looked if c.changed), key=lambda c: -moved[c.symbol])
    if not changed:
        found = [c for c in looked if c.found]
        absent = [c.symbol for c in looked if not c.found]
        return UNEXPLAINED, (
            "none of the %d kernel functions whose share moved changed in the sources "
            "searched (%d found there unchanged%s)%s" % (
                len(looked), len(found),
                "; not there: " + ", ".join(absent[:4]) + (" ..." if len(absent) > 4 else "")
                if absent else "",
                "; the cause may be in code they call or inline, outside the folders "
                "searched, or in the kernel's configuration"))
    named = ", ".join("%s (%s, %s; its share moved %.1f points)" % (
        c.function.replace("sys:", "SYSCALL_DEFINE "), ", ".join(c.new_files or c.old_files),
        c.status, 100 * moved[c.symbol]) for c in changed[:top])
    return EXPLAINED, "candidate cause: %s%s%s" % (
        named, " and %d more" % (len(changed) - top) if len(changed) > top else "",
        # A stand-in's tree is a neighbour of the kernel's; the reader must know.
        " (sources of a stand-in version compared: see the page)"
        if "standing in for" in (step.sources or "") else "")


def explanation(step):
    """(EXPLAINED, PARTLY or UNEXPLAINED, the sentence that says why) of the step: each
    flagged benchmark's explanation, taken together."""
    if not step.flagged:
        return UNEXPLAINED, "nothing moved"
    each = [(v.name, benchmark_explanation(step, v.name)) for v in step.flagged]
    explained = [name for name, (state, _why) in each if state == EXPLAINED]
    if len(explained) == len(each):
        return EXPLAINED, ("every moved benchmark has a candidate cause (a function whose "
                           "share moved changed between the releases; a candidate, not a "
                           "proof): %s" % each[0][1][1])
    reasons = dict.fromkeys(why for _name, (state, why) in each if state == UNEXPLAINED)
    if explained:
        return PARTLY, ("%d of %d moved benchmarks have a candidate cause; the others are "
                        "unexplained: %s" % (len(explained), len(each), "; ".join(reasons)))
    return UNEXPLAINED, "; ".join(reasons)


def _points(share):
    points = 100 * share
    return "%g point%s" % (points, "" if points == 1 else "s")


def _pct(value):
    return "%+.1f%%" % (100 * value) if value == value else "-"


def _interval(ci):
    low, high = ci
    return "[%+.1f%%, %+.1f%%]" % (100 * low, 100 * high) if low == low and high == high \
        else "-"


def _us(ns):
    return "%.4g" % (ns / 1000.0) if ns == ns else "-"


def _title(step):
    state, _why = explanation(step)
    return "Step %d: %s -> %s: %d benchmark(s) moved, %s" % (
        step.number, step.old.release, step.new.release, len(step.flagged), state)


def step_page(step, page_dir):
    """The step's Page; links relative to `page_dir` (where it is written)."""
    state, why = explanation(step)
    page = Page(_title(step))
    page.table(["", "kernel", "release", "results"], [
        ["before", step.old.label, step.old.release, os.path.relpath(step.old.results,
                                                                     page_dir)],
        ["after", step.new.label, step.new.release, os.path.relpath(step.new.results,
                                                                    page_dir)]])
    page.text("Judged on the %s by the gate (tools/perfscale compare's): %s." % (
        step.how, "calibrated benchmarks on their spread between runs, the others on "
        "their own repetitions' spread, Holm's correction over the suite"))
    page.heading("What moved")
    page.table(["benchmark", "verdict", "change of the median [95% CI]",
                "before (us)", "after (us)", "counts that moved", "note"],
               [[display_name(v.name), v.verdict, "%s %s" % (_pct(v.change), _interval(v.ci)),
                 _us(v.base_median_ns), _us(v.new_median_ns), v.moved() or "-",
                 v.note or "-"] for v in step.flagged])
    page.heading("Profile difference")
    if step.old.profile is None or step.new.profile is None:
        page.text("No profile to compare: %s." % (step.old.profile_note or
                                                  step.new.profile_note or "not profiled"))
    else:
        page.text("cpu-clock samples of each benchmark's own tasks in its timed region "
                  "(`run --profile` in both guests). self: the sample's leaf is in the "
                  "function; children: the function is anywhere on the stack. Largest "
                  "move first; [k] kernel, [.] user.")
        for verdict in step.flagged:
            page.heading(display_name(verdict.name), 3)
            rows = moves(step, verdict.name)
            if not rows:
                page.text("Not in both profiles.")
                continue
            samples = [str((profile.benchmark_profile(s.profile, verdict.name) or {})
                           .get("samples", "?")) for s in (step.old, step.new)]
            page.text("%s samples before, %s after." % tuple(samples))
            page.table(["function", "", "self before", "self after", "children before",
                        "children after"],
                       [[symbol, "[k]" if kernel else "[.]", "%.1f%%" % (100 * own[0]),
                         "%.1f%% (%+.1f)" % (100 * own[1], 100 * (own[1] - own[0])),
                         "%.1f%%" % (100 * children[0]),
                         "%.1f%% (%+.1f)" % (100 * children[1],
                                            100 * (children[1] - children[0]))]
                        for symbol, kernel, own, children in rows[:PROFILE_ROWS]])
    page.heading("What the sources say")
    if step.changes is None:
        page.text("Not compared: %s." % (step.sources or "no profile named a function"))
    else:
        page.text("%s. The kernel functions whose share moved by %s or more, looked up "
                  "where the paths the families measure live (perf_event, tracing, "
                  "cross-CPU calls, syscall entry, fork, locking, memory) and in the headers "
                  "those files include; a status says what the sources searched hold, not "
                  "what the kernel built (its configuration picks among mm/slab.c, "
                  "slub.c ...)." % (step.sources, _points(MIN_SHARE_MOVE)))
        page.table(["function", "status", "before", "after", "lines changed"],
                   [[c.symbol if c.function == c.symbol else "%s (%s)" % (c.symbol,
                                                                          c.function),
                     c.status, ", ".join(c.old_files) or "-", ", ".join(c.new_files) or "-",
                     c.lines_changed or "-"] for c in step.changes])
        if step.files:
            page.text("The files behind them, as wholes (lines added, removed):")
            page.table(["file", "added", "removed"],
                       [[path, added, removed] for path, (added, removed)
                        in sorted(step.files.items())])
        for change in step.changes:
            if change.hunk:
                page.heading("%s: %s" % (change.function, change.status), 3)
                page.preformatted(change.hunk)
    page.heading("Explanation: %s" % state)
    page.text(why + ".")
    page.table(["benchmark", "explanation", "why"],
               [[display_name(v.name)] + list(benchmark_explanation(step, v.name))
                for v in step.flagged])
    return page


def write_step(step, directory):
    """Writes the step's page as DIRECTORY/STEM.md and .html; returns the .md path."""
    return step_page(step, directory).write(os.path.join(directory, step.stem))[0]


def index_page(title, settings_rows, kernel_rows, series_steps, table, timing_rows,
               plots, page_dir, steps_dir):
    """The series' index: its settings, its kernels (measured, reused or skipped with
    the reason), its steps with their pages, the table benchmark x release, where the
    wall time went, and the plots."""
    page = Page(title)
    page.table(["setting", "value"], settings_rows)
    page.heading("Kernels")
    page.table(["#", "kernel", "release", "state", "results", "measured in"], kernel_rows)
    page.heading("Steps")
    if not series_steps:
        page.text("No two kernels were measured, so nothing was judged.")
    rows = []
    for step in series_steps:
        state, why = explanation(step) if step.flagged else ("-", "")
        counts = {}
        for verdict in step.flagged:
            counts[verdict.verdict] = counts.get(verdict.verdict, 0) + 1
        rows.append([step.number, "%s -> %s" % (step.old.release, step.new.release),
                     ", ".join("%d %s" % (n, v) for v, n in sorted(counts.items())) or
                     "no step", state, why])
    page.table(["step", "releases", "flagged", "explanation", "why"], rows)
    page.links([(_title(step), os.path.relpath(os.path.join(steps_dir, step.stem), page_dir))
                for step in series_steps if step.flagged], pages=True)
    page.heading("Benchmark x release")
    header, table_rows = table
    page.table(header, table_rows)
    page.heading("Wall time")
    page.table(["what", "seconds", "share", "earlier runs reused (seconds they took)"],
               timing_rows)
    if plots:
        page.heading("Plots")
        for path, caption in plots:
            page.image(os.path.relpath(path, page_dir), caption)
    return page
