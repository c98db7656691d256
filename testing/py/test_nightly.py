"""`tools/perfscale nightly` with a fake binary that copies recorded results."""

import os
import re
import sqlite3

import pytest

from conftest import FAKE_RUN
from perfscale.history import runs as history_runs, store as history

SLOWED = ("BM_BreakpointEnable/passive:8/active:0/placement:0/real_time",
          "BM_BreakpointThread/breakpoints:4/parallelism:2/threads:20/real_time")


@pytest.fixture
def nightly(cli, tmp_path, monkeypatch):
    """nightly with the fake binary, a private history and report folder; the arguments
    are the fake's flags (after run's --).

    compare.py's table is left out (PERFSCALE_COMPARE_PY points nowhere) except where a
    test asks for it: it costs a second of scipy start-up per call.
    """
    monkeypatch.setenv("PERFSCALE_BINARY", FAKE_RUN)
    monkeypatch.setenv("PERFSCALE_COMPARE_PY", str(tmp_path / "no-compare.py"))
    db = tmp_path / "history.sqlite"

    def run(*run_args, options=("--no-plots",)):
        return cli("nightly", "--history", db, "--report-dir", tmp_path / "nightly",
                   *options, "--", "--", *run_args)
    run.db = db
    run.report_dir = tmp_path / "nightly"
    # RUN_ARGS as given, not as the fake's flags
    run.cli_raw = lambda *run_args: cli("nightly", "--history", db, "--report-dir",
                                        tmp_path / "nightly", "--", *run_args)
    return run


def runs(db):
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT id, host, cpus, config, baseline_id, regressions "
                            "FROM runs ORDER BY id").fetchall()
    finally:
        conn.close()


def test_two_clean_runs_pass(nightly):
    code, out, _ = nightly("--fixture=base.json", options=("--no-plots", "--config", "ci"))
    assert code == 0
    assert "no baseline yet for host perfscale-ci-1, 2 CPUs, config 'ci'" in out
    code, out, _ = nightly("--fixture=clean.json", options=("--no-plots", "--config", "ci"))
    assert code == 0
    assert "no regression against run 1" in out
    assert runs(nightly.db) == [(1, "perfscale-ci-1", 2, "ci", None, 0),
                                (2, "perfscale-ci-1", 2, "ci", 1, 0)]


def test_induced_slowdown_fails_and_names_the_benchmarks(nightly):
    assert nightly("--fixture=base.json", options=("--config", "ci", "--no-plots"))[0] == 0
    code, out, _ = nightly("--fixture=slow.json", options=("--config", "ci"))
    assert code == 1
    summary = out.strip().splitlines()[-1]
    assert summary.startswith("nightly: REGRESSION against run 1: 2 benchmark(s) slower:")
    assert all(name in summary for name in SLOWED)
    folder = max(nightly.report_dir.iterdir())
    page = (folder / "nightly.md").read_text()
    assert "REGRESSION (2 slower)" in page and "--baseline 2" in page
    assert all((folder / ("trend-%s.png" % name.replace("/", "_").replace(":", "_"))).exists()
               for name in SLOWED)
    assert (folder / "nightly.html").exists() and (folder / "verdicts.json").exists()
    mail = (folder / "regression-mail.txt").read_text()
    assert "%stddev" in mail and "%change" in mail
    assert all("%s.real_time_ns" % name in mail for name in SLOWED)
    assert "tools/perfscale nightly --history" in mail and "--baseline 1" in mail


def test_config_defaults_to_the_run_arguments(nightly):
    nightly("--fixture=base.json")
    # Other run arguments are another config: no baseline, even on the same host.
    code, out, _ = nightly("--fixture=slow.json")
    assert code == 0 and "no baseline yet" in out
    assert [r[3] for r in runs(nightly.db)] == ["-- --fixture=base.json",
                                                "-- --fixture=slow.json"]


@pytest.mark.parametrize("failure,message", [("--fail", "the run failed with exit status 1"),
                                             ("--truncate", "truncated JSON")])
