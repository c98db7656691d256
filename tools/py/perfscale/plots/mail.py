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
           "base: %s" % base_label, "head: %s" % head_label, "",
           "%14s %s %10s %14s %s" % ("base", "       ", "", "head", ""),
           "---------------- --------------------------- ----------------------",
           "%14s %s %10s %14s %s" % ("", "%stddev", "%change", "", "%stddev"),
           "%14s %s %10s %14s %s" % ("", "     \\ ", "|", "", "     \\")]
    if not shown:
        out.append("(no benchmark changed significantly)")
    for verdict in shown:
        label = display_name(verdict.name)
        out.append(_row(_values(base_runs, verdict.name), _values(head_runs, verdict.name),
                        "%s.real_time_ns" % label))
        counters = set()
        for runs in (base_runs, head_runs):
            for entries in runs:
                entry = entries.get(verdict.name)
                if entry is not None:
                    counters.update(k for k in entry.counters if stats.counter_kind(k))
        moved = {name for name, _old, _new in verdict.counters}
        for counter in sorted(counters):
            base_values = _values(base_runs, verdict.name, counter)
            head_values = _values(head_runs, verdict.name, counter)
            if counter in moved or _moved(base_values, head_values):
                out.append(_row(base_values, head_values, "%s.%s" % (label, counter)))
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
        out += ["To narrow the kernel range (%s):" % (
            "list the kernels between the two in order" if "...," in found["bisect"] else
            "Debian's updates between the two, every number: bisect names any that apt "
            "lacks, to drop from the list"), "",
                "        " + found["bisect"], ""]
    return "\n".join(out)


def _alert_section(section, run_id):
    first = section.members[0]
    out = [_RULE, "host/cpus/config/machine:",
           "  %s/%d/%s/%s" % (first["host"], first["cpus"], first["config"] or "default",
                              first["machine"][:12] or "-"), "",
           "runs:", "  %s (last good)" % _run_label(section.good),
           "  %s (first bad)" % _run_label(section.bad), "",
           "%14s %s %10s %14s %s" % ("base", "       ", "", "head", ""),
           "---------------- --------------------------- ----------------------",
           "%14s %s %10s %14s %s" % ("", "%stddev", "%change", "", "%stddev"),
           "%14s %s %10s %14s %s" % ("", "     \\ ", "|", "", "     \\")]
    base, head = [section.base_entries], [section.head_entries]
    for member in section.members:
        label = display_name(member["name"])
        out.append(_row(_values(base, member["name"]), _values(head, member["name"]),
                        "%s.real_time_ns%s" % (label, "  (NEW)" if member["first_bad_run_id"]
                                               == run_id else "")))
        for counter, _before, _after in member["counts"]:
            out.append(_row(_values(base, member["name"], counter),
                            _values(head, member["name"], counter),
                            "%s.%s" % (label, counter)))
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
    focus = (["--benchmark_filter=^(%s)$" % "|".join(_regex_escape(n) for n in sorted(names))]
             if names else [])
    return [["tools/perfscale", "run", "--repetitions", str(repetitions), "--out",
             "head.json"] + list(_without_filter(run_args)) + focus,
            ["tools/perfscale", "compare", base_results or "baseline.json", "head.json"],
            ["tools/perfscale", "nightly", "--history", history_path, "--baseline",
             str(base_id), "--config", config, "--"] + list(run_args)]


def _without_filter(run_args):
    args = [a for a in run_args if not a.startswith("--benchmark_filter")]
    return args if "--" in args else args + ["--"]


def _regex_escape(name):
    return re.escape(name)
