"""The suite-wide gate on synthetic data: Holm, intervals, noise floors, counts,
confirmation and calibration (issue 13). No timing: every input is made up."""

import json
import math
import random
import re

import pytest

from conftest import FAKE_RUN, as_schema_5
from perfscale.gate import stats as results_stats
from perfscale.history import store as history
from perfscale.results import io as results_io, names as results_names
from perfscale.gate import confirm, floors

OPTIONS = results_stats.Options()


def entry(name, times, **counters):
    made = results_io.Entry(name, results_names.parse_name(name))
    made.real_ns = list(times)
    made.cpu_ns = [math.nan] * len(times)
    made.counters = {k.replace("_per_", "/"): list(v) for k, v in counters.items()}
    return made


def noisy(median, spread, seed, n=10):
    rng = random.Random(seed)
    return [median * (1 + rng.uniform(-spread, spread)) for _ in range(n)]


def suite(scale=1.0, benchmarks=25, seed=0, **counters):
    return {"BM_X/%d/real_time" % i: entry("BM_X/%d/real_time" % i,
                                           noisy(1000 * scale, 0.05, seed * 100 + i),
                                           **counters)
            for i in range(benchmarks)}


def test_every_verdict_has_a_bootstrap_interval_of_the_ratio():
    base, new = suite(seed=1), suite(1.3, seed=2)
    for verdict in results_stats.compare_entries(base, new):
        low, high = verdict.ci
        assert low < verdict.change < high
        assert "[95% CI " in verdict.line()


def test_holm_over_the_suite_keeps_a_lone_borderline_p_from_failing_it():
    base, new = suite(seed=3), suite(seed=4)
    name = "BM_X/0/real_time"
    base[name] = entry(name, [100, 101, 102, 103, 104, 105, 106, 107, 108, 109])
    new[name] = entry(name, [105, 106, 107, 108, 109, 110, 111, 112, 113, 114])
    lenient = results_stats.Options(threshold_pct=0.5)
    alone = results_stats.compare_samples(name, base[name].real_ns, new[name].real_ns, lenient)
    assert alone.pvalue < 0.05 and alone.regression  # what the gate did before
    verdicts = results_stats.compare_entries(base, new, lenient)
    judged = {v.name: v for v in verdicts}
    assert judged[name].p_adjusted > 0.05 and not judged[name].regression
    assert results_stats.gate_status(verdicts)[0] == 0


def test_holm_adjustment_matches_the_textbook():
    assert results_stats.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx(
        [0.03, 0.06, 0.06, 0.02])


def calibrated(names, sigma):
    return {(n, results_stats.REAL_TIME): history.Calibration(n, "real_time", 0, 0, sigma, 8)
            for n in names}


def test_a_change_inside_the_noise_between_runs_is_not_a_regression():
    base, new = suite(seed=5), suite(1.25, seed=6)
    assert all(v.verdict == results_stats.SLOWER for v in results_stats.compare_entries(
        base, new, OPTIONS, calibrated(base, 0.01)))
    verdicts = results_stats.compare_entries(base, new, OPTIONS, calibrated(base, 0.1))
    assert not any(v.regression for v in verdicts)
    assert all("within this benchmark's noise between runs" in v.line() for v in verdicts)
    # The floor shown is the change the suite's Holm level needs at this spread, on
    # Student's t: the spread was learned from 8 runs (7 degrees of freedom).
    z = results_stats.quantile(1 - OPTIONS.alpha / len(base), 7)
    assert verdicts[0].noise_floor == pytest.approx(math.expm1(z * 0.1 * math.sqrt(2)))


def test_more_runs_on_either_side_narrow_the_spread_of_the_verdict():
    one = results_stats.between_runs_spread(0.05, 1, 1)
    assert one == pytest.approx(0.05 * math.sqrt(2))
    assert results_stats.between_runs_spread(0.05, 8, 1) < one
    assert results_stats.between_runs_spread(0.05, 8, 5) < results_stats.between_runs_spread(
        0.05, 8, 1)


def test_one_transient_rerun_does_not_carry_the_verdict():
    name = "BM_X/0/real_time"
    base_runs = [{name: entry(name, noisy(1000, 0.02, i))} for i in range(8)]
    new_runs = [{name: entry(name, noisy(1000 * s, 0.02, 50 + i))}
                for i, s in enumerate([1.0, 1.6, 1.0, 0.99, 1.01])]
    (verdict,) = results_stats.compare_runs(base_runs, new_runs, OPTIONS,
                                            calibrated([name], 0.03))
    assert verdict.runs == (8, 5) and not verdict.regression
    assert abs(verdict.change) < 0.03  # the median of the runs, not their mean


def _simulated_night(rng, names, sigma, base_runs, slowdown, rounds):
    """A nightly on a machine whose runs shift by sigma (log), with `slowdown` real."""
    def run(which, scale):
        return {n: entry(n, noisy(1000 * scale * math.exp(rng.gauss(0, sigma)), 0.02,
                                  rng.random())) for n in which}
    base = [run(names, 1.0) for _ in range(base_runs)]
    first = run(names, 1 + slowdown)
    fl = calibrated(names, sigma)
    verdicts = results_stats.compare_runs(base, [first], OPTIONS, fl)
    final = confirm.confirm_suspects(
        lambda which, _p: _results(run(which, 1 + slowdown)), "/nonexistent", base, first,
        verdicts, OPTIONS, fl, rounds=rounds, target=1e-9)
    return [v for v in final if v.regression]


