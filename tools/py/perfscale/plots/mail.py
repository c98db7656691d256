"""The regression mail: a plain-text report in the kernel test robot's shape.

Kernel developers read regressions as LKP mails: the two commits, then a table of
`base %stddev %change head %stddev metric`, then the profile deltas, then how to
reproduce. The nightly writes one beside its report when it finds a regression
(regression-mail.txt) and the dashboard's Compare page exports the same text, both
through regression_mail() here.
"""

import math
import re
import shlex
import statistics

from perfscale.gate import stats
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
    if not base_doc or not head_doc:
        return []
    base = {b["name"]: b for b in base_doc["benchmarks"]}
    head = {b["name"]: b for b in head_doc["benchmarks"]}
    lines = []
    for name in names:
        if name not in base or name not in head:
            continue
        share = {}
        for side, entry in ((0, base[name]), (1, head[name])):
            for s in entry["symbols"]:
                key = str(s.get("symbol", "?"))
                share.setdefault(key, [0.0, 0.0])[side] = float(s.get("self", 0.0))
        moved = sorted(share.items(), key=lambda kv: -abs(kv[1][1] - kv[1][0]))
        lines.append("      %-10s %10s   %s" % ("base", "head", "self share: "
                                                + display_name(name)))
        for symbol, (old, new) in moved[:_PROFILE_LINES]:
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
