"""`tools/perfscale compare`: the regression gate on recorded results."""

import json
import os
import sys

import pytest

from conftest import data
from perfscale.gate import stats as results_stats

SLOWED = ("BM_BreakpointEnable/passive:8/active:0/placement:0/real_time",
          "BM_BreakpointThread/breakpoints:4/parallelism:2/threads:20/real_time")
COMPARE_PY = "/usr/share/benchmark/compare.py"


def verdict_lines(out):
    return {line.split(": ", 1)[0]: line for line in out.splitlines()
            if line.startswith("BM_") and ": " in line}


def test_twenty_percent_slowdown_with_ten_repetitions_is_flagged(cli):
    code, out, _ = cli("compare", data("base.json"), data("slow.json"), "--no-table")
    assert code == 1
    lines = verdict_lines(out)
    for name in SLOWED:
        assert lines[name].startswith(name + ": slower (+")
        assert "repetitions 10 vs 10" in lines[name]
    flagged = [n for n, line in lines.items() if ": slower" in line]
    assert sorted(flagged) == sorted(SLOWED)
    assert "REGRESSION: 2 benchmark(s) slower" in out


def test_identical_runs_are_not_flagged(cli):
    code, out, _ = cli("compare", data("base.json"), data("base.json"), "--no-table")
    assert code == 0
    timed = [l for l in verdict_lines(out).values() if "error" not in l]
    assert timed and all("no significant change (+0.0% time [95% CI " in l and
                         "p=1.0000 (Holm 1.0000)" in l for l in timed)
    assert out.rstrip().endswith("no regression")


def test_a_clean_rerun_is_not_flagged(cli):
    code, out, _ = cli("compare", data("base.json"), data("clean.json"), "--no-table")
    assert code == 0, out


def test_too_few_repetitions_are_reported_not_judged_and_fail_closed(cli):
    code, out, _ = cli("compare", data("few_reps.json"), data("slow.json"), "--no-table")
    assert code == 2
    for name in SLOWED:
        assert "too few repetitions: 3, need >= 9" in verdict_lines(out)[name]
    assert "had too few repetitions to judge" in out


def test_too_few_repetitions_never_make_a_regression():
    verdict = results_stats.compare_samples("x", [1.0, 1.01, 0.99], [2.0, 2.02, 1.98])
    assert verdict.verdict == results_stats.TOO_FEW and not verdict.regression
    assert verdict.change == pytest.approx(1.0)


@pytest.mark.parametrize("option,value", [("--threshold", "60"), ("--alpha", "1e-6")])
def test_the_gate_follows_threshold_and_alpha(cli, option, value):
    code, out, _ = cli("compare", data("base.json"), data("slow.json"), "--no-table",
                       option, value)
    assert code == 0
    assert "slower (+" not in out


def test_faster_is_reported_and_passes(cli):
    code, out, _ = cli("compare", data("slow.json"), data("base.json"), "--no-table")
    assert code == 0
    assert all(": faster (-" in verdict_lines(out)[name] for name in SLOWED)


def test_skips_in_either_format_are_said_to_be_skips(cli, tmp_path):
    # The same row skipped as Google Benchmark 1.9 writes it (new) and as perfscale's
    # binaries on 1.7 did, an error saying SKIPPED (base): a skip on both sides, not judged.
    name = "BM_PipePingPong/set:lockdep/callchain:0/real_time"
    paths = []
    for side in ("base", "new"):
        with open(data("base.json")) as f:
            document = json.load(f)
        for item in document["benchmarks"]:
            if item["name"] == name:
                item.pop("error_occurred"), item.pop("error_message")
                if side == "new":
                    item.update(skipped=True, skip_message="no lockdep")
                else:
                    item.update(error_occurred=True, error_message="SKIPPED: no lockdep")
        paths.append(tmp_path / (side + ".json"))
        paths[-1].write_text(json.dumps(document))
    code, out, _ = cli("compare", str(paths[0]), str(paths[1]), "--no-table")
    assert verdict_lines(out)[name].endswith("skipped in both runs: no lockdep")
    assert code == 0


def test_errors_are_listed_not_judged(cli):
    code, out, _ = cli("compare", data("base.json"), data("clean.json"), "--no-table")
    line = verdict_lines(out)["BM_PipePingPong/set:lockdep/callchain:0/real_time"]
    assert "error in both runs: tracepoint lock:lock_acquire not found" in line
    assert code == 0  # skipped on both sides: the environment's, nothing to judge


@pytest.mark.skipif(not os.path.exists(COMPARE_PY), reason="libbenchmark-tools not installed")
def test_compare_py_table_comes_first_with_the_original_names(cli):
    code, out, _ = cli("compare", data("base.json"), data("slow.json"))
    assert code == 1
    table, verdicts = out.split("\n\n", 1)
    assert table.startswith("Comparing %s to %s" % (data("base.json"), data("slow.json")))
    assert "U Test, Repetitions: 10 vs 10" in table
    assert "OVERALL_GEOMEAN" in table and "compare.py failed" not in table
    assert "REGRESSION" in verdicts


@pytest.mark.skipif(not os.path.exists(COMPARE_PY), reason="libbenchmark-tools not installed")
def test_compare_py_gets_nan_free_input(cli):
    # Raw NaN times give compare.py a NaN p-value and drop its geomean; cleaned copies don't.
    code, out, _ = cli("compare", data("base.json"), data("nan.json"))
    # nan.json holds only some of the baseline's families: the gate fails closed on the
    # rest; the table is what this test checks.
    assert code == 2 and "that the new run lacks" in out
    assert " nan " not in out.lower()
    assert "BM_BreakpointEnable/passive:0/active:0/placement:0/real_time_pvalue" in out


