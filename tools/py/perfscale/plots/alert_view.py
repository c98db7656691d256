"""One alert as a reader sees it: the data of the dashboard's alert page and of the alert's
regression mail, from one function (details), so that the page and the mail never say
different things about the same alert.

    found = alert_view.details(conn, 3)   # None: no alert #3
    text = alert_view.mail_text(conn, 3, run_id, "history.sqlite")
"""

import json
import os
import re
import shlex

from perfscale.gate import stats
from perfscale.history import alerts, store
from perfscale.machine import debian_release
from perfscale.plots import mail
from perfscale.results import io

# A count that moved by at least this share between the last good and first bad run is
# shown with the alert's member: what moved with the time.
COUNT_MOVED = 0.10
CHANGE_FIELDS = ("good_kernel", "bad_kernel", "good_config", "bad_config", "good_commit",
                 "bad_commit", "good_revision", "bad_revision")


def profile_of(results_path):
    """The --profile document of a results file; None when the run was not profiled or its
    files are gone or unreadable (a page or mail then goes without profile lines)."""
    from perfscale.results import profile
    if not results_path or not os.path.isfile(results_path):
        return None
    try:
        results = io.load_results(results_path)
        found = profile.find_profile(results)
        return profile.load_profile(found) if found else None
    except (io.ResultsError, profile.ProfileError, TypeError):
        return None


def mdc(conn, member):
    """The member's calibrated minimum detectable change (`tools/perfscale calibrate`),
    or None: how big a step its lineage can see at all."""
    found = store.load_calibration(conn, member["host"], member["cpus"], member["config"],
                                   member["machine"], member["name"])
    calibration = found.get((member["name"], stats.REAL_TIME))
    return calibration.mdc if calibration is not None else None


def counts_moved(conn, member):
    """[(counter, before, after)] of the member's benchmark that moved by COUNT_MOVED or
    more between its last good run and its first bad one."""
    if not member["good_run_id"]:
        return []
    before = alerts.counters_of(conn, member["good_run_id"], member["name"])
    after = alerts.counters_of(conn, member["first_bad_run_id"], member["name"])
    return [(c, before[c], after[c]) for c in sorted(before)
            if c in after and before[c] and after[c] is not None
            and abs(after[c] / before[c] - 1) >= COUNT_MOVED]


def profile_difference(conn, member):
    """The mail's profile lines for the member, when both its runs were recorded with
    --profile and their files are still there ([] otherwise)."""
    if not member["good_run_id"]:
        return []
    runs = [store.get_run(conn, member[k]) for k in ("good_run_id", "first_bad_run_id")]
    if None in runs:
        return []
    return mail.profile_deltas(profile_of(runs[0]["results_path"]),
                               profile_of(runs[1]["results_path"]), [member["name"]])


MAX_KERNELS = 200  # a longer list is no bisection a lab would start from a page


def debian_kernels(good, bad):
    """The `debian:` names of every update from kernel release `good` to `bad` in order
    (both ends included) when both are Debian's (`uname -r`: 6.1.0-27-cloud-amd64,
    7.1.8+deb13-amd64; perfscale.machine.debian_release) of one line and flavour; else
    None. Every number between is listed: Debian skips some, and bisect names those apt
    lacks."""
    found = [debian_release.UNAME.fullmatch(k or "") for k in (good, bad)]
    if None in found or any(m.group("abi") is None and m.group("patch") is None for m in found):
        return None  # not Debian's, or experimental's unnumbered release candidate
    first, last = found
    by = "abi" if first.group("abi") is not None else "patch"
    if first.group("line", "flavour") != last.group("line", "flavour") or last.group(by) is None:
        return None
    low, high = int(first.group(by)), int(last.group(by))
    if low == high or abs(high - low) >= MAX_KERNELS:
        return None
    step = 1 if high > low else -1
    return [debian_release.name(first.group("line"), flavour=first.group("flavour") or "",
                                **{by: n}) for n in range(low, high + step, step)]


def bisect_command(alert, worst):
    """The `tools/perfscale bisect` that would narrow the alert's kernel range, for its
    worst member: judged by the counter that moved most between its good and bad runs
    (worst["counts"], counts_moved's), else instructions. Between two Debian kernels of
    one series the list is filled in (debian_kernels); otherwise it reads GOOD,...,BAD,
    the kernels between to be listed by hand."""
    good, bad = alert["good_kernel"] or "GOOD_KERNEL", alert["bad_kernel"] or "BAD_KERNEL"
    kernels = debian_kernels(alert["good_kernel"], alert["bad_kernel"])
    if kernels:
        good, bad, listed = kernels[0], kernels[-1], ",".join(kernels)
    else:
        listed = "%s,...,%s" % (good, bad)
    moved = sorted(((abs(after / before - 1), c) for c, before, after in worst["counts"]),
                   reverse=True)
    # No count moved: the gate judges what it always does (the times, where comparable).
    counter = " --counter " + shlex.quote(moved[0][1]) if moved else ""
    benchmark = "^" + re.escape(worst["name"].removesuffix("/real_time"))
    return ("tools/perfscale bisect --good %s --bad %s --kernels %s "
            "--benchmark %s%s --cpus %s" % (
                shlex.quote(good), shlex.quote(bad), shlex.quote(listed),
                shlex.quote(benchmark), counter, worst["cpus"]))