def test_a_failed_run_is_not_recorded_and_the_baseline_stays(nightly, failure, message):
    options = ("--config", "ci", "--no-plots")
    nightly("--fixture=base.json", options=options)
    before = open(nightly.db, "rb").read()
    code, _, err = nightly("--fixture=clean.json", failure, options=options)
    assert code == 2
    assert message in err and "nothing recorded" in err
    assert open(nightly.db, "rb").read() == before
    code, out, _ = nightly("--fixture=clean.json", options=options)
    assert code == 0 and "no regression against run 1" in out


def test_other_hosts_and_cpu_counts_are_never_compared(nightly):
    options = ("--config", "ci", "--no-plots")
    nightly("--fixture=base.json", options=options)
    code, out, _ = nightly("--fixture=slow.json", "--host=perfscale-ci-2", options=options)
    assert code == 0 and "no baseline yet for host perfscale-ci-2" in out
    code, out, _ = nightly("--fixture=slow.json", "--cpus=4", options=options)
    assert code == 0 and "no baseline yet for host perfscale-ci-1, 4 CPUs" in out
    # Naming a run of another machine is refused, not compared.
    code, _, err = nightly("--fixture=slow.json", "--cpus=4",
                           options=options + ("--baseline", "1"))
    assert code == 2 and "never compared" in err
    assert len(runs(nightly.db)) == 3


def test_a_regressed_run_is_no_baseline_until_accepted(nightly):
    options = ("--config", "ci", "--no-plots")
    nightly("--fixture=base.json", options=options)
    assert nightly("--fixture=slow.json", options=options)[0] == 1
    # Still slow tomorrow: still compared with the good run 1, so still failing.
    code, out, _ = nightly("--fixture=slow.json", options=options)
    assert code == 1 and "against run 1" in out
    # Accepting run 2 explicitly makes the slow figures the new normal.
    code, out, _ = nightly("--fixture=slow.json", options=options + ("--baseline", "2"))
    assert code == 0 and "no regression against run 2" in out
    code, out, _ = nightly("--fixture=slow.json", options=options)
    assert code == 0 and "no regression against run 4" in out


def test_unknown_baseline_exits_2_before_running(nightly):
    code, out, err = nightly("--fixture=base.json", options=("--baseline", "7"))
    assert code == 2 and "no run 7 in" in err
    assert "running" not in out


def test_a_file_that_is_not_a_history_is_left_alone(nightly):
    nightly.db.write_text("this is not SQLite\n" * 100)
    code, _, err = nightly("--fixture=base.json")
    assert code == 2 and "not an SQLite file, so not a history" in err
    assert nightly.db.read_text() == "this is not SQLite\n" * 100


def test_compare_py_table_goes_into_the_report_even_without_the_baseline_file(nightly, monkeypatch):
    if not os.path.exists("/usr/share/benchmark/compare.py"):
        pytest.skip("libbenchmark-tools not installed")
    monkeypatch.delenv("PERFSCALE_COMPARE_PY")
    options = ("--config", "ci", "--no-plots")
    nightly("--fixture=base.json", options=options)
    # The baseline's file is gone (cleaned up results/): compare.py gets it from the history.
    os.remove(next(nightly.report_dir.iterdir()) / "results.json")
    assert nightly("--fixture=slow.json", options=options)[0] == 1
    page = (max(nightly.report_dir.iterdir()) / "nightly.md").read_text()
    assert "U Test, Repetitions: 10 vs 10" in page
    assert "real_time_median" in page and "compare.py failed" not in page


def test_the_history_survives_a_write_that_fails_halfway(tmp_path, monkeypatch):
    from perfscale.results import io as results_io
    conn = history.open_history(str(tmp_path / "h.sqlite"))
    results = results_io.load_results(os.path.join(os.path.dirname(__file__), "data",
                                                   "base.json"))
    info = history.RunInfo.from_results(results, "ci", [], 10)
    history.record_run(conn, info, results, [], None)

    def explode(_values):
        raise RuntimeError("disk gone")
    monkeypatch.setattr(history_runs.statistics, "median", explode)  # after the runs row
    with pytest.raises(RuntimeError):
        history.record_run(conn, info, results, [], None)
    counts = history.counts(conn)
    assert [counts[t] for t in ("runs", "benchmarks", "samples")] == [
        1, len(results.entries), sum(len(e.real_ns) for e in results.entries.values())]
    assert conn.engine.check() == []