def test_the_gate_keeps_its_promises_on_simulated_nights():
    """What calibrate promises, checked against the process it models: over nights with
    no change at most alpha of them raise an alarm (family-wise), and a slowdown of the
    MDC is flagged 9 times in 10."""
    rng, sigma, names = random.Random(13), 0.03, ["BM_X/%d/real_time" % i for i in range(12)]
    alarms = sum(1 for _ in range(60)
                 if _simulated_night(rng, names, sigma, 8, 0.0, confirm.DEFAULT_ROUNDS))
    assert alarms <= 6  # alpha = 5% family-wise: 3 expected, 6 is far out
    _floor, mdc = floors.floor_and_mdc(sigma, OPTIONS.alpha, len(names), 8,
                                       1 + confirm.DEFAULT_ROUNDS)
    assert 0.05 < mdc < 0.15
    flagged = sum(len(_simulated_night(rng, names, sigma, 8, mdc, confirm.DEFAULT_ROUNDS))
                  for _ in range(10))
    assert flagged >= 0.85 * 10 * len(names)


def test_a_count_that_doubles_is_a_regression_named_with_the_counter_even_in_noise():
    base = {"BM_E/real_time": entry("BM_E/real_time", noisy(1000, 0.6, 7),
                                    ipis_sent_per_op=[8.0] * 10, lock_wait_us_per_op=[0.1] * 10)}
    new = {"BM_E/real_time": entry("BM_E/real_time", noisy(1000, 0.6, 8),
                                   ipis_sent_per_op=[16.0] * 10, lock_wait_us_per_op=[3.2] * 10)}
    (verdict,) = results_stats.compare_entries(base, new)
    assert verdict.verdict == results_stats.COUNTS and verdict.regression
    assert verdict.counter_regressions == ["ipis_sent/op"]  # a time does not gate
    # Each judged count with its interval (of the change of its median), floor and p.
    assert ("ipis_sent/op 8 -> 16 [95% CI +8..+8], floor +2, p=8e-06 (Holm 1.6e-05); "
            "lock_wait_us/op 0.1 -> 3.2") in verdict.line()
    assert results_stats.gate_status([verdict])[0] == 1


def test_page_faults_that_rise_are_shown_but_never_gated():
    base = {"BM_S/manual_time": entry("BM_S/manual_time", [1000] * 10,
                                      page_faults_per_record=[0.025] * 10)}
    new = {"BM_S/manual_time": entry("BM_S/manual_time", [1000] * 10,
                                     page_faults_per_record=[0.079] * 10)}
    (verdict,) = results_stats.compare_entries(base, new)
    assert not verdict.regression and verdict.counter_regressions == []
    assert "page_faults/record 0.025 -> 0.079" in verdict.line()


def test_a_single_outlier_repetition_of_a_count_is_not_a_regression():
    base = {"BM_E/real_time": entry("BM_E/real_time", [1000] * 10, xcalls_per_op=[2.0] * 10)}
    new = {"BM_E/real_time": entry("BM_E/real_time", [1000] * 10,
                                   xcalls_per_op=[2.0] * 9 + [40.0])}
    (verdict,) = results_stats.compare_entries(base, new)
    assert not verdict.regression


def test_a_count_mostly_zero_is_judged_by_its_spread_not_by_its_zero_median():
    # As an A/A trial met it: BreakpointEnable passive:8 other_cpus, a context switch
    # now and then (1 in ~30 ops), 0 per op at the median of 3 of the 4 baseline runs.
    name = "BM_B/passive:8/placement:other_cpus/real_time"
    runs = [{name: entry(name, [1000] * 10, ctx_switches_per_op=[median])}
            for median in (0.0, 0.0, 0.032, 0.0)]
    learned = floors.learn(runs)
    assert learned[(name, "ctx_switches/op")].sigma > 1  # relative to a mean of 0.008

    def judged(values):
        new = {name: entry(name, [1000] * 10, ctx_switches_per_op=values)}
        return results_stats.compare_runs(runs, [new], floors=learned)[0]
    assert not judged([0.069, 0.069, 0.069, 0.034, 0.034, 0.103, 0.034, 0, 0, 0.069]).regression
    # A path that now sleeps once per operation is still a regression, named.
    verdict = judged([1.0] * 10)
    assert verdict.regression and verdict.counter_regressions == ["ctx_switches/op"]


def test_unpinned_rows_are_labelled_the_noisy_variant_wherever_they_are_shown(cli, tmp_path):
    name = "BM_B/passive:8/placement:unpinned/real_time"
    (verdict,) = results_stats.compare_entries({name: entry(name, [1.0] * 10)},
                                               {name: entry(name, [1.0] * 10)})
    assert "[unpinned: the noisy variant]" in verdict.line()
    import json
    from conftest import data
    document = json.loads(open(data("base.json"), encoding="utf-8").read())
    first = document["benchmarks"][0]["run_name"]
    for row in document["benchmarks"]:
        for key in ("name", "run_name"):
            if row.get(key, "").startswith(first):
                row[key] = row[key].replace(first, first + "/placement:unpinned", 1)
    (tmp_path / "unpinned.json").write_text(json.dumps(document))
    code, _out, err = cli("report", tmp_path / "unpinned.json", "-o", tmp_path / "r",
                          "--no-plots")
    assert code == 0, err
    page = (tmp_path / "r" / "report.md").read_text()
    unpinned = [line for line in page.splitlines()
                if line.startswith("| BM_") and "placement:unpinned" in line]
    assert unpinned and all("[unpinned: the noisy variant]" in line for line in unpinned)


def test_floors_learned_from_runs_follow_the_spread_between_runs():
    rng = random.Random(9)
    runs = []
    for _ in range(8):
        shift = math.exp(rng.gauss(0, 0.10))  # a whole run moves, as on a shared VM
        runs.append({"BM_loud": entry("BM_loud", noisy(1000 * shift, 0.01, rng.random())),
                     "BM_calm": entry("BM_calm", noisy(1000, 0.01, rng.random()))})
    learned = floors.learn(runs)
    loud, calm = learned[("BM_loud", "real_time")], learned[("BM_calm", "real_time")]
    assert 0.04 < loud.sigma < 0.25 and calm.sigma < 0.01
    assert calm.noise_floor < calm.mdc < 0.10 < loud.noise_floor < loud.mdc