def tree_bisect_command(conn, alert, worst):
    """The `tools/perfscale bisect --tree` that finds the commit, where the alert's change
    is between two commits of a kernel tree its first bad run names (a kernel built from a
    tree, perfscale.vm.kernel); '' otherwise. The worst member's benchmark, on its
    machine's vCPUs and clock, with the nightly's run arguments."""
    if not alert["good_commit"] or not alert["bad_commit"]:
        return ""
    run = store.get_run(conn, worst["first_bad_run_id"])
    context = json.loads(run["context"] or "{}") if run is not None else {}
    tree = context.get("kernel_tree")
    if not tree:
        return ""
    command = ["tools/perfscale", "bisect", "--tree", tree, "--good", alert["good_commit"],
               "--bad", alert["bad_commit"], "--benchmark",
               "^" + re.escape(worst["name"].removesuffix("/real_time")),
               "--cpus", str(worst["cpus"])]
    if context.get("vm_clock") == "instructions":
        command += ["--clock", "instructions"]
    run_args = mail.focused_run_args(json.loads(run["run_args"] or "[]"), [])
    if run_args != ["--"]:
        command += ["--"] + run_args
    return shlex.join(command)


def bisect_how(command):
    """What the bisect command walks, in a few words (the alert page's and mail's)."""
    if " --tree " in command:
        return "the tree's commits between the two, each built and measured"
    if "...," in command:
        return "list the kernels between the two in order"
    return ("Debian's updates between the two, every number: bisect skips any that apt "
            "lacks")


def lineage_of(member):
    return member["host"], member["machine"], member["cpus"], member["config"]


def details(conn, alert_id):
    """What the alert page and the mail show of alert `alert_id`, as one dict (None when
    there is no such alert): the alert row, its change described, its members (rows with
    their counts that moved and MDC), the worst member (largest change) with its profile
    difference, the bisect command, the counts of lineages and benchmarks, and the log."""
    row = alerts.get(conn, alert_id)
    if row is None:
        return None
    members = [dict(m, counts=counts_moved(conn, m), mdc=mdc(conn, m))
               for m in alerts.members(conn, alert_id)]
    worst = max(members, key=lambda m: m["change"] or 0, default=None)
    command = (tree_bisect_command(conn, row, worst) or bisect_command(row, worst)) \
        if worst else ""
    return {"alert": row, "members": members, "log": alerts.log(conn, alert_id),
            "change": alerts.Change(*(row[f] for f in CHANGE_FIELDS)).describe(),
            "worst": worst, "bisect": command, "bisect_how": bisect_how(command),
            "profile": profile_difference(conn, worst) if worst else [],
            "lineages": len({lineage_of(m) for m in members}),
            "benchmarks": len({m["name"] for m in members})}


def mail_text(conn, alert_id, run_id, history):
    """The regression mail of alert `alert_id` as it stands after run `run_id` (the run
    that opened it or made it grow): details() plus, per lineage, its last good and first
    bad runs' figures and the commands that reproduce them on that machine. history: the
    history's name for those commands (store.describe)."""
    found = details(conn, alert_id)
    if found is None:
        raise store.HistoryError("no alert #%d" % alert_id)
    lineages = {}
    for member in found["members"]:
        lineages.setdefault((lineage_of(member), member["good_run_id"],
                             member["first_bad_run_id"]), []).append(member)
    sections = []
    for (_lineage, good_id, bad_id), members in sorted(lineages.items(), key=lambda kv: (
            -max(m["change"] or 0 for m in kv[1]), kv[0][2])):
        good = store.get_run(conn, good_id) if good_id else None
        bad = store.get_run(conn, bad_id)
        names = [m["name"] for m in members]
        base_path = good["results_path"] if good is not None else None
        sections.append(mail.AlertSection(
            members=members, good=good, bad=bad,
            base_entries=store.load_entries(conn, good_id) if good is not None else {},
            head_entries=store.load_entries(conn, bad_id),
            reproduce=mail.reproduce_commands(
                names, bad["repetitions"], good_id if good is not None else bad_id,
                bad["config"], json.loads(bad["run_args"]), history,
                base_path if base_path and os.path.isfile(base_path) else None)))
    return mail.alert_mail(found, sections, run_id)