def test_a_run_rebuilt_from_the_history_has_the_same_medians(tmp_path):
    from perfscale.results import io as results_io
    conn = history.open_history(str(tmp_path / "h.sqlite"))
    results = results_io.load_results(os.path.join(os.path.dirname(__file__), "data",
                                                   "base.json"))
    run_id = history.record_run(conn, history.RunInfo.from_results(results, "ci", [], 10),
                                results, [], None)
    rebuilt = results_io.parse_results(results_io.dumps(history.as_results_document(conn, run_id)))
    timed = {n: e for n, e in results.entries.items() if e.real_ns}
    assert set(rebuilt.entries) == set(timed)
    for name, entry in timed.items():
        assert rebuilt.entries[name].real_ns == pytest.approx(entry.real_ns)


def test_an_external_runner_gets_runs_options(cli, tmp_path, monkeypatch):
    # --run-cmd (e.g. `tools/perfscale vm ... -- run`): run's options, its results line.
    monkeypatch.setenv("PERFSCALE_COMPARE_PY", str(tmp_path / "no-compare.py"))
    code, out, _ = cli("nightly", "--history", tmp_path / "h.sqlite", "--report-dir",
                       tmp_path / "n", "--no-plots", "--run-cmd", FAKE_RUN, "--",
                       "--fixture=base.json")
    assert code == 0, out
    assert "nightly: running %s --repetitions 10 --out " % FAKE_RUN in out
    assert "results: %s" % tmp_path in out


@pytest.mark.parametrize("run_args,message", [
    (["--out", "x.json"], "after --: --out is set by tools/perfscale nightly itself"),
    (["--family", "nope"], "after --: perfscale run: no family 'nope'"),
    (["--fixture=base.json"], "after --: perfscale run: unknown option '--fixture=base.json'"),
])
def test_run_arguments_are_checked_before_anything_runs(nightly, capsys, run_args, message):
    with pytest.raises(SystemExit) as exit_info:
        nightly.cli_raw(*run_args)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_a_guest_nightly_runs_the_suite_in_the_kernel_on_its_instruction_clock(
        cli, tmp_path, monkeypatch):
    from perfscale.commands import nightly as nightly_command
    from perfscale.suite import nightly as nightly_module
    args, run_args = nightly_command.parse_args(["--guest", "debian:6.12-cloud",
                                                 "--guest-cpus", "4", "--", "--quick"])
    command = nightly_module.runner_command(args)
    assert command[1:] == ["vm", "--kernel", "debian:6.12-cloud", "--cpus", "4", "--clock",
                           "instructions", "--", "run"]
    assert command[0].endswith("tools/perfscale") and run_args == ["--quick"]
    # The trials' nightlies get the same runner.
    assert nightly_module.lineage_of(args) == {"run_cmd": None, "guest": "debian:6.12-cloud",
                                               "guest_cpus": 4}
    # PERFSCALE_RUN_CMD (a test's fake, a site's wrapper) does not replace a named guest.
    monkeypatch.setenv("PERFSCALE_RUN_CMD", FAKE_RUN)
    args, _ = nightly_command.parse_args(["--guest", "/boot/vmlinuz", "--", "--quick"])
    assert nightly_module.runner_command(args)[2:4] == ["--kernel", "/boot/vmlinuz"]


@pytest.mark.parametrize("options,message,commands", [
    (["--guest", "debian:6.12-cloud", "--run-cmd", "x"], "give one of them", None),
    (["--guest-cpus", "4"], "--guest-cpus sizes the --guest kernel's machine", None),
    (["--guest", "debian:6.12-cloud", "--guest-cpus", "0"], "--guest-cpus must be in 1..255",
     None),
    (["--guest", " "], "--guest needs a kernel", None),
    # trials leave the run arguments to the nightlies they start
    (["--guest", "debian:6.12-cloud", "--", "--bogus"],
     "after --: perfscale run: unknown option '--bogus'", ("nightly", "calibrate")),
])
def test_guest_options_are_checked_before_anything_runs(cli, capsys, options, message,
                                                        commands):
    for command in commands or ("nightly", "calibrate", "trials"):
        with pytest.raises(SystemExit) as exit_info:
            cli(command, *options)
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err, command


