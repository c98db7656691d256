"""`tools/perfscale parity FAMILY` on recorded sessions: real outputs of perf bench and of
our binaries (testing/py/data/parity, recorded by its record.py), replayed in order, so the
parsers, the medians, ratios and verdicts, the table and the JSON are tested without perf,
a build or the kernel."""

import json
import re
import statistics
import subprocess

import pytest

import parity_replay
from perfscale.parity import common as pc
from perfscale.parity import event_open, synthesize

FAMILIES = sorted(parity_replay.ARGS)


def perf_outputs(session):
    return [c for c in session["calls"] if "perf" in c["cmd"][:4]]


def our_outputs(session):
    return [c for c in session["calls"] if parity_replay.BINARY in c["cmd"]]


@pytest.mark.parametrize("family", FAMILIES)
def test_a_replay_gives_the_recorded_table_and_rows(family):
    session = parity_replay.load(family)
    code, table, rows = parity_replay.replay(session)
    assert code == session["exit_code"]
    assert table == session["table"]
    assert rows == session["rows"]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_row_is_the_medians_and_their_ratio(family):
    for row in parity_replay.load(family)["rows"]:
        assert row["ours_median"] == pytest.approx(statistics.median(row["ours_values"]))
        assert row["ratio"] == pytest.approx(row["ours_median"] / row["reference_median"])
        assert len(row["ours_values"]) == len(row["reference_values"]) == 2  # two rounds
        assert row["ours_median"] > 0 and row["reference_median"] > 0


@pytest.mark.parametrize("family", FAMILIES)
def test_the_recorded_outputs_parse(family):
    session = parity_replay.load(family)
    assert perf_outputs(session) and our_outputs(session)
    for call in our_outputs(session):
        runs = pc.parse_benchmark_json(call["stdout"], "ours")
        assert all(r["run_type"] == "iteration" and r["real_time"] > 0 for r in runs)


def test_perf_bench_breakpoint_is_read_from_its_usecs_per_op_line():
    for call in perf_outputs(parity_replay.load("breakpoint")):
        text = call["stdout"] + call["stderr"]
        (line,) = [l for l in text.splitlines() if l.strip().endswith(" usecs/op")]
        assert pc.parse_perf_usecs_per_op(text) == float(line.split()[0]) > 0


def test_breakpoint_rows_hold_the_values_perf_and_ours_printed():
    session = parity_replay.load("breakpoint")
    rows = {r["case"]: r for r in session["rows"]}
    perf = [pc.parse_perf_usecs_per_op(c["stdout"] + c["stderr"]) for c in perf_outputs(session)]
    ours = [statistics.median(float(r["usecs/op"]) for r in
                              pc.parse_benchmark_json(c["stdout"], "ours"))
            for c in our_outputs(session)]
    # Interleaved: round 1 runs every case (perf, then ours), then round 2.
    labels = [r["case"] for r in session["rows"]]
    for index, label in enumerate(labels * 2):
        assert perf[index] in rows[label]["reference_values"]
        assert ours[index] in rows[label]["ours_values"]


def _scaled(pattern, factor):
    """An edit of a command's output: the number matched by group 2 times factor."""
    def edit(text):
        return re.sub(pattern, lambda m: m.group(1) + "%.3f" % (float(m.group(2)) * factor),
                      text, flags=re.MULTILINE)
    return edit


def test_ours_twice_as_slow_is_off_and_exits_1():
    half = _scaled(r"(^\s*)([0-9.]+)(?=\s+usecs/op\s*$)", 0.5)
    code, table, rows = parity_replay.replay(
        parity_replay.load("breakpoint"),
        edit=lambda cmd, out: half(out) if cmd[0] == "perf" else out)
    assert code == 1
    assert all(not r["within_tolerance"] for r in rows)
    assert table.count("OFF by") == len(rows)


def test_perf_output_without_its_figure_fails_with_what_it_printed(capsys):
    code, table, rows = parity_replay.replay(
        parity_replay.load("breakpoint"),
        edit=lambda cmd, out: "perf: something else\n" if cmd[0] == "perf" else out)
    assert code == 2 and rows is None
    err = capsys.readouterr().err
    assert "no 'usecs/op' line in perf bench output" in err and "something else" in err


