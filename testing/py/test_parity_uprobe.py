"""`tools/perfscale parity uprobe`'s parsers on real outputs of perf 6.1 (perf probe -a,
perf stat -x,) and of our binary, and the refusal of a probe that counted nothing."""

import json

import pytest

from perfscale.parity import common as pc
from perfscale.parity import uprobe

PROBE_ADDED = """Added new event:
  probe_uprobe:perfscale_uprobe_hit_target (on perfscale_uprobe_hit_target in /root/.cache/bazel/x/bin/benchmarks/uprobe/uprobe)

You can now use it in all perf tools, such as:

\tperf record -e probe_uprobe:perfscale_uprobe_hit_target -aR sleep 1

"""

RETPROBE_ADDED = """Added new event:
  probe_uprobe:perfscale_uprobe_hit_target__return (on perfscale_uprobe_hit_target%return in /x/uprobe)
"""

STAT = """# started on Wed Dec  2 19:58:01 2026

2004000,,probe_uprobe:perfscale_uprobe_hit_target,1234567,100.00,,
"""

OURS = {"context": {}, "benchmarks": [{
    "name": "BM_UprobeHit/probe:none/threads:1/manual_time", "run_type": "iteration",
    "real_time": 120.0, "usecs/hit": 0.06, "iterations": 1000}]}


def test_the_added_event_is_read_from_perf_probe():
    assert uprobe.parse_added_event(PROBE_ADDED) == "probe_uprobe:perfscale_uprobe_hit_target"
    assert (uprobe.parse_added_event(RETPROBE_ADDED) ==
            "probe_uprobe:perfscale_uprobe_hit_target__return")
    with pytest.raises(pc.ParityError, match="added no event"):
        uprobe.parse_added_event("Failed to find symbol perfscale_uprobe_hit_target\n")


def test_the_count_is_read_from_perf_stat_csv():
    assert uprobe.parse_stat_count(STAT, "probe_uprobe:perfscale_uprobe_hit_target") == 2004000
    with pytest.raises(pc.ParityError, match="could not count"):
        uprobe.parse_stat_count("<not counted>,,probe_uprobe:f,0,0.00,,\n", "probe_uprobe:f")
    with pytest.raises(pc.ParityError, match="no count"):
        uprobe.parse_stat_count(STAT, "probe_uprobe:other")


def test_the_reference_is_the_baseline_row_under_perfs_probe(tmp_path):
    stat = tmp_path / "stat.csv"
    stat.write_text(STAT)
    parse = uprobe.parse_reference(str(stat), "probe_uprobe:perfscale_uprobe_hit_target")
    # Our JSON on stdout comes first; the binary's progress lines on stderr follow it.
    text = json.dumps(OURS) + "\nprogress: [1/1] 0:01 elapsed\ndone: 1 of 1\n"
    assert parse(text) == pytest.approx(0.06)


def test_a_probe_that_counted_nothing_fails_the_case(tmp_path):
    stat = tmp_path / "stat.csv"
    stat.write_text("0,,probe_uprobe:f,1,100.00,,\n")
    with pytest.raises(pc.ParityError, match="counted 0 hits"):
        uprobe.parse_reference(str(stat), "probe_uprobe:f")(json.dumps(OURS))


def test_both_sides_run_the_same_loop():
    (case, retcase) = uprobe.cases("perf", "/bin/uprobe",
                                   [("uprobe", "p:a"), ("uretprobe", "p:b")], "/tmp", "0.1")
    ref_flags = case.reference_cmd[case.reference_cmd.index("/bin/uprobe") + 1:]
    assert "--uprobe_probe=none" in ref_flags and "--uprobe_probe=uprobe" in case.ours_args
    same = [f for f in ref_flags if not f.startswith(("--uprobe_probe", "--benchmark_filter",
                                                      "--benchmark_format"))]
    assert same == [f for f in case.ours_args
                    if not f.startswith(("--uprobe_probe", "--benchmark_filter"))]
    assert case.ours_counter == "usecs/hit" and case.gating
    assert "-e" in retcase.reference_cmd and "p:b" in retcase.reference_cmd
