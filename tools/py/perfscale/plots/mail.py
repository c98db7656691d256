"""The regression mail: a plain-text report in the kernel test robot's shape.

Kernel developers read regressions as LKP mails: a headline naming the worst metric and
the commit, the other tests the same commit moved, then per test machine the two commits
and a table of `base %stddev %change head %stddev metric`, the profile deltas, and how to
reproduce. Two texts here share those pieces:

- alert_mail: one mail per alert (one change: every benchmark x machine that moved at it),
  which the nightly writes beside its report (regression-mail.txt) on the night the alert
  opens and again only on a night it grows; its data is perfscale.plots.alert_view's, the same
  as the dashboard's alert page.
- regression_mail: any two runs, the dashboard's Compare page's export.
"""

import dataclasses
import math
import re
import shlex
import statistics

from perfscale.gate import stats
from perfscale.results import profile
from perfscale.results.names import display_name

_RULE = "=" * 100
_PROFILE_LINES = 10  # symbols whose share moved most, per benchmark


def _mean_sd(values):
    values = [v for v in values if v is not None and math.isfinite(v)]
    if not values:
        return math.nan, math.nan
    mean = statistics.mean(values)
    sd = statistics.stdev(values) / abs(mean) if len(values) > 1 and mean else math.nan
    return mean, sd


def _number(value):
    if not math.isfinite(value):
        return "-"
    return ("%.4g" % value) if abs(value) < 1e6 else "%.0f" % value


def _sd(fraction):
    return "      " if not math.isfinite(fraction) else "\u00b1%3.0f%%" % (100 * fraction)


def _row(base, head, label):
    base_mean, base_sd = _mean_sd(base)
    head_mean, head_sd = _mean_sd(head)
    change = ((head_mean - base_mean) / abs(base_mean) if base_mean and
              math.isfinite(base_mean) and math.isfinite(head_mean) else math.nan)
    change_text = "%+.1f%%" % (100 * change) if math.isfinite(change) else "-"
    return "%14s %s %10s %14s %s  %s" % (_number(base_mean), _sd(base_sd), change_text,
                                         _number(head_mean), _sd(head_sd), label)


# The robot's table head: base %stddev %change head %stddev metric.
TABLE_HEAD = ["%14s %s %10s %14s %s" % ("base", "       ", "", "head", ""),
              "---------------- --------------------------- ----------------------",
              "%14s %s %10s %14s %s" % ("", "%stddev", "%change", "", "%stddev"),
              "%14s %s %10s %14s %s" % ("", "     \\ ", "|", "", "     \\")]


def benchmark_rows(base_runs, head_runs, name, counters, suffix=""):
    """The table's rows of one benchmark over runs ({name: io.Entry} each): its time, then
    each of `counters`; `suffix` marks the time row (an alert's NEW member)."""
    label = display_name(name)
    rows = [_row(_values(base_runs, name), _values(head_runs, name),
                 "%s.real_time_ns%s" % (label, suffix))]
    for counter in counters:
        rows.append(_row(_values(base_runs, name, counter), _values(head_runs, name, counter),
                         "%s.%s" % (label, counter)))
    return rows


def moved_counters(base_runs, head_runs, name, named):
    """The counters of a benchmark worth a row, in order: those the gate named (`named`)
    and every other attributed counter that moved by 10% (_moved)."""
    counters = set(named)
    for runs in (base_runs, head_runs):
        for entries in runs:
            entry = entries.get(name)
            if entry is not None:
                counters.update(k for k in entry.counters if stats.counter_kind(k))
    return [c for c in sorted(counters) if c in named or _moved(
        _values(base_runs, name, c), _values(head_runs, name, c))]


def _values(entries_list, name, counter=None):
    """Per repetition (time) or per run (counter) values of `name` over runs."""
    out = []
    for entries in entries_list:
        entry = entries.get(name)
        if entry is None:
            continue
        if counter is None:
            out += [v for v in entry.real_ns if v == v]
        else:
            out += list(entry.counters.get(counter, []))
    return out


def profile_deltas(base_doc, head_doc, names):
    """Lines of the symbols whose self share moved most, per regressed benchmark (the
    mail's, and the alert page's for its worst member)."""
    lines = []
    for name in names:
        base = profile.benchmark_profile(base_doc, name)
        head = profile.benchmark_profile(head_doc, name)
        if base is None or head is None:
            continue
        moved = sorted(profile.share_moves(base, head), key=lambda m: -abs(m[2][1] - m[2][0]))
        lines.append("      %-10s %10s   %s" % ("base", "head", "self share: "
                                                + display_name(name)))
        for symbol, _kernel, (old, new), _children in moved[:_PROFILE_LINES]:
            lines.append("%10.2f%%  %+9.2f  %9.2f%%  %s" % (
                100 * old, 100 * (new - old), 100 * new, symbol))
        lines.append("")
    return lines