@pytest.mark.parametrize("untimed, reason", [
    ({"error_occurred": True, "error_message": "perf_event_open: EACCES"},
     "perf_event_open: EACCES"),
    # Google Benchmark 1.8+ writes a skip as "skipped": its zero time is no figure either.
    ({"skipped": True, "skip_message": "no breakpoint PMU"}, "SKIPPED: no breakpoint PMU"),
])
def test_an_untimed_benchmark_of_ours_fails_the_run_with_its_reason(capsys, untimed, reason):
    def edited(cmd, out):
        if parity_replay.BINARY not in cmd:
            return out
        document = json.loads(out)
        for run in document["benchmarks"]:
            run.update(untimed)
        return json.dumps(document)
    code, _, _ = parity_replay.replay(parity_replay.load("breakpoint"), edit=edited)
    assert code == 2
    assert reason in capsys.readouterr().err


def test_evlist_open_close_is_per_fd():
    for call in perf_outputs(parity_replay.load("event_open")):
        text = call["stdout"] + call["stderr"]
        average = float(re.search(r"Average open-close took: ([0-9.]+) usec", text).group(1))
        fds = int(re.search(r"\((\d+) fds\)", text).group(1))
        assert event_open.parse_evlist_open_close(text) == pytest.approx(average / fds)
    with pytest.raises(pc.ParityError):
        event_open.parse_evlist_open_close("Number of events: 0 (0 fds)\n")


def test_event_open_rows_are_references_only_and_never_fail():
    session = parity_replay.load("event_open")
    assert session["exit_code"] == 0
    assert all(not r["gating"] for r in session["rows"])
    double = _scaled(r"(took: )([0-9.]+)", 100.0)
    code, table, _ = parity_replay.replay(
        session, edit=lambda cmd, out: double(out) if cmd[0] == "perf" else out)
    assert code == 0 and "OFF by" not in table


def test_synthesize_parses_time_and_records_per_mode():
    for call in perf_outputs(parity_replay.load("synthesize")):
        usec, records = synthesize.parse_perf_synthesize(call["stdout"] + call["stderr"])
        assert usec > 0 and records >= 1


@pytest.mark.parametrize("factor,code", [(0.5, 1), (1.05, 0), (10.0, 0)])
def test_synthesize_judges_only_ours_slower_per_record(factor, code):
    # factor scales perf's time per event, so ours / perf scales by 1 / factor: perf
    # twice as fast makes ours too slow; ours faster is fine.
    session = parity_replay.load("synthesize")
    ratio = {r["case"]: r["ratio"] for r in session["rows"]}
    scale = _scaled(r"(Average time per event\s+)([0-9.]+)", factor)
    got, table, rows = parity_replay.replay(
        session, edit=lambda cmd, out: scale(out) if cmd[0] == "perf" else out)
    gating = [r for r in rows if r["gating"]]
    assert gating and all(r["ratio"] == pytest.approx(ratio[r["case"]] / factor, rel=0.01)
                          for r in gating)
    expected = 1 if any(r["ratio"] > 1.10 for r in gating) else 0
    assert got == expected
    assert ("SLOWER by" in table) == (expected == 1)


def test_synthesize_summary_rule():
    rows = synthesize.summarize({"a": [(10.0, 500, 9.0, 480)], "b": [(10.0, 500, 10.5, 480)],
                                 "c": [(10.0, 500, 12.0, 480)]},
                                {"a": True, "b": True, "c": False}, tolerance=10)
    verdicts = {r["case"]: (r["ratio"], r["within_tolerance"]) for r in rows}
    assert verdicts == {"a": (pytest.approx(0.9), True), "b": (pytest.approx(1.05), True),
                        "c": (pytest.approx(1.2), False)}