def test_too_few_runs_teach_nothing():
    runs = [{"BM": entry("BM", [1.0, 1.1])} for _ in range(floors.MIN_RUNS - 1)]
    assert floors.learn(runs) == {}


def _results(entries):
    return results_io.ResultSet("x.json", {}, entries)


def test_confirmation_clears_a_suspect_the_rerun_does_not_repeat(tmp_path):
    base, new = suite(seed=10), suite(seed=11)
    name = "BM_X/3/real_time"
    new[name] = entry(name, noisy(1500, 0.05, 12))
    verdicts = results_stats.compare_entries(base, new)
    assert [v.name for v in verdicts if v.regression] == [name]
    calls = []

    def rerun(names, _path):
        calls.append(names)
        return _results({n: entry(n, noisy(1000, 0.05, 13 + len(calls))) for n in names})
    final = confirm.confirm_suspects(rerun, str(tmp_path), [base], new, verdicts,
                                     OPTIONS, {})
    assert calls == [[name]]  # only the suspect was rerun, once: it resolved
    (judged,) = [v for v in final if v.name == name]
    assert not judged.regression and "suspect not confirmed" in judged.confirmation
    assert judged.repetitions == (10, 20)  # judged on the pooled data


def test_confirmation_keeps_a_real_slowdown_and_says_what_it_reached(tmp_path):
    base, new = suite(seed=20), suite(seed=21)
    name = "BM_X/4/real_time"
    new[name] = entry(name, noisy(1500, 0.05, 22))
    verdicts = results_stats.compare_entries(base, new)
    final = confirm.confirm_suspects(
        lambda names, _p: _results({n: entry(n, noisy(1500, 0.05, 23)) for n in names}),
        str(tmp_path), [base], new, verdicts, OPTIONS, {}, rounds=3, target=0.5)
    (judged,) = [v for v in final if v.name == name]
    assert judged.regression
    assert judged.confirmation.startswith("confirmed (1 rerun(s), interval within the +-50%")


def test_a_failed_confirmation_leaves_the_suspect_standing(tmp_path):
    base, new = suite(seed=30), suite(seed=31)
    name = "BM_X/5/real_time"
    new[name] = entry(name, noisy(1500, 0.05, 32))

    def broken(_names, _path):
        raise confirm.RerunError("the confirmation run failed with exit status 1")
    final = confirm.confirm_suspects(broken, str(tmp_path), [base], new,
                                     results_stats.compare_entries(base, new), OPTIONS, {})
    (judged,) = [v for v in final if v.name == name]
    assert judged.regression and "the suspect stands" in judged.confirmation