def test_missing_compare_py_still_gives_verdicts(cli, monkeypatch):
    monkeypatch.setenv("PERFSCALE_COMPARE_PY", "/nonexistent/compare.py")
    code, out, _ = cli("compare", data("base.json"), data("slow.json"))
    assert code == 1
    assert "compare.py not found at /nonexistent/compare.py" in out


@pytest.mark.parametrize("content,expected", [
    ("cut inside a string", "truncated JSON"),
    ("cut between entries", "truncated JSON"),
    ('{"context": {}, "benchmarks": [ {"name": "BM_X", oops} ]}', "not valid JSON"),
    ('[1, 2, 3]', "not Google Benchmark JSON"),
    ("", "empty file"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "not a text file"),
])
def test_unusable_input_exits_2_with_a_message(cli, tmp_path, content, expected):
    bad = tmp_path / "bad.json"
    if isinstance(content, str) and content.startswith("cut "):  # writer killed mid-file
        text = open(data("base.json"), encoding="utf-8").read()
        middle = text.index('"name": "', len(text) // 2) + 12
        bad.write_text(text[:middle] if "string" in content
                       else text[:text.index("},\n", middle) + 3])
    elif isinstance(content, bytes):
        bad.write_bytes(content)
    else:
        bad.write_text(content)
    code, out, err = cli("compare", data("base.json"), bad)
    assert code == 2
    assert expected in err and str(bad) in err
    assert out == ""


@pytest.mark.parametrize("name,expected", [
    ("foreign.json", "not Google Benchmark JSON"),
    ("no_benchmarks.json", "holds no benchmark results"),
    ("does-not-exist.json", "cannot read"),
])
def test_foreign_empty_or_missing_files_exit_2(cli, name, expected):
    code, _, err = cli("compare", data(name), data("base.json"))
    assert code == 2
    assert expected in err


def test_statistics_agree_with_compare_py():
    sys.path.insert(0, os.path.dirname(COMPARE_PY))
    report = pytest.importorskip("gbench.report")
    assert results_stats.DEFAULT_MIN_REPETITIONS == report.UTEST_OPTIMAL_REPETITIONS
    for old, new in ((100.0, 120.0), (0.0, 3.0), (0.0, 0.0), (-2.0, 1.0)):
        assert results_stats.change(old, new) == report.calculate_change(old, new)


@pytest.mark.parametrize("base_mode,new_mode,refused", [
    ("counting_pass", "off", False),      # both timed with no perf event of ours
    ("counting_pass", "timed", True),
    ("old-timed", "counting_pass", True),  # a file from before the counting pass
    ("old-timed", "timed", False),
])
def test_runs_timed_with_and_without_the_counters_are_never_compared(cli, tmp_path, base_mode,
                                                                     new_mode, refused):
    """Issue 28: --attribution=timed (or a file from before the counting pass) times the
    counters too; compare refuses to hold such timings against untouched ones."""
    paths = []
    for name, mode in (("base.json", base_mode), ("clean.json", new_mode)):
        with open(data(name), encoding="utf-8") as f:
            document = json.load(f)
        if mode == "old-timed":
            document["context"]["counter_sources"] = json.dumps({"xcalls": "csd:csd_queue_cpu"})
        else:
            document["context"]["attribution"] = mode
        path = tmp_path / ("%s-%s" % (mode, name))
        path.write_text(json.dumps(document))
        paths.append(path)
    code, out, _ = cli("compare", "--no-table", *paths)
    if refused:
        assert code == 2
        assert "refusing to compare" in out and "never judged against each other" in out
    else:
        assert code in (0, 1) and "refusing" not in out


def test_a_changed_list_of_lock_tracepoints_is_named(cli, tmp_path):
    """Issue 49: a kernel that gained lock tracepoints moves the set:lock rows for that
    alone; compare names the change (and the gate's verdicts are untouched by it)."""
    paths = []
    for name, listed in (("base.json", "lock:contention_begin,lock:contention_end"),
                         ("clean.json", "lock:contention_begin,lock:contention_end,"
                                        "lock:lock_acquire,lock:lock_release")):
        with open(data(name), encoding="utf-8") as f:
            document = json.load(f)
        document["context"]["lock_tracepoints"] = listed
        path = tmp_path / name
        path.write_text(json.dumps(document))
        paths.append(path)
    code, out, _ = cli("compare", "--no-table", *paths)
    assert code == 0, out
    assert ("kernel changed lock tracepoints (context lock_tracepoints): the new run's kernel "
            "has lock:lock_acquire, lock:lock_release, which the base run's lacks; the "
            "set:lock rows record every one, so 1 of these rows may have moved for that "
            "alone") in out
    code, out, _ = cli("compare", "--no-table", paths[0], paths[0])
    assert "kernel changed" not in out


def test_counts_only_comparisons_name_a_changed_list_too(cli, tmp_path):
    """Two TCG guests (timings not comparable: the gate judges their counts only) whose
    kernels copy different user memory into the syscall events: said before the counts."""
    paths = []
    for name, listed in (("linux510/quick-5.10.json", "none"),
                         ("linux510/quick-6.12.json", "syscalls:sys_enter_openat:__filename_val")):
        with open(data(name), encoding="utf-8") as f:
            document = json.load(f)
        document["context"]["syscall_user_fields"] = listed
        path = tmp_path / os.path.basename(name)
        path.write_text(json.dumps(document))
        paths.append(path)
    code, out, _ = cli("compare", "--no-table", *paths)
    assert "judging the counted kernel events only" in out, out
    assert ("kernel changed user memory the syscall trace events copy (context "
            "syscall_user_fields): the new run's kernel has "
            "syscalls:sys_enter_openat:__filename_val, which the base run's lacks") in out
    assert code == 0, out