def test_trace_overhead_takes_perfs_fixed_cost_out_and_prices_perf_lock():
    session = parity_replay.load("trace_overhead")
    loops = int(session["argv"][session["argv"].index("--loops") + 1])
    rows = {r["case"]: r for r in session["rows"]}
    for row in rows.values():
        assert row["reference_median"] == pytest.approx(
            row["reference_raw_median"] - row["fork_exit_us"] / loops)
        assert row["fork_exit_us"] > row["reference_raw_median"]  # one fork + exit + wait
    lock, none = rows["lock vs perf lock record, one CPU"], rows["none, one CPU"]
    assert lock["reference_overhead_pct"] == pytest.approx(
        100 * (lock["reference_median"] / none["reference_median"] - 1))
    assert lock["within_tolerance"] is None and lock["ours_overhead_pct"] is not None
    # perf lock record runs in a folder of its own, its output read from a file there.
    recorded = [c for c in session["calls"] if "lock" in c["cmd"]]
    assert recorded and all("usecs/op" in c["stdout"] for c in recorded)


@pytest.mark.parametrize("argv", [[], ["--rounds", "3"], ["common"], ["nope"]])
def test_parity_wants_one_of_its_families(cli, argv):
    code, _, err = cli("parity", *argv)
    assert code == 2
    assert "(FAMILY: breakpoint, event_open, synthesize, trace_overhead, uprobe)" in err


def test_breakpoint_cases_of_the_users_choosing_replace_the_defaults():
    from perfscale.parity import breakpoint
    default = breakpoint.cases("0.5")
    assert [c.label for c in default][:2] == ["thread B=0 P=2 T=20", "thread B=4 P=2 T=20"]
    chosen = breakpoint.cases("0.5", thread_cases=[(2, 1, 10, 100)], enable_cases=[])
    (case,) = chosen
    assert case.label == "thread B=2 P=1 T=10 R=100"
    assert case.reference_cmd[2:] == ["--repeat=100", "breakpoint", "thread", "-b", "2", "-p",
                                      "1", "-t", "10"]
    assert "--breakpoint_repeat=100" in case.ours_args
    assert "--benchmark_filter=^BM_BreakpointThread/breakpoints:2/parallelism:1/threads:10/" \
           "real_time$" in case.ours_args


def test_breakpoint_enable_loops_as_long_as_perf_bench_did_in_its_round():
    """A toggle costs less the longer the loop keeps the other CPUs awake: ours' enable
    loop is given the time perf bench's took in the same round (its figure x --repeat)."""
    session = parity_replay.load("breakpoint")
    calls = session["calls"]
    checked = 0
    for index, call in enumerate(calls):
        if call["cmd"][:2] != ["perf", "bench"] or "enable" not in call["cmd"]:
            continue
        repeat = int(call["cmd"][2].split("=")[1])
        figure = pc.parse_perf_usecs_per_op(call["stdout"] + call["stderr"])
        seen = {}

        def run(cmd, **kwargs):
            seen["cmd"] = cmd
            return subprocess.CompletedProcess(cmd, 0, stdout=calls[index + 1]["stdout"],
                                               stderr="")
        from perfscale.parity import breakpoint
        passive, active = int(call["cmd"][6]), int(call["cmd"][8])
        (case,) = breakpoint.cases("0.5", thread_cases=[],
                                   enable_cases=[(passive, active, repeat)])
        with parity_replay._patched(subprocess, "run", run):
            pc.run_ours(parity_replay.BINARY, case, figure)
        (min_time,) = [a for a in seen["cmd"] if a.startswith("--benchmark_min_time=")]
        assert min_time == "--benchmark_min_time=%.3fs" % max(0.01, figure * repeat / 1e6)
        checked += 1
    assert checked >= 2


@pytest.mark.parametrize("argv, message", [
    (["--thread", "2,1"], "--thread takes BREAKPOINTS,PARALLELISM,THREADS,REPEAT"),
    (["--thread", "2,1,10,x"], "--thread: repeat must be an integer in 1..1000000, got 'x'"),
    (["--thread", "65,1,10"], "--thread: breakpoints must be an integer in 0..64, got '65'"),
    (["--enable", "4"], "--enable takes PASSIVE,ACTIVE,REPEAT"),
    (["--enable", "4,-1"], "--enable: active must be an integer in 0..4096, got '-1'"),
])
def test_breakpoint_cases_given_badly_are_one_line_and_exit_2(capsys, argv, message):
    from perfscale.commands.parity import breakpoint as command
    with pytest.raises(SystemExit) as exit_info:  # argparse's usage error, before any run
        command.main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
