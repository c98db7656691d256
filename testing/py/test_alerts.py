"""Alerts: one per change, not per night (perfscale.history.alerts, perfscale.gate.alerting),
through the real nightly with the fake binary, and `tools/perfscale alerts`."""

import json
import os
import re
import sqlite3

import pytest

from conftest import DATA, FAKE_RUN, as_schema_5
from perfscale.gate import stats
from perfscale.history import alerts, store as history, triage

SLOWED = ("BM_BreakpointEnable/passive:8/active:0/placement:0/real_time",
          "BM_BreakpointThread/breakpoints:4/parallelism:2/threads:20/real_time")
OPTIONS = ("--no-plots", "--config", "ci", "--confirm-rounds", "0")


@pytest.fixture
def nightly(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("PERFSCALE_BINARY", FAKE_RUN)
    monkeypatch.setenv("PERFSCALE_COMPARE_PY", str(tmp_path / "no-compare.py"))
    db = tmp_path / "history.sqlite"

    def run(*run_args):
        return cli("nightly", "--history", db, "--report-dir", tmp_path / "nightly",
                   *OPTIONS, "--", "--", *run_args)
    run.db = db
    run.report_dir = tmp_path / "nightly"
    return run


def _alerts(db):
    with history.open_history(str(db), read_only=True) as conn:
        return [(dict(a), [dict(m) for m in alerts.members(conn, a["id"])])
                for a in alerts.listing(conn)]


def test_three_bad_nights_are_one_alert_acknowledged_then_found_fixed(nightly, cli):
    assert nightly("--fixture=base.json")[0] == 0
    mails = []
    for night in range(3):
        code, out, _ = nightly("--fixture=slow.json")
        assert code == 1, out
        mails.append("regression mail:" in out)
        if night == 0:
            assert "opens alert #1" in out and "joins alert #1" in out
        else:
            assert "alert #1, night %d of its step (attached)" % (night + 1) in out
    assert mails == [True, False, False]  # one mail per alert, not per night
    [(alert, members)] = _alerts(nightly.db)
    assert alert["state"] == "new" and alert["kind"] == "regression"
    assert sorted(m["name"] for m in members) == sorted(SLOWED)
    assert {(m["first_bad_run_id"], m["last_run_id"], m["nights"]) for m in members} == {
        (2, 4, 3)}
    assert all(m["change"] > 0 and m["ci_low"] <= m["change"] <= m["ci_high"]
               for m in members)

    code, out, err = cli("alerts", "--history", nightly.db, "--state", "new")
    assert code == 0 and "#1" in out and "new" in out, err
    code, out, err = cli("alerts", "set", "1", "--state", "acknowledged", "--who", "alice",
                         "--why", "the new level is the kernel's", "--history", nightly.db)
    assert code == 0, err

    code, out, _ = nightly("--fixture=slow.json")
    assert code == 0, out
    assert "baseline: run 1" in out  # the others' baseline is the old one
    assert "2 benchmark(s) of alert #1 (acknowledged) judged against its accepted level: " \
        "runs 4, 3, 2" in out  # restarted at the first bad run
    assert all("%s: within alert #1 (acknowledged)" % n in out for n in SLOWED)

    code, out, _ = nightly("--fixture=base.json")  # the old level again
    assert code == 0, out
    assert "alert #1 found fixed" in out
    [(alert, members)] = _alerts(nightly.db)
    assert alert["state"] == "fixed" and alert["fixed_run_id"] == 6
    assert "level returned at run 6" in alert["why"]
    code, out, _ = cli("alerts", "--history", nightly.db, "--json")
    assert [a["state"] for a in json.loads(out)] == ["fixed"]
    with history.open_history(str(nightly.db), read_only=True) as conn:
        assert [r["state"] for r in alerts.log(conn, 1)] == ["new", "acknowledged", "fixed"]
        # The night judged within the acknowledged alert (run 5) passed, so it is a baseline
        # again, but not of the benchmarks whose old level came back at run 6.
        from perfscale.gate import alerting
        run = history.get_run(conn, 6)
        lineage = (run["host"], run["machine"], run["cpus"], run["config"])
        rows = alerts.baseline_rows(conn, lineage, 8)
        assert [r["id"] for r in rows] == [6, 5, 1]
        base, lines = alerting.accepted_base(
            conn, lineage, [history.load_entries(conn, r["id"]) for r in rows], 8,
            [r["id"] for r in rows])
        assert lines == []
        assert [all(n in runs for n in SLOWED) for runs in base] == [True, False, True]
        assert all(len(runs) > 10 for runs in base)  # the rest of the suite stays


def _slow_only(tmp_path, name):
    """A fixture slow in `name` alone: base.json with slow.json's entries of that benchmark."""
    documents = []
    for fixture in ("base.json", "slow.json"):
        with open(os.path.join(DATA, fixture), encoding="utf-8") as f:
            documents.append(json.load(f))
    slow = iter([b for b in documents[1]["benchmarks"] if b["run_name"] == name])
    documents[0]["benchmarks"] = [next(slow) if b["run_name"] == name else b
                                  for b in documents[0]["benchmarks"]]
    path = tmp_path / "slow-one.json"
    path.write_text(json.dumps(documents[0]), encoding="utf-8")
    return str(path)


def _mail(report_dir):
    """The regression mail of the latest night, None when it wrote none."""
    path = max(report_dir.iterdir()) / "regression-mail.txt"
    return path.read_text(encoding="utf-8") if path.exists() else None


def test_one_mail_per_alert_written_again_only_when_it_grows(nightly, tmp_path):
    kernel = "--context=kernel_release=6.1.0-28-amd64"  # the change that keys the alert
    assert nightly("--fixture=base.json")[0] == 0
    code, out, _ = nightly("--fixture=" + _slow_only(tmp_path, SLOWED[0]), kernel)
    assert code == 1 and "opens alert #1" in out and "regression mail:" in out
    mail = _mail(nightly.report_dir)
    assert mail.startswith("=" * 100 + "\nperfscale: alert #1 (regression, new): 1 benchmark(s) "
                           "on 1 machine(s) moved at one change")
    assert "\nkernel:    6.1.0-27-amd64 -> 6.1.0-28-amd64\n" in mail
    assert "\nperfscale: 4aa63e4 (unchanged)\n" in mail and "\ncommit:" not in mail
    assert "This mail: the alert opened with run 2." in mail
    first, second = (stats.display_name(n) for n in SLOWED)
    assert "perfscale noticed a +" in mail and "regression of %s.real_time_ns" % first in mail
    assert "%s.real_time_ns" % second not in mail
    assert "run 1, " in mail and "(last good)" in mail and "run 2, " in mail
    assert "tools/perfscale bisect --good debian:6.1.0-27 --bad debian:6.1.0-28 --kernels " \
        "debian:6.1.0-27,debian:6.1.0-28 --benchmark " in mail
    assert "tools/perfscale nightly --history" in mail and "--baseline 1" in mail
    assert "tools/perfscale compare" in mail

    # The same step a second night: attached, no mail.
    code, out, _ = nightly("--fixture=" + _slow_only(tmp_path, SLOWED[0]), kernel)
    assert code == 1 and "night 2 of its step (attached)" in out
    assert "regression mail:" not in out and _mail(nightly.report_dir) is None

    # A second benchmark moves at the same change: the alert grows, and its mail names both,
    # the newcomer marked.
    code, out, _ = nightly("--fixture=slow.json", kernel)
    assert code == 1 and "joins alert #1" in out and "regression mail:" in out
    mail = _mail(nightly.report_dir)
    assert "alert #1 (regression, new): 2 benchmark(s) on 1 machine(s)" in mail
    assert ("This mail: the alert grew with run 4: 1 new member(s), marked NEW, since the "
            "mail of run 2.") in mail
    assert "  NEW: %s on perfscale-ci-1" % second in mail
    assert "%s.real_time_ns  (NEW)" % second in mail
    table = [line for line in mail.splitlines() if line.startswith("| ")]
    assert len(table) == 3  # the header and the two members
    assert any(line.startswith("|     | %s " % first) for line in table)
    assert any(line.startswith("| NEW | %s " % second) for line in table)
    assert mail.count("(first bad)") == 2  # one section per lineage x step
    [(_alert, members)] = _alerts(nightly.db)
    assert sorted((m["name"], m["first_bad_run_id"], m["nights"]) for m in members) == sorted(
        [(SLOWED[0], 2, 3), (SLOWED[1], 4, 1)])

    # Both attached on the next night: no mail.
    code, out, _ = nightly("--fixture=slow.json", kernel)
    assert code == 1 and "regression mail:" not in out


def test_an_alert_between_two_commits_of_a_tree_names_them_and_bisects_the_tree(
        nightly, tmp_path):
    # Kernels built from a tree name their commit (perfscale.vm.kernel's context): the
    # alert is keyed by it, names it, and its bisect command walks the tree's commits.
    good, bad = "a" * 40, "b" * 40
    tree = ("--context=kernel_tree=/src/linux", "--context=kernel_release=7.3.0-rc2")
    assert nightly("--fixture=base.json", "--context=kernel_tree_commit=" + good, *tree)[0] == 0
    code, out, _ = nightly("--fixture=" + _slow_only(tmp_path, SLOWED[0]),
                           "--context=kernel_tree_commit=" + bad, *tree)
    assert code == 1 and "opens alert #1" in out
    [(alert, _members)] = _alerts(nightly.db)
    assert (alert["good_commit"], alert["bad_commit"]) == (good, bad)
    assert "kernel commit %s -> %s" % (good, bad) in alert["why"]
    mail = _mail(nightly.report_dir)
    assert "\ncommit:    %s -> %s\n" % (good, bad) in mail
    assert "To narrow the kernel range (the tree's commits between the two, each built and " \
        "measured):" in mail
    assert ("tools/perfscale bisect --tree /src/linux --good %s --bad %s --benchmark "
            "'^BM_BreakpointEnable/passive:8/active:0/placement:0' --cpus 2 -- -- "
            "--fixture=" % (good, bad)) in mail  # and the nightly's run arguments


@pytest.mark.parametrize("good,bad,listed", [
    ("6.1.0-27-cloud-amd64", "6.1.0-30-cloud-amd64",
     ["debian:6.1.0-27-cloud", "debian:6.1.0-28-cloud", "debian:6.1.0-29-cloud",
      "debian:6.1.0-30-cloud"]),
    ("6.12.118+deb12-amd64", "6.12.116+deb12-amd64",  # back to an older one: in that order
     ["debian:6.12.118", "debian:6.12.117", "debian:6.12.116"]),
    ("5.10.0-46-rt-amd64", "5.10.0-47-rt-amd64", ["debian:5.10.0-46-rt", "debian:5.10.0-47-rt"]),
    ("6.1.0-27-amd64", "6.12.118+deb12-amd64", None),  # another series: by hand
    ("6.1.0-27-amd64", "6.1.0-28-cloud-amd64", None),  # another flavour
    ("6.1.0-27-amd64", "6.1.0-27-amd64", None),
    ("6.13.0-rc1", "6.13.0", None),
    ("7.1.3+deb13-cloud-amd64", "7.1.8+deb13-cloud-amd64",  # the lines Debian numbers so
     ["debian:7.1.%d-cloud" % n for n in range(3, 9)]),
    ("7.1.13+deb13-amd64", "7.2.6+deb13-amd64", None),  # another line
    ("7.3-cloud-amd64", "7.3.4+deb13-cloud-amd64", None),  # experimental's rc: by hand
    ("", "6.1.0-28-amd64", None)])
def test_the_bisect_list_is_debians_updates_between_the_two_as_vm_names_them(
        good, bad, listed):
    from perfscale.plots import alert_view
    from perfscale.vm import debian
    assert alert_view.debian_kernels(good, bad) == listed
    worst = {"counts": [], "name": "BM_A/real_time", "cpus": 2}
    command = alert_view.bisect_command({"good_kernel": good, "bad_kernel": bad}, worst)
    assert ("--kernels " + ",".join(listed) + " ") in command if listed else "...," in command
    # Each name is one `tools/perfscale vm --kernel` takes: it picks the package of that
    # release (the archive's lists stood in for by the packages of every name listed).
    def package(name):
        found = re.fullmatch(r"debian:([0-9.]+?)(\.0-[0-9]+|\.[0-9]+)(?:-(rt|cloud))?", name)
        line, number, flavour = found.groups()
        release = line + number + ("" if number.startswith(".0-") else "+deb12")
        return "linux-image-%s-%samd64" % (release, flavour + "-" if flavour else "")
    builds = debian.builds_in([package(name) for name in listed or []])
    for name in listed or []:
        assert debian.choose(name, builds).image == package(name)


def test_machines_that_move_at_the_same_change_share_the_alert(nightly):
    for host in ("--host=lab-1", "--host=lab-2"):
        assert nightly("--fixture=base.json", host)[0] == 0
    assert nightly("--fixture=slow.json", "--host=lab-1")[0] == 1
    code, out, _ = nightly("--fixture=slow.json", "--host=lab-2")
    assert code == 1 and "joins alert #1" in out and "opens" not in out
    [(alert, members)] = _alerts(nightly.db)
    assert len(members) == 4 and {m["host"] for m in members} == {"lab-1", "lab-2"}


def test_another_kernel_is_another_alert(nightly):
    assert nightly("--fixture=base.json")[0] == 0
    assert nightly("--fixture=slow.json", "--context=kernel_release=9.9.9")[0] == 1
    [(alert, _)] = _alerts(nightly.db)
    assert alert["bad_kernel"] == "9.9.9" and alert["good_kernel"] != "9.9.9"


def test_an_acknowledged_alert_still_fails_other_regressions(nightly, cli):
    assert nightly("--fixture=base.json")[0] == 0
    assert nightly("--fixture=slow.json")[0] == 1
    with history.open_history(str(nightly.db)) as conn:
        # Only one of the two benchmarks is the accepted step: the other still fails.
        conn.engine.execute("DELETE FROM alert_members WHERE name = ?", (SLOWED[1],))
        alerts.set_state(conn, 1, "acknowledged", "alice", "one of them is known")
    code, out, _ = nightly("--fixture=slow.json")
    assert code == 1
    assert "within alert #1 (acknowledged)" in out
    assert "opens alert #2" in out


def test_invalid_drops_the_alerts_runs_from_every_baseline(nightly):
    assert nightly("--fixture=base.json")[0] == 0
    assert nightly("--fixture=slow.json")[0] == 1
    lineage = None
    with history.open_history(str(nightly.db)) as conn:
        run = history.get_run(conn, 2)
        lineage = (run["host"], run["machine"], run["cpus"], run["config"])
        conn.engine.execute("UPDATE runs SET regressions = 0 WHERE id = 2")  # say it passed
        assert [r["id"] for r in alerts.baseline_rows(conn, lineage, 8)] == [2, 1]
        assert [r["id"] for r in alerts.baseline_rows(conn, lineage, 8, since=2)] == [2]
        alerts.set_state(conn, 1, "invalid", "bob", "the machine was throttled")
        assert [r["id"] for r in alerts.baseline_rows(conn, lineage, 8)] == [1]
        assert alerts.baseline_rows(conn, lineage, 8, since=2) == []


def test_set_follows_the_web_forms_rules(nightly, cli):
    assert nightly("--fixture=base.json")[0] == 0
    assert nightly("--fixture=slow.json")[0] == 1
    code, _, err = cli("alerts", "set", "1", "--state", "fixed", "--who", " ", "--why", "x",
                       "--history", nightly.db)
    assert code == 2 and "say who changes the state and why" in err
    code, _, err = cli("alerts", "set", "7", "--state", "fixed", "--who", "a", "--why", "x",
                       "--history", nightly.db)
    assert code == 2 and "no alert #7" in err
    code, _, err = cli("alerts", "--history", nightly.db.parent / "none.sqlite")
    assert code == 2 and "no history at" in err
    with pytest.raises(triage.TriageError):
        with history.open_history(str(nightly.db)) as conn:
            alerts.set_state(conn, 1, "gone", "a", "b")


def test_a_version_4_history_is_migrated_with_empty_alert_tables(tmp_path, nightly):
    assert nightly("--fixture=base.json")[0] == 0
    with history.open_history(str(nightly.db)) as conn:
        as_schema_5(conn)
    old = sqlite3.connect(nightly.db)
    old.executescript("DROP TABLE alert_log; DROP TABLE alert_members; DROP TABLE alerts; "
                      "PRAGMA user_version = 4;")
    old.close()
    assert nightly("--fixture=slow.json")[0] == 1  # migrated, then opens the alert
    conn = sqlite3.connect(nightly.db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == history.SCHEMA_VERSION == 7
    assert conn.execute("SELECT COUNT(*) FROM alerts").fetchone()[0] == 1
    conn.close()


def test_an_acknowledged_level_returns_when_significantly_faster_by_half_the_step():
    from perfscale.gate import alerting, stats
    member = {"state": "acknowledged", "change": 1.0}  # twice as slow: back is -50%
    same = stats.Verdict("BM_X", stats.SAME, -0.40, 1e-6)
    assert alerting._returned(member, same)  # the gate said "same", the p says otherwise
    assert not alerting._returned(member, stats.Verdict("BM_X", stats.SAME, -0.40, 0.3))
    assert not alerting._returned(member, stats.Verdict("BM_X", stats.FASTER, -0.10, 1e-6))
    assert alerting._returned({"state": "new", "change": 1.0}, stats.Verdict(
        "BM_X", stats.SAME, 0.0, 0.9))  # a new alert: no longer slower than the old level


def test_a_step_no_nightly_flagged_opens_a_changepoint_alert_once(tmp_path, cli):
    import synthetic_history
    path = tmp_path / "h.sqlite"
    # judge=False without alerts: the nightlies recorded "no significant change" on every
    # night of the step but its first; a history from before alerts.
    built = synthetic_history.build(str(path), machines=2, nights=30, benchmarks=2,
                                    step_at=18, hostile=False, calibrate=False, judge=False)
    code, out, err = cli("alerts", "scan", "--history", path)
    assert code == 0, err
    assert "1 changepoint alert(s) opened, 0 joined" in out
    [(alert, [member])] = _alerts(path)
    assert alert["kind"] == "changepoint" and alert["state"] == "new"
    assert member["name"] == built["step"][1] and member["host"] == built["step"][0][0]
    assert member["first_bad_run_id"] == built["runs"][built["step"][0]][18]
    assert 0.10 < member["change"] < 0.20  # the +15% step
    code, out, _ = cli("alerts", "scan", "--history", path)  # covered now: nothing new
    assert code == 0 and "0 changepoint alert(s) opened, 0 joined" in out