def regression_mail(lineage, base_label, head_label, base_runs, head_runs, verdicts,
                    reproduce, base_profile=None, head_profile=None):
    """The mail's text.

    lineage: (host, cpus, config); base_label/head_label: e.g. 'run 12 (kernel 6.1.0)';
    base_runs/head_runs: lists of {name: io.Entry}; verdicts: gate Verdicts
    (those that regressed are reported, with every attributed counter that moved);
    reproduce: command lines (lists) that reproduce the comparison; *_profile: the
    runs' --profile documents, when recorded."""
    host, cpus, config = lineage
    regressed = [v for v in verdicts if v.regression]
    # Like the robot's mails, improvements follow the regressions in the table.
    shown = regressed + [v for v in verdicts if v.verdict == stats.FASTER]
    out = [_RULE,
           "perfscale: %d regression(s) on host %s, %d CPUs, config '%s'"
           % (len(regressed), host, cpus, config or "default"), _RULE, "",
           "base: %s" % base_label, "head: %s" % head_label, ""] + TABLE_HEAD
    if not shown:
        out.append("(no benchmark changed significantly)")
    for verdict in shown:
        out += benchmark_rows(base_runs, head_runs, verdict.name, moved_counters(
            base_runs, head_runs, verdict.name, {name for name, _old, _new in verdict.counters}))
    out.append("")
    out += ["verdicts (the nightly's gate, %d%% intervals):" % round(100 * stats.CONFIDENCE)]
    out += ["  " + v.line() for v in regressed]
    out.append("")
    deltas = profile_deltas(base_profile, head_profile, [v.name for v in regressed])
    if deltas:
        out += ["profile (perf cpu-clock, self share of each benchmark's samples):", ""]
        out += deltas
    out += ["To reproduce:", ""]
    out += ["        " + shlex.join(command) for command in reproduce]
    out.append("")
    return "\n".join(out)


@dataclasses.dataclass
class AlertSection:
    """One lineage's part of an alert mail: its members (alert_members rows with counts
    and mdc, perfscale.plots.alert_view.details'), its last good and first bad runs (rows;
    good None when unknown) and their {name: Entry}, and the commands that reproduce it."""
    members: list
    good: object
    bad: dict
    base_entries: dict
    head_entries: dict
    reproduce: list


def _percent(value):
    return "%+.1f%%" % (100 * value) if value is not None and math.isfinite(value) else "-"


def _share(value):
    return "%.1f%%" % (100 * value) if value is not None and math.isfinite(value) else "-"


def _interval(member):
    if member["ci_low"] is None or member["ci_high"] is None:
        return "-"
    return "[%s, %s]" % (_percent(member["ci_low"]), _percent(member["ci_high"]))


def _run_label(run):
    if run is None:
        return "unknown (no earlier passing run)"
    return "run %d, %s: kernel %s, perfscale %s" % (
        run["id"], run["recorded_at"], run["kernel_release"] or "?",
        run["perfscale_revision"] or "?")


def _alert_table(members, run_id):
    """The robot's '+----+' table: one line per member, the new ones marked."""
    header = ("", "benchmark", "machine", "change", "%d%% interval" %
              round(100 * stats.CONFIDENCE), "noise floor", "MDC", "nights")
    lines = [header]
    for m in members:
        lines.append(("NEW" if m["first_bad_run_id"] == run_id else "",
                      display_name(m["name"]), "%s/%d CPUs/%s" % (
                          m["host"], m["cpus"], m["config"] or "default"),
                      _percent(m["change"]), _interval(m), _share(m["noise_floor"]),
                      _share(m["mdc"]), str(m["nights"])))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    out = [rule]
    for index, line in enumerate(lines):
        out.append("|" + "|".join(" %-*s " % (w, cell) for w, cell in zip(widths, line)) + "|")
        if index == 0:
            out.append(rule)
    out.append(rule)
    return out