def test_nightly_raises_no_alarm_when_the_confirmation_run_is_clean(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("PERFSCALE_BINARY", FAKE_RUN)
    monkeypatch.setenv("PERFSCALE_COMPARE_PY", str(tmp_path / "none.py"))
    common = ("nightly", "--history", tmp_path / "h.sqlite", "--report-dir", tmp_path / "n",
              "--no-plots", "--config", "ci", "--", "--")
    assert cli(*common, "--fixture=base.json")[0] == 0
    code, out, _ = cli(*common, "--fixture=slow.json", "--confirm-fixture=base.json")
    assert code == 0, out
    assert out.count("suspect not confirmed (1 rerun(s), resolved") == 2


def test_the_confirmation_reruns_the_whole_suite(tmp_path, monkeypatch):
    # A benchmark's neighbours are part of what it measures, so the rerun is the suite the
    # baseline runs were; only the suspects are judged on it (confirm_suspects).
    from perfscale.suite import nightly
    asked = []

    def run_suite(command, repetitions, out_path, run_args):
        asked.append(run_args)
        return 1, out_path
    monkeypatch.setattr(nightly, "run_suite", run_suite)
    from perfscale.commands import nightly as nightly_command
    args = nightly_command.parse_args(["--repetitions", "10", "--", "--quick"])[0]
    with pytest.raises(confirm.RerunError, match="exit status 1"):
        nightly._rerun(args, ["--quick"], ["BM_A/real_time"], str(tmp_path / "confirm-1.json"))
    assert asked == [["--quick", "--"]]


def test_calibration_is_stored_per_lineage_and_used_by_nightly(tmp_path):
    conn = history.open_history(str(tmp_path / "h.sqlite"))
    stored = [history.Calibration("BM_A", "real_time", 0.3, 0.5, 0.07, 8, 0.12)]
    history.store_calibration(conn, "host", 2, "ci", stored)
    found, source = floors.for_lineage(conn, "host", 2, "ci")
    assert found[("BM_A", "real_time")].noise_floor == 0.3
    assert source.startswith("tools/perfscale calibrate of ")
    assert floors.for_lineage(conn, "host", 4, "ci") == ({}, "")
    conn.close()


def test_the_history_widens_a_calibration_it_outgrew_and_never_narrows_one(tmp_path,
                                                                            monkeypatch):
    conn = history.open_history(str(tmp_path / "h.sqlite"))
    history.store_calibration(conn, "host", 2, "ci", [
        history.Calibration("BM_drifts", "real_time", 0.05, 0.07, 0.02, 8, 0.12),
        history.Calibration("BM_steady", "real_time", 0.30, 0.50, 0.10, 8, 0.12)])
    monkeypatch.setattr(floors, "from_history", lambda *_args: {
        ("BM_drifts", "real_time"): history.Calibration("BM_drifts", "real_time", 0.15, 0.2,
                                                        0.06, 10),
        ("BM_steady", "real_time"): history.Calibration("BM_steady", "real_time", 0.01, 0.02,
                                                        0.004, 10)})
    found, source = floors.for_lineage(conn, "host", 2, "ci")
    conn.close()
    drifts, steady = found[("BM_drifts", "real_time")], found[("BM_steady", "real_time")]
    assert (drifts.sigma, drifts.noise_floor, drifts.runs) == (0.06, 0.15, 10)
    assert drifts.injected_change == 0.12 and drifts.calibrated_at  # still the calibration's
    assert (steady.sigma, steady.noise_floor) == (0.10, 0.30)  # calibrated, not narrowed
    assert source.startswith("tools/perfscale calibrate of ")
    assert "widened for 1 of 2 metrics that the lineage's last 10 passing runs" in source


# The history as perfscale wrote it at schema version 1 (before runs.complete).
VERSION_1_SCHEMA = """
CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, recorded_at TEXT NOT NULL,
    host TEXT NOT NULL, cpus INTEGER NOT NULL, config TEXT NOT NULL, run_args TEXT NOT NULL,
    repetitions INTEGER NOT NULL, kernel_release TEXT, perf_event_paranoid TEXT,
    perfscale_revision TEXT, context TEXT NOT NULL, results_path TEXT,
    baseline_id INTEGER REFERENCES runs(id), regressions INTEGER NOT NULL);
CREATE INDEX runs_by_lineage ON runs(host, cpus, config, id);
CREATE TABLE benchmarks (run_id INTEGER NOT NULL REFERENCES runs(id), name TEXT NOT NULL,
    time_unit TEXT NOT NULL, counters TEXT NOT NULL, errors TEXT NOT NULL, verdict TEXT,
    change REAL, pvalue REAL, PRIMARY KEY (run_id, name));
CREATE TABLE samples (run_id INTEGER NOT NULL REFERENCES runs(id), name TEXT NOT NULL,
    repetition INTEGER NOT NULL, real_ns REAL NOT NULL, cpu_ns REAL,
    PRIMARY KEY (run_id, name, repetition));
"""


def test_a_version_1_history_is_upgraded_in_place(tmp_path):
    import sqlite3
    path = str(tmp_path / "old.sqlite")
    old = sqlite3.connect(path)
    old.executescript(VERSION_1_SCHEMA + "PRAGMA user_version = 1;")
    old.execute("INSERT INTO runs (recorded_at, host, cpus, config, run_args, repetitions, "
                "context, regressions) VALUES ('t', 'h', 2, 'ci', '[]', 10, '{}', 0)")
    old.commit()
    old.close()
    conn = history.open_history(path)
    assert history.find_baseline(conn, "h", 2, "ci")["id"] == 1  # old runs were whole
    assert history.load_calibration(conn, "h", 2, "ci") == {}
    conn.close()


def test_calibrate_stores_floors_that_nightly_then_uses(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("PERFSCALE_BINARY", FAKE_RUN)
    db = tmp_path / "h.sqlite"
    code, out, _ = cli("calibrate", "--runs", "4", "--no-inject", "--history", db,
                       "--out-dir", tmp_path / "cal", "--config", "ci", "--", "--",
                       "--fixture=base.json")
    assert code == 0, out
    assert "can detect a 10% slowdown (MDC <= 10%)" in out
    assert re.search(r"^BM_\w+: smallest MDC [+-]\d", out, re.M)  # what each family can see
    conn = history.open_history(str(db))
    [(host, cpus, machine)] = history.calibrated_lineages(conn, "ci")
    assert (host, cpus) == ("perfscale-ci-1", 2) and machine  # this machine's identity
    stored = history.load_calibration(conn, "perfscale-ci-1", 2, "ci", machine)
    conn.close()
    assert stored and all(c.runs == 4 for c in stored.values())
    monkeypatch.setenv("PERFSCALE_COMPARE_PY", str(tmp_path / "none.py"))
    code, out, _ = cli("nightly", "--history", db, "--report-dir", tmp_path / "n", "--no-plots",
                       "--config", "ci", "--", "--", "--fixture=base.json")
    assert code == 0, out
    assert "nightly: noise floors: tools/perfscale calibrate of " in out


def test_calibrate_refuses_too_few_runs(cli, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli("calibrate", "--runs", "2")
    assert exit_info.value.code == 2
    assert "--runs must be at least" in capsys.readouterr().err


def test_report_prints_the_calibration_of_the_host(cli, tmp_path):
    db = str(tmp_path / "h.sqlite")
    conn = history.open_history(db)
    history.store_calibration(conn, "perfscale-ci-1", 2, "quick", [
        history.Calibration("BM_A/placement:same_cpu/real_time", "real_time", 0.08, 0.09,
                            0.02, 8, 0.15)])
    conn.close()
    from conftest import data
    code, out, err = cli("report", data("base.json"), "-o", tmp_path / "r", "--no-plots",
                         "--history", db)
    assert code == 0, err
    page = (tmp_path / "r" / "report.md").read_text()
    assert "Gate calibration" in page and "Config 'quick'" in page
    assert "| BM_A/placement:same_cpu/real_time | 2.0% | +8.0% | +9.0% | +15.0% |" in page


def test_trials_refuse_an_uncalibrated_config(cli, tmp_path):
    history.open_history(str(tmp_path / "h.sqlite")).close()
    code, _out, err = cli("trials", "--history", tmp_path / "h.sqlite", "--out-dir",
                          tmp_path / "t", "--config", "ci")
    assert code == 2 and "is not calibrated" in err and "tools/perfscale calibrate" in err
    code, _out, err = cli("trials", "--history", tmp_path / "none.sqlite", "--out-dir",
                          tmp_path / "t", "--config", "ci")
    assert code == 2 and "no such history" in err  # and none made there
    assert not (tmp_path / "none.sqlite").exists()


def _calibrated_fake_suite(cli, tmp_path, monkeypatch, *config, out_dir="cal"):
    """The fake suite as trials run it, calibrated in tmp_path/h.sqlite; returns its path.
    Its injected runs say what a real binary's injector measured (fake_run.FAKE_INJECTOR)."""
    monkeypatch.setenv("PERFSCALE_RUN_CMD", FAKE_RUN)
    monkeypatch.setenv("PERFSCALE_COMPARE_PY", str(tmp_path / "none.py"))
    db = tmp_path / "h.sqlite"
    assert cli("calibrate", "--runs", "4", "--no-inject", "--history", db, "--out-dir",
               tmp_path / out_dir, *config, "--", "--fixture=base.json")[0] == 0
    return db


def test_trials_run_nightlies_on_copies_and_report_false_alarms_and_power(
        cli, tmp_path, monkeypatch):
    db = _calibrated_fake_suite(cli, tmp_path, monkeypatch, "--config", "ci")
    before = db.read_bytes()
    code, out, _ = cli("trials", "--aa", "2", "--power", "1", "--inject-events", "1",
                       "--history", db, "--out-dir", tmp_path / "t", "--config", "ci", "--",
                       "--fixture=base.json")
    assert code == 0, out
    assert "A/A nightlies (no change): 0 of 2 exited 1" in out
    assert "nightlies with the injector on (1 events): 0 of 1 exited 1" in out
    assert "| trial | exit | flagged |" in out and "| benchmark | MDC |" in out
    assert db.read_bytes() == before  # each trial had its own copy
    assert sorted(p.name for p in (tmp_path / "t").iterdir() if p.is_dir()) == [
        "aa-1", "aa-2", "power-1"]
    code, out, _ = cli("trials", "--aa", "3", "--power", "3", "--inject-events", "1",
                       "--budget", "0.001", "--history", db, "--out-dir", tmp_path / "t2",
                       "--config", "ci", "--", "--fixture=base.json")
    assert code == 0, out
    assert "budget is spent: 1 A/A and 0 injected trials ran" in out


def test_trials_read_an_older_history_without_migrating_it(cli, tmp_path, monkeypatch):
    """Trials only read the calibrated history (each trial's nightly writes a copy), and
    their records are keyed by its digest: a newer checkout must not migrate it."""
    db = _calibrated_fake_suite(cli, tmp_path, monkeypatch, "--config", "ci")
    with history.open_history(str(db)) as conn:
        as_schema_5(conn)
    before = db.read_bytes()
    code, _out, err = cli("trials", "--aa", "1", "--power", "0", "--history", db,
                          "--out-dir", tmp_path / "t", "--config", "ci", "--",
                          "--fixture=base.json")
    assert code == 2 and "schema 5" in err and "open it once" in err
    assert db.read_bytes() == before


def test_trials_find_a_calibration_named_by_its_run_arguments(cli, tmp_path, monkeypatch):
    # Without --config both name the lineage by the run arguments, here "--fixture=base.json":
    # a name that starts with "--" must reach each trial's nightly as its config.
    db = _calibrated_fake_suite(cli, tmp_path, monkeypatch)
    code, out, _ = cli("trials", "--aa", "1", "--power", "0", "--history", db, "--out-dir",
                       tmp_path / "t", "--", "--fixture=base.json")
    assert code == 0, out
    assert "A/A nightlies (no change): 0 of 1 exited 1" in out


def test_trials_resume_keeps_finished_trials_of_the_same_history_only(cli, tmp_path,
                                                                       monkeypatch):
    db = _calibrated_fake_suite(cli, tmp_path, monkeypatch, "--config", "ci")
    trials = ["trials", "--inject-events", "1", "--history", db, "--out-dir", tmp_path / "t",
              "--config", "ci"]
    assert cli(*trials, "--aa", "1", "--power", "0", "--", "--fixture=base.json")[0] == 0
    first = (tmp_path / "t" / "aa-1" / "trial.json").read_text()
    code, out, _ = cli(*trials, "--aa", "2", "--power", "1", "--resume", "--",
                       "--fixture=base.json")
    assert code == 0, out
    assert "trials: aa 1: kept from an earlier run: exit 0" in out
    assert "trials: aa 2: exit 0" in out and "trials: power 1: exit 0" in out
    assert "A/A nightlies (no change): 0 of 2 exited 1" in out
    assert (tmp_path / "t" / "aa-1" / "trial.json").read_text() == first  # not rerun
    # Each injected run measured its injector's cost (its context), and the sizes use it.
    record_path = tmp_path / "t" / "power-1" / "trial.json"
    record = json.loads(record_path.read_text())
    assert record["injector_ns"] and all(c == 1000.0 for c in record["injector_ns"])
    assert "injector cost over the 1 injected trials: 1000 ns" in out
    del record["injector_ns"]  # as trials before the measurement per trial left them
    record_path.write_text(json.dumps(record))
    code, out, _ = cli(*trials, "--aa", "1", "--power", "1", "--resume", "--",
                       "--fixture=base.json")
    assert code == 2 and "the 1 injected trials recorded no injector cost" in out
    assert "could not be checked without the true sizes" in out
    # A trial judged against another calibration is refused, not mixed in.
    _calibrated_fake_suite(cli, tmp_path, monkeypatch, "--config", "ci", out_dir="cal2")
    code, _out, err = cli(*trials, "--aa", "2", "--power", "1", "--resume", "--",
                          "--fixture=base.json")
    assert code == 2 and "judged against another history" in err
    (tmp_path / "t" / "aa-1" / "trial.json").write_text("{")
    code, _out, err = cli(*trials, "--aa", "1", "--power", "0", "--resume", "--",
                          "--fixture=base.json")
    assert code == 2 and "is not a trial record" in err


def test_trials_say_where_the_a_a_trials_spread_more_than_calibrated():
    import argparse
    from perfscale.suite import trials
    steady = "BM_A/placement:same_cpu/real_time"
    drifting = "BM_B/placement:same_cpu/real_time"
    calibration = {(n, results_stats.REAL_TIME): history.Calibration(
        n, results_stats.REAL_TIME, 0.05, 0.06, 0.02, 8) for n in (steady, drifting)}
    outcomes = {"aa": [(0, [])] * 4, "power": [(1, [steady])]}
    text = trials.format_tables(outcomes, calibration, {steady: 0.12},
                                argparse.Namespace(inject_events=1),
                                {steady: 0.025, drifting: 0.08})
    assert "| BM_A/placement:same_cpu/real_time | +6.0% | 2.0%, 2.5% | +12.0% | 1 of 1 | yes |" \
        in text
    assert "| 2.0%, 8.0% (underestimated: MDC +21.7% at that spread) | - | 0 of 1 | no |" in text
    assert "spread more than 1.5x the calibrated sigma on 1 benchmark(s)" in text
    # Twice a tiny sigma (the instruction clock's) promises the same MDC: not a warning.
    exact = {(steady, results_stats.REAL_TIME): history.Calibration(
        steady, results_stats.REAL_TIME, 0.0003, 0.05, 0.0001, 8)}
    text = trials.format_tables(outcomes, exact, {}, argparse.Namespace(inject_events=1),
                                {steady: 0.0002})
    assert "| +5.0% | 0.01%, 0.02% | - | 1 of 1 | no |" in text
    assert "underestimated" not in text and "calibrated sigma" not in text
    assert "calibrated sigma" not in trials.format_tables(
        outcomes, calibration, {}, argparse.Namespace(inject_events=1), {steady: 0.02})
    # A replay that left trials out numbers the rest as they were run.
    replayed = trials.format_tables({"aa": [(0, []), (1, [steady])], "power": []},
                                    calibration, {}, argparse.Namespace(inject_events=1),
                                    numbers={"aa": [2, 5], "power": []})
    assert "| 2 | 0 | - |" in replayed and "| 5 | 1 | %s |" % steady in replayed


def test_the_a_a_spread_skips_a_trial_without_usable_results(tmp_path, capsys):
    import argparse
    import shutil as sh
    from conftest import data
    from perfscale.suite import trials
    for index in range(1, 6):
        run = tmp_path / ("aa-%d" % index) / "20261201T000000Z"
        run.mkdir(parents=True)
        if index == 3:
            (run / "results.json").write_text("{not json")
        else:
            sh.copyfile(data("base.json"), run / "results.json")
    spread = trials.aa_spread(argparse.Namespace(out_dir=str(tmp_path)), 5)
    assert spread and all(sigma == 0 for sigma in spread.values())  # 4 identical runs
    assert "A/A trial 3 left no usable results" in capsys.readouterr().out


def test_trials_end_cleanly_when_the_injector_fails_midway(cli, tmp_path, monkeypatch):
    db = _calibrated_fake_suite(cli, tmp_path, monkeypatch, "--config", "ci")
    # The binary refuses the injector's events (say, the guest's kernel lacks them).
    code, _out, err = cli("trials", "--aa", "1", "--power", "1", "--inject-events", "1",
                          "--history", db, "--out-dir", tmp_path / "t", "--config", "ci",
                          "--", "--fixture=base.json", "--refuse-injection")
    assert code == 2 and "power 1: the injected nightly ran no injected run (exit 2" in err
    assert (tmp_path / "t" / "aa-1" / "trial.json").exists()
    assert not (tmp_path / "t" / "power-1" / "trial.json").exists()  # runs again on --resume
    log = (tmp_path / "t" / "power-1" / "nightly.log").read_text()
    assert "--inject_syscall_events: system-wide tracepoint events refused" in log


def test_injected_runs_carry_the_injector_flag_to_the_binary(cli, tmp_path, monkeypatch):
    from perfscale.suite import inject
    assert inject.injected_run_args(["--quick"], 40) == [
        "--quick", "--", "--inject_syscall_events=40"]
    assert inject.injected_run_args(["--quick", "--", "--attribution=false"], 2) == [
        "--quick", "--", "--attribution=false", "--inject_syscall_events=2"]
    monkeypatch.setenv("PERFSCALE_RUN_CMD", FAKE_RUN)
    db = tmp_path / "h.sqlite"
    code, out, _ = cli("calibrate", "--runs", "4", "--inject-events", "3", "--history", db,
                       "--out-dir", tmp_path / "cal", "--config", "ci", "--",
                       "--fixture=base.json")
    assert code == 0, out
    assert "calibrate: injector: 1 counting events per CPU on raw_syscalls:sys_enter" in out
    assert "getppid() 150 -> 1150 ns, +1000 ns per syscall (bare loop)" in out
    injected = results_io.load_results(str(next((tmp_path / "cal").glob("*/injected.json"))))
    assert inject.run_cost(injected) == 1000.0
    aa = results_io.load_results(str(next((tmp_path / "cal").glob("*/aa-1.json"))))
    assert inject.run_cost(aa) is None  # no injector in the runs with no change
    conn = history.open_history(str(db))
    stored = history.load_calibration(conn, "perfscale-ci-1", 2, "ci")
    conn.close()
    assert all(c.injected_change is not None for (_n, m), c in stored.items()
               if m == results_stats.REAL_TIME)


def test_trials_replay_judges_the_recorded_runs_again_and_runs_nothing(cli, tmp_path,
                                                                        monkeypatch):
    db = _calibrated_fake_suite(cli, tmp_path, monkeypatch, "--config", "ci")
    trials = ["trials", "--aa", "2", "--power", "1", "--inject-events", "1", "--history", db,
              "--out-dir", tmp_path / "t", "--config", "ci"]
    code, ran, _ = cli(*trials, "--", "--fixture=base.json")
    assert code == 0, ran
    before = sorted(str(p) for p in (tmp_path / "t").rglob("*"))
    # Nothing may run: a runner that would fail, and no injector.
    monkeypatch.setenv("PERFSCALE_RUN_CMD", "false")
    from perfscale.suite import inject

    def no_injector(*_args, **_kwargs):
        raise AssertionError("a replay started the injector")
    monkeypatch.setattr(inject, "refusal_here", no_injector)
    code, out, _ = cli(*trials, "--replay", "--", "--fixture=base.json")
    assert code == 0, out
    assert "trials: replay of aa 1: exit 0 (recorded 0), flagged 0 (recorded 0)" in out
    assert "trials: replay of power 1: exit 0 (recorded 0)" in out
    assert "replayed: the runs the trials recorded, judged by this checkout's gate" in out
    table = ran[ran.index("A/A nightlies"):]
    assert out[out.index("A/A nightlies"):] == table  # the same tables as the trials printed
    assert sorted(str(p) for p in (tmp_path / "t").rglob("*")) == before


def test_trials_replay_leaves_out_a_trial_that_needs_an_unrecorded_rerun(cli, tmp_path,
                                                                         monkeypatch):
    db = _calibrated_fake_suite(cli, tmp_path, monkeypatch, "--config", "ci")
    trials = ["trials", "--aa", "2", "--power", "0", "--history", db, "--out-dir",
              tmp_path / "t", "--config", "ci"]
    assert cli(*trials, "--", "--fixture=base.json")[0] == 0
    # A gate that suspects everything asks for a rerun these calm trials never made.
    monkeypatch.setattr(confirm, "is_suspect", lambda _verdict: True)
    run_dir = next((tmp_path / "t" / "aa-2").glob("*/results.json")).parent
    (run_dir / "confirm-1.json").write_text("{")  # a recorded rerun, damaged since
    code, out, err = cli(*trials, "--replay", "--", "--fixture=base.json")
    assert code == 2
    assert ("not replayed: aa 1 (the gate asked for confirm-1.json, which the trial did not "
            "record); aa 2 (the trial's confirm-1.json is unreadable: ") in out
    assert "no trial in %s could be replayed" % (tmp_path / "t") in err
    with pytest.raises(SystemExit):
        cli(*trials, "--replay", "--resume")


def test_trials_without_true_sizes_cannot_call_the_power_promise_kept(capsys):
    from perfscale.suite import trials
    steady = "BM_A/placement:same_cpu/real_time"
    calibration = {(steady, results_stats.REAL_TIME): history.Calibration(
        steady, results_stats.REAL_TIME, 0.05, 0.06, 0.02, 8)}
    outcomes = {"aa": [(0, [])] * 4, "power": [(1, [steady])]}
    assert trials.exit_status(outcomes, calibration, {steady: 0.12}) == 0
    assert trials.exit_status(outcomes, calibration, {}) == 2
    assert "could not be checked without the true sizes" in capsys.readouterr().out
    assert trials.exit_status({"aa": [(1, [steady])] * 4, "power": []}, calibration, {}) == 1


def test_calibrate_over_a_stretch_spaces_the_runs_and_can_be_interrupted(cli, tmp_path,
                                                                         monkeypatch):
    from perfscale.suite import calibrate
    monkeypatch.setenv("PERFSCALE_BINARY", FAKE_RUN)

    class Clock:
        """calibrate's clock in virtual seconds: a run costs RUN_S and a sleep exactly what
        was asked, so the schedule is checked exactly, however loaded the machine is."""
        RUN_S = 0.25
        now = 0.0

        def monotonic(self):
            return self.now

        def sleep(self, seconds):
            self.now += seconds
    clock, starts, slept = Clock(), [], []
    monkeypatch.setattr(calibrate, "time", clock)
    running = calibrate._run

    def timed_run(*args):
        starts.append(clock.now)
        result = running(*args)
        clock.now += clock.RUN_S
        return result
    monkeypatch.setattr(calibrate, "_run", timed_run)
    db = tmp_path / "h.sqlite"
    argv = ["calibrate", "--runs", "4", "--no-inject", "--over", "8", "--history", db,
            "--out-dir", tmp_path / "cal", "--config", "ci", "--", "--", "--fixture=base.json"]
    code, out, _ = cli(*argv)
    assert code == 0, out
    # Each run takes under its 2 s share, so each later one waits for its turn.
    assert starts == [0.0, 2.0, 4.0, 6.0]
    assert "calibrate: run 4 of 4 starts at +0:00:06 (--over 0:00:08); idle until then" in out
    assert "calibrate: the runs spanned 0:00:06" in out

    def interrupted(seconds):
        slept.append(seconds)
        raise KeyboardInterrupt
    monkeypatch.setattr(clock, "sleep", interrupted)
    db2 = tmp_path / "h2.sqlite"
    code, _out, err = cli(*[db2 if a == db else a for a in argv])
    assert code == 130 and slept and "calibrate: interrupted; nothing stored" in err
    conn = history.open_history(str(db2))
    assert not history.load_calibration(conn, "perfscale-ci-1", 2, "ci")
    conn.close()


@pytest.mark.parametrize("over", ["0", "-5", "nan", "inf"])
def test_calibrate_refuses_a_stretch_that_is_not_a_duration(cli, capsys, over):
    with pytest.raises(SystemExit) as exit_info:
        cli("calibrate", "--over", over)
    assert exit_info.value.code == 2
    assert "--over must be a positive number of seconds" in capsys.readouterr().err


def test_true_sizes_count_every_op_of_an_iteration():
    # BM_BreakpointThread's iteration is many thread create+joins, and its syscalls/op and
    # usecs/op are per thread: the true size counts the iteration's ops from its times
    # (it was taken as 1 op, which put a +16% slowdown at +0.1%).
    from perfscale.suite import trials
    from perfscale.results.io import Entry
    from perfscale.results import names as names_module
    thread = "BM_BreakpointThread/breakpoints:0/parallelism:2/threads:20/real_time"
    fd = "BM_EventOpen/strategy:parallel/events:100/cpus:2/manual_time"

    def entry(name, real_ns, **counters):
        return Entry(name, names_module.parse_name(name), real_ns=list(real_ns),
                     counters={k.replace("_per_", "/"): list(v) for k, v in counters.items()})
    counted = results_io.ResultSet("count.json", {}, {
        thread: entry(thread, [23.0e6, 23.2e6], syscalls_per_op=[13.0, 13.0],
                      usecs_per_op=[115.0, 116.0]),
        fd: entry(fd, [8.5e6], syscalls_per_fd=[1.1], fds=[200.0], usecs_per_fd=[42.5])})
    base = [{thread: entry(thread, [20.0e6]), fd: entry(fd, [8.0e6])}]
    sizes = trials.sizes_per_ns(counted, base)
    assert sizes[thread] == pytest.approx(13 * 200 / 20.0e6)
    assert sizes[fd] == pytest.approx(1.1 * 200 / 8.0e6)


def test_calibrate_names_the_families_the_host_hides_a_10_percent_slowdown_from():
    from perfscale.suite import calibrate

    def calibration(name, mdc):
        return (name, results_stats.REAL_TIME), history.Calibration(
            name, results_stats.REAL_TIME, mdc / 2, mdc, mdc / 3, 8)
    learned = dict([calibration("BM_EventOpen/strategy:parallel/real_time", 0.064),
                    calibration("BM_EventOpen/strategy:cpu_major/real_time", 0.20),
                    calibration("BM_Synthesize/workers:1/real_time", 0.166),
                    calibration("BM_BreakpointThread/breakpoints:0/real_time", 0.58)])
    hint = calibrate.clock_hint(learned, "real")
    assert hint.startswith("2 of 3 families have no benchmark that can detect a 10% slowdown "
                           "on this host (BM_BreakpointThread, BM_Synthesize)")
    assert "--guest KERNEL" in hint and "instruction clock" in hint
    assert calibrate.clock_hint(learned, "instructions") == ""  # already there
    assert calibrate.clock_hint(dict([calibration("BM_A/real_time", 0.05)]), "real") == ""


def _samples(rng, kind, n):
    """Timings of the kinds the gate meets: spread, tied (coarse counts), all equal."""
    if kind == 0:
        return [rng.lognormvariate(0, 0.1) for _ in range(n)]
    if kind == 1:
        return [float(rng.randrange(4)) for _ in range(n)]
    return [2.0] * n


def test_the_u_test_is_scipys_to_the_last_bits():
    from scipy.stats import mannwhitneyu
    rng = random.Random(3)
    for trial in range(600):
        x = _samples(rng, trial % 3, rng.randrange(1, 40))
        y = _samples(rng, (trial // 3) % 3, rng.randrange(1, 40))
        if trial % 7 == 0:
            y = [v * 1.5 for v in y]  # far apart: p in the tail
        for alternative in ("two-sided", "greater", "less"):
            theirs = float(mannwhitneyu(x, y, alternative=alternative).pvalue)
            ours = results_stats.u_test(x, y, alternative)
            assert ours == pytest.approx(theirs, rel=1e-12, abs=1e-300) or (
                math.isnan(ours) and math.isnan(theirs)), (x, y, alternative)


def test_the_bootstrap_medians_are_numpys_to_the_bit():
    import numpy
    rng = random.Random(4)
    for trial in range(300):
        values = _samples(rng, trial % 3, rng.randrange(1, 60))
        if trial % 50 == 0:
            values[0] = math.nan  # numpy's own way then
        seed = rng.randrange(1 << 30)
        array = numpy.asarray(values)
        expected = numpy.median(array[numpy.random.default_rng(seed).integers(
            0, len(values), (500, len(values)))], 1)
        found = results_stats.resampled_medians(values, numpy.random.default_rng(seed), 500)
        assert numpy.array_equal(found, expected, equal_nan=True), values


def test_floors_are_learned_once_from_the_same_runs_and_again_from_new_ones(tmp_path,
                                                                             monkeypatch):
    learned = []
    real_learn = floors.learn
    monkeypatch.setattr(floors, "learn", lambda runs, alpha: learned.append(len(runs)) or
                        real_learn(runs, alpha))
    conn = history.open_history(str(tmp_path / "h.sqlite"))
    try:
        def night(seed):
            entries = suite(benchmarks=3, seed=seed)
            results = results_io.ResultSet("", {"host_name": "host", "num_cpus": 2}, entries)
            info = history.RunInfo("host", 2, "ci", ["--"], 10, results.context)
            history.record_run(conn, info, results, [], None, complete=True)
        for seed in range(5):
            night(seed)
        first = floors.for_lineage(conn, "host", 2, "ci")
        assert floors.for_lineage(conn, "host", 2, "ci") == first
        assert learned == [5]  # the second time from what the first learned
        night(5)  # a new passing run: learned again, from the six
        assert floors.for_lineage(conn, "host", 2, "ci")[0] != first[0]
        assert learned == [5, 6]
    finally:
        conn.close()


def test_the_interval_percentiles_are_numpys_to_the_bit():
    import numpy
    rng = random.Random(5)
    for trial in range(1000):
        values = _samples(rng, trial % 3, rng.randrange(1, 2100))
        if trial % 100 == 0:
            values[-1] = math.nan  # numpy's own way then
        qs = (2.5, 97.5) if trial % 2 else (rng.uniform(0, 100), 0.0, 50.0, 100.0)
        expected = [float(v) for v in numpy.percentile(values, list(qs))]
        found = results_stats.percentiles(values, qs)
        assert found == expected or all(math.isnan(v) for v in found + expected), values
