"""`tools/perfscale run` as code (perfscale.suite.runner), with a fake binary standing in for the
family binary: its options, the binary's flags, where the results go, what it prints."""

import json
import os
import shlex
import sys

import pytest

from conftest import FAKE_RUN, HERE
from perfscale.suite import runner as suite


@pytest.fixture
def fake_binary(monkeypatch):
    monkeypatch.setenv(suite.STAND_IN_ENV, FAKE_RUN)


@pytest.mark.parametrize("argv,message", [
    (["--repetitions"], "--repetitions needs a number"),
    (["--repetitions", "x"], "--repetitions must be an integer in 0..1000, got 'x'"),
    (["--repetitions=1001"], "--repetitions must be an integer in 0..1000, got '1001'"),
    (["--cpus", "64"], "--cpus plans for another machine's size; it needs --plan"),
    (["--benchmark_filter=x"], "unknown option '--benchmark_filter=x' (benchmark flags go "
                               "after --)"),
])
def test_bad_options_are_refused_with_the_reason(argv, message):
    with pytest.raises(suite.UsageError) as error:
        suite.parse_args(argv)
    assert str(error.value) == "perfscale run: " + message


def test_options_both_ways_and_flags_after_the_dashes():
    options = suite.parse_args(["--quick", "--repetitions", "3", "--family=breakpoint",
                                "--out", "x.json", "--budget=5m", "--",
                                "--breakpoint_passive=2", "--"])
    assert options == suite.Options(family="breakpoint", quick=True, repetitions=3,
                                    budget="5m", out="x.json",
                                    flags=["--breakpoint_passive=2", "--"])


def test_the_binary_gets_interleaved_repetitions_and_the_file():
    options = suite.Options(quick=True, profile=True, repetitions=10, budget="10m",
                            flags=["--benchmark_filter=BM_X"])
    assert suite.binary_flags(options, "/r/x.json") == [
        "--benchmark_out=/r/x.json", "--benchmark_out_format=json",
        "--benchmark_min_time=0.01s", "--quick=true",
        "--profile", "--profile_out=/r/x.json.profile.json",
        "--benchmark_repetitions=10", "--benchmark_enable_random_interleaving=true",
        "--benchmark_display_aggregates_only=true", "--benchmark_min_warmup_time=0.02",
        "--budget=10m", "--benchmark_filter=BM_X"]


def test_a_plan_writes_nothing_and_says_the_size():
    options = suite.Options(plan=True, plan_cpus="64", repetitions=5, profile=True)
    assert suite.binary_flags(options, None) == ["--benchmark_repetitions=5",
                                                 "--plan_cpus=64", "--plan=true"]


def test_the_families_are_the_binaries_of_benchmarks():
    found = suite.families()
    assert {"suite", "breakpoint", "event_open", "synthesize", "trace_overhead",
            "uprobe"} <= set(found)
    with pytest.raises(suite.UsageError) as error:
        suite.check_family("nope")
    assert "no family 'nope' (one of: " in str(error.value)


def test_run_writes_where_out_says_relative_to_the_caller(cli, fake_binary, tmp_path,
                                                           monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = cli("run", "--out", "mine.json", "--", "--fixture=base.json")
    assert code == 0
    assert out.splitlines()[-1] == "results: %s" % (tmp_path / "mine.json")
    assert json.loads((tmp_path / "mine.json").read_text())["benchmarks"]


def test_a_failed_binary_is_the_runs_exit_status_and_no_results_line(cli, fake_binary,
                                                                     tmp_path):
    code, out, _ = cli("run", "--out", tmp_path / "x.json", "--", "--fail")
    assert code == 1 and "results:" not in out


def test_the_default_file_is_named_after_the_tag_under_results(fake_binary, monkeypatch,
                                                               tmp_path):
    monkeypatch.setattr(suite, "REPO_ROOT", str(tmp_path))
    result = suite.run_suite(suite.Options(flags=["--fixture=base.json"]), tag="vm-6.1-cpus4")
    assert result.status == 0 and result.profile is None
    folder, name = os.path.split(result.out)
    assert folder == str(tmp_path / "results")
    assert name.startswith("perfscale-vm-6.1-cpus4-") and name.endswith("Z.json")


def test_a_runner_goes_before_the_binary(fake_binary, tmp_path):
    # A runner that records its arguments, then runs them (as vm's guest launcher would).
    log = tmp_path / "runner.log"
    runner = [sys.executable, "-c", "import subprocess, sys; open(%r, 'w').write("
              "repr(sys.argv[1:])); sys.exit(subprocess.call(sys.argv[1:]))" % str(log)]
    out = tmp_path / "x.json"
    result = suite.run_suite(suite.Options(out=str(out), repetitions=2), runner=runner)
    assert result.status == 0 and out.exists()
    argv = eval(log.read_text())  # the repr written above
    assert argv[:len(shlex.split(FAKE_RUN))] == shlex.split(FAKE_RUN)
    assert "--benchmark_out=%s" % out in argv and "--benchmark_repetitions=2" in argv


def test_the_front_door_runs_it(tmp_path):
    # tools/perfscale run -> perfscale.commands.run through the one interpreter (tools/py/python).
    import subprocess
    env = dict(os.environ, PERFSCALE_BINARY=FAKE_RUN)
    result = subprocess.run([os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools",
                                          "perfscale"), "run", "--repetitions", "nine"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "--repetitions must be an integer in 0..1000, got 'nine'" in result.stderr


def test_a_profiled_run_names_its_side_file(cli, fake_binary, tmp_path):
    code, out, _ = cli("run", "--profile", "--out", tmp_path / "x.json", "--",
                       "--fixture=base.json")
    assert code == 0
    assert out.splitlines()[-2:] == ["results: %s" % (tmp_path / "x.json"),
                                     "profile: %s.profile.json" % (tmp_path / "x.json")]