def alert_mail(found, sections, run_id):
    """The mail of one alert after run `run_id` opened it or made it grow.

    found: perfscale.plots.alert_view.details(); sections: AlertSection per lineage (the worst
    first). The members whose first bad run is `run_id` are what is new in this mail: each
    earlier growth of the alert wrote its own mail."""
    alert, members = found["alert"], found["members"]
    worst = found["worst"]
    new = [m for m in members if m["first_bad_run_id"] == run_id]
    opened = alert["opened_run_id"] == run_id
    earlier = [m["first_bad_run_id"] for m in members if m["first_bad_run_id"] < run_id]
    out = [_RULE, "perfscale: alert #%d (%s, %s): %d benchmark(s) on %d machine(s) moved at "
           "one change" % (alert["id"], alert["kind"], alert["state"], found["benchmarks"],
                           found["lineages"]), _RULE, ""]
    if worst is not None:
        out += ["perfscale noticed a %s regression of %s.real_time_ns on host %s, %d CPUs, "
                "config '%s', at:" % (_percent(worst["change"]), display_name(worst["name"]),
                                      worst["host"], worst["cpus"],
                                      worst["config"] or "default"), ""]
    out += ["change:    %s" % found["change"]]
    for label, good, bad in (("kernel", alert["good_kernel"], alert["bad_kernel"]),
                             ("commit", alert["good_commit"], alert["bad_commit"]),
                             ("config", alert["good_config"], alert["bad_config"]),
                             ("perfscale", alert["good_revision"], alert["bad_revision"])):
        if good or bad:  # a commit or config digest the runs never named is left out
            out.append("%-10s %s" % (label + ":", "%s -> %s" % (good or "?", bad or "?")
                                     if good != bad else "%s (unchanged)" % good))
    out += ["alert:     #%d, opened %s by run %d, state %s (%s: %s)" % (
        alert["id"], alert["opened_at"], alert["opened_run_id"], alert["state"], alert["who"],
        alert["why"]), ""]
    if opened:
        out.append("This mail: the alert opened with run %d." % run_id)
    else:
        out.append("This mail: the alert grew with run %d: %d new member(s), marked NEW, since "
                   "the mail of run %d." % (run_id, len(new), max(earlier) if earlier else 0))
        out += ["  NEW: %s on %s, %d CPUs, config '%s'" % (
            display_name(m["name"]), m["host"], m["cpus"], m["config"] or "default")
            for m in new]
    out += ["", "Every benchmark x machine that moved at this change (the gate's figures of "
            "its first bad night):", ""]
    out += _alert_table(members, run_id)
    out += ["", "Details are as below:",
            "-" * 98 + "->", ""]
    for section in sections:
        out += _alert_section(section, run_id)
    if found["profile"]:
        out += ["profile of the worst member (perf cpu-clock, self share of its samples, "
                "last good run -> first bad run):", ""]
        out += found["profile"]
    if found["bisect"]:
        out += ["To narrow the kernel range (%s):" % found["bisect_how"], "",
                "        " + found["bisect"], ""]
    return "\n".join(out)


def _alert_section(section, run_id):
    first = section.members[0]
    out = [_RULE, "host/cpus/config/machine:",
           "  %s/%d/%s/%s" % (first["host"], first["cpus"], first["config"] or "default",
                              first["machine"][:12] or "-"), "",
           "runs:", "  %s (last good)" % _run_label(section.good),
           "  %s (first bad)" % _run_label(section.bad), ""] + TABLE_HEAD
    base, head = [section.base_entries], [section.head_entries]
    for member in section.members:
        out += benchmark_rows(base, head, member["name"],
                              [counter for counter, _before, _after in member["counts"]],
                              "  (NEW)" if member["first_bad_run_id"] == run_id else "")
    out += ["", "gate (first bad night, %d%% intervals):" % round(100 * stats.CONFIDENCE)]
    for member in section.members:
        out.append("  %s: %s %s, noise floor %s, MDC %s, %d night(s)%s" % (
            display_name(member["name"]), _percent(member["change"]), _interval(member),
            _share(member["noise_floor"]), _share(member["mdc"]), member["nights"],
            ", level returned at run %d" % member["fixed_run_id"]
            if member["fixed_run_id"] else ""))
    out += ["", "To reproduce (on %s):" % first["host"], ""]
    out += ["        " + shlex.join(command) for command in section.reproduce]
    out.append("")
    return out


def _moved(base, head):
    """A counter worth a line even when the gate did not name it: moved by >= 10% and
    by the gate's minimum delta per operation."""
    if not base or not head:
        return False
    old, new = statistics.median(base), statistics.median(head)
    return (abs(new - old) >= stats.COUNTER_MIN_DELTA
            and abs(new - old) >= 0.1 * abs(old))


def reproduce_commands(names, repetitions, base_id, config, run_args, history_path,
                       base_results=None):
    """The perfscale commands that rerun the regressed benchmarks and judge them again:
    a focused run on the kernel under test compared with the baseline's results file
    (base_results; else the baseline.json the nightly rebuilds from the history beside
    its report), then the nightly against the same baseline."""
    return [["tools/perfscale", "run", "--repetitions", str(repetitions), "--out",
             "head.json"] + focused_run_args(run_args, names),
            ["tools/perfscale", "compare", base_results or "baseline.json", "head.json"],
            ["tools/perfscale", "nightly", "--history", history_path, "--baseline",
             str(base_id), "--config", config, "--"] + list(run_args)]