def test_the_defaults_live_in_the_repositorys_results_folder():
    # As docs/gate.md says: results/history.sqlite, results/nightly, results/calibrate and
    # results/trials of the checkout, and an external runner starts from its root (the
    # subpackages' move put them one level too deep, under tools/, for a while).
    from conftest import REPO_ROOT
    from perfscale.commands import calibrate, trials
    from perfscale.commands import nightly as nightly_command
    from perfscale.suite import nightly as nightly_module
    args, _ = nightly_command.parse_args([])
    assert args.history == os.path.join(REPO_ROOT, "results", "history.sqlite")
    assert args.report_dir == os.path.join(REPO_ROOT, "results", "nightly")
    assert nightly_module.REPO_ROOT == REPO_ROOT
    assert calibrate.parse_args([])[0].out_dir == os.path.join(REPO_ROOT, "results",
                                                               "calibrate")
    assert trials.parse_args([])[0].out_dir == os.path.join(REPO_ROOT, "results", "trials")
    # Every command's --history default is the one constant (perfscale.options).
    from perfscale import options
    from perfscale.commands import history, kcidb
    assert options.DEFAULT_HISTORY == os.path.join(REPO_ROOT, "results", "history.sqlite")
    assert {calibrate.parse_args([])[0].history, trials.parse_args([])[0].history,
            history.parse_args(["sync"]).history, history.parse_args(["import", "x"]).history,
            kcidb.parse_args(["--origin", "o", "r.json"]).history} == {options.DEFAULT_HISTORY}
    # ... and no command declares --history itself, with a default of its own.
    import ast
    commands = os.path.join(REPO_ROOT, "tools", "py", "perfscale", "commands")
    own = []
    for folder, _dirs, files in os.walk(commands):
        for name in sorted(f for f in files if f.endswith(".py")):
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                tree = ast.parse(f.read())
            own += ["%s:%d" % (name, node.lineno) for node in ast.walk(tree)
                    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "add_argument" and node.args
                    and isinstance(node.args[0], ast.Constant) and node.args[0].value ==
                    "--history" and any(k.arg == "default" for k in node.keywords)]
    assert own == [], "use options.add_history_option: its default is the one constant"


def test_a_timed_attribution_run_gets_a_lineage_of_its_own(nightly):
    """Issue 28: --attribution=timed times the counters too; its config is its own, and
    naming the default's config for it is refused, nothing recorded."""
    assert nightly("--fixture=base.json", "--attribution=true")[0] == 0
    code, out, _ = nightly("--fixture=clean.json", "--attribution=timed")
    assert code == 0 and "no baseline yet" in out
    assert [r[3] for r in runs(nightly.db)] == ["-- --fixture=base.json --attribution=true",
                                                "-- --fixture=clean.json --attribution=timed"]
    options = ("--config", "ci", "--no-plots")
    assert nightly("--fixture=base.json", "--attribution=true", options=options)[0] == 0
    before = open(nightly.db, "rb").read()
    code, _, err = nightly("--fixture=clean.json", "--attribution=timed", options=options)
    assert code == 2
    line = err.strip().splitlines()[-1]
    # The lineage names the machine identity (issue 30) after the config.
    assert re.match(r"nightly: run 3 of host perfscale-ci-1, 2 CPUs, config 'ci', machine "
                    r"[0-9a-f]{16}: the baseline was timed with no perf event of ours attached",
                    line), line
    assert "(--attribution=timed)" in line and "nothing recorded" in line
    assert open(nightly.db, "rb").read() == before


def test_a_history_recorded_before_the_counting_pass_is_refused_in_one_line(nightly):
    """A lineage timed the old way (counters attached, no "attribution" in its context):
    a default run is not judged against it (exit 2, one line, nothing recorded); a run
    timed as it was (--attribution=timed) still is."""
    options = ("--config", "ci", "--no-plots")
    assert nightly("--fixture=base.json", "--attribution=old-timed", options=options)[0] == 0
    before = open(nightly.db, "rb").read()
    code, _, err = nightly("--fixture=clean.json", "--attribution=true", options=options)
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert ("the baseline was timed with the attribution counters attached (recorded before "
            "the counting pass), this run timed with no perf event of ours attached "
            "(attribution: counting_pass)") in err
    assert open(nightly.db, "rb").read() == before
    code, out, _ = nightly("--fixture=clean.json", "--attribution=timed", options=options)
    assert code == 0 and "no regression against run 1" in out