def focused_run_args(run_args, names):
    """`run`'s arguments (RUN OPTIONS [-- FLAGS]) made to run the benchmarks `names` alone
    (a filter matching each whole name, in place of any filter the flags had); with no
    names, as they were less their filter."""
    focus = (["--benchmark_filter=^(%s)$" % "|".join(_regex_escape(n) for n in sorted(names))]
             if names else [])
    return list(_without_filter(run_args)) + focus


def _without_filter(run_args):
    args = [a for a in run_args if not a.startswith("--benchmark_filter")]
    return args if "--" in args else args + ["--"]


def _regex_escape(name):
    return re.escape(name)


@dataclasses.dataclass
class BisectFinding:
    """What `tools/perfscale bisect` found, for bisect_mail (perfscale.suite.bisect
    fills it in): the subject's tree label and first bad commit (or kernel; `what` says
    which), the headline move (label, change as a fraction, direction +1 up or -1 down),
    the culprit's and its parent's one-line titles, the commit as `git show --stat` has
    it, the range bisected, how it ran (machine, parameters), the two sides' runs
    ({name: io.Entry} each) and the rows to show [(benchmark, [counters])], the gate's
    lines of parent -> culprit, the bisection's steps, the kernel config lines, the
    commands that reproduce it and the --profile documents where measured with them."""
    tree: str
    culprit: str
    what: str
    headline: tuple
    title: str
    parent_title: str
    show: str
    range_line: str
    machine: list
    parameters: list
    base_runs: list
    head_runs: list
    rows: list
    verdicts: list
    steps: list
    config: list
    reproduce: list
    base_profile: object = None
    head_profile: object = None
    profile_note: str = ""    # why there is no profile difference, when there is none


def bisect_subject(finding):
    """`[TREE] SHA: BENCHMARK +x% regression` (an improvement where it moved the good way)."""
    label, change, direction = finding.headline
    culprit = finding.culprit[:12] if finding.what == "commit" else finding.culprit
    return "[%s] %s: %s %s %s" % (finding.tree, culprit, label, _percent(change),
                                   "regression" if direction > 0 else "improvement")


def bisect_mail(finding):
    """The mail the first bad commit's author reads, in the kernel test robot's shape:
    the subject, what moved and where, the commit and its files, the %stddev/%change
    table of every benchmark and count that moved, the gate's verdicts, the profile
    difference, the bisection, the config and how to reproduce."""
    label, change, direction = finding.headline
    commit = finding.what == "commit"
    out = ["Subject: " + bisect_subject(finding), "", "Hello,", "",
           "perfscale bisected a %s %s of %s to:" % (
               _percent(change), "regression" if direction > 0 else "improvement", label), "",
           "%-7s %s" % (finding.what + ":", finding.title if not commit else "%s (\"%s\")" % (
               finding.culprit, finding.title.split(" ", 1)[-1])),
           "%-7s %s" % ("range:", finding.range_line), "",
           "in testcase: perfscale",
           "on test machine: " + "; ".join(finding.machine),
           "with following parameters:", ""]
    out += ["        " + line for line in finding.parameters]
    out += ["", "Details are as below:", "-" * 98 + "->", ""]
    if finding.show:
        out += [finding.show, ""]
    # git bisect's words: "bad" has the change, which for an improvement is the good news.
    first = ("the first bad %s" if direction > 0 else "the first %s with the change") \
        % finding.what
    out += [_RULE, "base: %s (the %s before it)" % (finding.parent_title, finding.what),
            "head: %s (%s)" % (finding.title, first), ""] + TABLE_HEAD
    for name, counters in finding.rows:
        out += benchmark_rows(finding.base_runs, finding.head_runs, name, moved_counters(
            finding.base_runs, finding.head_runs, name, set(counters)))
    out.append("")
    if finding.verdicts:
        out += ["gate (%s against the one before it, %d%% intervals):"
                % (first, round(100 * stats.CONFIDENCE))]
        out += ["  " + line for line in finding.verdicts]
        out.append("")
    deltas = profile_deltas(finding.base_profile, finding.head_profile,
                            [name for name, _counters in finding.rows])
    if deltas:
        out += ["profile (perf cpu-clock, self share of each benchmark's samples):", ""]
        out += deltas
    elif finding.profile_note:
        out += ["profile: %s" % finding.profile_note, ""]
    out += ["bisection (each %s judged by the gate against the good and the bad end):"
            % finding.what]
    out += ["  " + line for line in finding.steps] or ["  (no %s between the ends)"
                                                       % finding.what]
    out.append("")
    if finding.config:
        out += ["config (the run of %s):" % first]
        out += ["  " + line for line in finding.config]
        out.append("")
    out += ["To reproduce:", ""]
    out += ["        " + shlex.join(command) for command in finding.reproduce]
    out.append("")
    return "\n".join(out)
