"""`tools/perfscale plot` and `report` on recorded results and a history."""

import json
import statistics

import pytest

from conftest import data
from perfscale.gate import stats as results_stats
from perfscale.history import store as history
from perfscale.results import headlines as results_headlines, io as results_io

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def median_counter(results, name, counter):
    return statistics.median(results.entries[name].counters[counter])


def test_headline_figures_match_the_data():
    results = results_io.load_results(data("base.json"))
    by_title = {h.spec.title: h for h in results_headlines.compute(results)}
    thread = by_title["Breakpoint slowdown: thread creation"]
    row = [r for r in thread.rows if r[:2] == ["parallelism=2 threads=20", "breakpoints=4"]][0]
    expected = (median_counter(results, "BM_BreakpointThread/breakpoints:4/parallelism:2/"
                               "threads:20/real_time", "usecs/op")
                / median_counter(results, "BM_BreakpointThread/breakpoints:0/parallelism:2/"
                                 "threads:20/real_time", "usecs/op"))
    assert row[4] == "%.1fx" % expected
    enable = by_title["Breakpoint slowdown: enable/disable"]
    assert {r[1] for r in enable.rows} == {"passive=8 active=0", "passive=32 active=0",
                                           "passive=0 active=1", "passive=0 active=2"}
    ipis = by_title["IPIs per fd saved by affinity"]
    assert ipis.header[3] == "ipis_system/fd" and all(r[1] == "strategy=cpu_major" for r in ipis.rows)
    synth = by_title["Synthesis speed-up per strategy"]
    assert sorted(r[0] for r in synth.rows) == ["strategy=atomic sink=memory",
                                                "strategy=mutex sink=memory"]
    tracing = by_title["Tracing overhead"]
    assert {r[1] for r in tracing.rows} == {"set=lock", "set=sched"}  # lockdep errored
    assert all(r[4].startswith("+") for r in tracing.rows)


def results_named(figures):
    """Results of one repetition per (name, usecs) with today's names."""
    benchmarks = [{"name": name, "run_name": name, "run_type": "iteration", "repetitions": 1,
                   "real_time": usecs, "cpu_time": usecs, "time_unit": "us",
                   "usecs/op": usecs, "usecs/fd": usecs} for name, usecs in figures]
    return results_io.parse_results(json.dumps({"context": {}, "benchmarks": benchmarks}))


def test_tracing_overhead_puts_ring_and_bpf_against_the_same_none():
    layout = "tasks:processes/placement:same_cpu"
    results = results_named([
        ("BM_PipePingPong/set:none/%s/real_time" % layout, 10.0),
        ("BM_PipePingPong/set:none/tasks:processes/placement:unpinned/real_time", 40.0),
        ("BM_PipePingPong/set:lock/recorder:bpf/scope:task/%s/real_time" % layout, 12.0),
        ("BM_PipePingPong/set:lock/callchains:off/scope:task/%s/sink:discard/real_time" % layout,
         15.0),
        ("BM_PipePingPong/set:lock/callchains:on/scope:task/%s/sink:discard/real_time" % layout,
         30.0),
    ])
    tracing = {h.spec.title: h for h in results_headlines.compute(results)}["Tracing overhead"]
    rows = {r[0]: r for r in tracing.rows}
    assert set(rows) == {  # callchains on is left out; unpinned has no recorded sibling
        "recorder=bpf scope=task tasks=processes placement=same_cpu",
        "callchains=off scope=task tasks=processes placement=same_cpu sink=discard "
        "recorder=ring"}
    assert [r[1:5] for r in rows.values()] == [["set=lock", "10", "12", "+20.0%"],
                                              ["set=lock", "10", "15", "+50.0%"]]


def test_open_strategies_compare_unloaded_and_loaded():
    base = "BM_EventOpen/strategy:%s/events:100/event:cpu-clock/phases:%s/cpus:2%s/manual_time"
    results = results_named([
        (base % ("event_major", "lifecycle", ""), 10.0),
        (base % ("cpu_major", "lifecycle", ""), 5.0),
        (base % ("event_major", "lifecycle", "/load:2"), 20.0),
        (base % ("cpu_major", "lifecycle", "/load:2"), 40.0),
        (base % ("cpu_major", "open", ""), 1.0),
    ])
    by_title = {h.spec.title: h for h in results_headlines.compute(results)}
    rows = by_title["Open time per strategy, unloaded and loaded"].rows
    assert [[r[0], r[4]] for r in rows] == [
        ["events=100 event=cpu-clock phases=lifecycle cpus=2 load=0", "2.00x"],
        ["events=100 event=cpu-clock phases=lifecycle cpus=2 load=2", "0.50x"]]


def test_missing_families_are_omitted_with_a_note(tmp_path):
    document = json.load(open(data("base.json"), encoding="utf-8"))
    document["benchmarks"] = [b for b in document["benchmarks"]
                              if b["name"].startswith("BM_BreakpointEnable")]
    results = results_io.parse_results(json.dumps(document), "partial.json")
    notes = {h.spec.family: h.note for h in results_headlines.compute(results)}
    assert notes["BM_BreakpointEnable"] == ""
    assert notes["BM_EventOpen"] == "omitted: no BM_EventOpen results in partial.json"


def with_attribution(document):
    """base.json's run as a build with attributed counters would have written it."""
    document["context"]["counter_sources"] = json.dumps(
        {"ipis_sent": "tracepoints ipi:ipi_send_cpu + ipi:ipi_send_cpumask",
         "lock_wait_us": "unavailable: tracefs is not mounted"})
    for benchmark in document["benchmarks"]:
        if benchmark["name"].startswith("BM_BreakpointEnable/passive:"):
            passive = int(benchmark["name"].split("passive:")[1].split("/")[0])
            benchmark["ipis_sent/op"] = 2.0 * passive
            benchmark["ctx_switches/op"] = 0.0
    return document


def test_headlines_show_the_attributed_counters_of_both_runs():
    document = with_attribution(json.load(open(data("base.json"), encoding="utf-8")))
    results = results_io.parse_results(json.dumps(document), "attributed.json")
    by_title = {h.spec.title: h for h in results_headlines.compute(results)}
    enable = by_title["Breakpoint slowdown: enable/disable"]
    assert enable.header[-1].startswith("kernel cost")
    row = [r for r in enable.rows if r[1] == "passive=8 active=0"][0]
    # Both-zero counters are left out; the system-wide count stays beside the attributed.
    assert row[-1].startswith("ipis_sent/op 0 -> 16; ipis_system/op ")
    assert "ctx_switches" not in row[-1]


def test_report_names_each_counter_source(cli, tmp_path):
    document = with_attribution(json.load(open(data("base.json"), encoding="utf-8")))
    path = tmp_path / "attributed.json"
    path.write_text(json.dumps(document))
    code, _, _ = cli("report", path, "-o", tmp_path / "out", "--no-plots")
    assert code == 0
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "Where the kernel-cost counters come from" in markdown
    assert "unavailable: tracefs is not mounted" in markdown
    assert "ipis_sent/op 0 -> 16" in markdown


@pytest.mark.parametrize("mode,line", [
    ("counting_pass", "Attribution: counting_pass. The timings come from iterations with no "
                      "perf event of ours attached"),
    ("timed", "Attribution: timed. The attributed counters were attached during the timed "
              "iterations"),
    (None, "Attribution: timed."),  # a run from before the counting pass, counters available
])
def test_report_says_how_the_counts_were_taken(cli, tmp_path, mode, line):
    document = with_attribution(json.load(open(data("base.json"), encoding="utf-8")))
    if mode:
        document["context"]["attribution"] = mode
    path = tmp_path / "attributed.json"
    path.write_text(json.dumps(document))
    assert cli("report", path, "-o", tmp_path / "out", "--no-plots")[0] == 0
    assert line in (tmp_path / "out" / "report.md").read_text()


def test_attribution_of_old_and_new_contexts():
    assert results_io.attribution({}) == "off"  # older than the counters
    assert results_io.attribution({"attribution": "counting_pass"}) == "counting_pass"
    old = {"counter_sources": json.dumps({"xcalls": "csd:csd_queue_cpu"})}
    assert results_io.attribution(old) == "timed"
    off = {"counter_sources": json.dumps({"xcalls": "unavailable: --attribution=false"})}
    assert results_io.attribution(off) == "off"
    assert results_io.attribution_mismatch({"attribution": "off"},
                                           {"attribution": "counting_pass"}) is None
    assert "never judged" in results_io.attribution_mismatch(old, {"attribution": "off"})


def test_counter_sources_tolerate_old_and_odd_runs():
    assert results_io.counter_sources({}) == {}
    assert results_io.counter_sources({"counter_sources": "not json"}) == {}
    assert results_io.counter_sources({"counter_sources": "[1]"}) == {}


def test_report_writes_markdown_and_html_with_its_pictures(cli, tmp_path):
    code, out, _ = cli("report", data("base.json"), "-o", tmp_path)
    assert code == 0
    markdown = (tmp_path / "report.md").read_text()
    for title in ("Breakpoint slowdown: thread creation", "IPIs per fd saved by affinity",
                  "Synthesis speed-up per strategy", "Tracing overhead", "Scaling"):
        assert "### " + title in markdown or "## " + title in markdown
    pictures = [line.split("](")[1].rstrip(")") for line in markdown.splitlines()
                if line.startswith("![")]
    assert "BM_BreakpointThread-breakpoints.png" in pictures
    for picture in pictures:
        assert (tmp_path / picture).read_bytes().startswith(PNG_MAGIC)
    html = (tmp_path / "report.html").read_text()
    assert html.count("<img ") == len(pictures) and "NaN" not in html
    assert out.split() == [str(tmp_path / "report.md"), str(tmp_path / "report.html")]


def test_report_refuses_a_foreign_file(cli, tmp_path):
    code, _, err = cli("report", data("foreign.json"), "-o", tmp_path)
    assert code == 2 and "not Google Benchmark JSON" in err


def test_plot_draws_scaling_curves_of_several_files(cli, tmp_path):
    code, out, _ = cli("plot", data("base.json"), data("slow.json"), "-o", tmp_path,
                       "--filter", "Breakpoint")
    assert code == 0
    written = sorted(p.rsplit("/", 1)[1] for p in out.split())
    assert written == ["BM_BreakpointEnable-active.png", "BM_BreakpointEnable-passive.png",
                       "BM_BreakpointThread-breakpoints.png", "BM_BreakpointThread-threads.png"]


def test_plot_history_marks_regressions(cli, tmp_path):
    db = str(tmp_path / "h.sqlite")
    conn = history.open_history(db)
    previous = None
    for fixture in ("base.json", "clean.json", "slow.json"):
        results = results_io.load_results(data(fixture))
        verdicts = [] if previous is None else results_stats.compare_entries(
            previous.entries, results.entries)
        history.record_run(conn, history.RunInfo.from_results(results, "ci", [], 10),
                           results, verdicts, None)
        previous = results
    conn.close()
    code, out, _ = cli("plot", "--history", db, "-o", tmp_path / "trends",
                       "--filter", "BM_BreakpointEnable/passive:8/")
    assert code == 0
    [path] = out.split()
    assert open(path, "rb").read().startswith(PNG_MAGIC)


def test_plot_needs_results_or_a_history(cli, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        cli("plot", "-o", tmp_path)
    assert exit_info.value.code == 2
    code, _, err = cli("plot", "--history", tmp_path / "none.sqlite", "-o", tmp_path)
    assert code == 2 and "no such history" in err


def test_uprobe_headlines_put_threads_and_processes_against_their_base():
    hit = "BM_UprobeHit/probe:%s/threads:%d/manual_time"
    attach = "BM_UprobeAttach/probes:16/processes:%d/manual_time"
    benchmarks = []
    for name, counters in [
            (hit % ("uprobe", 1), {"usecs/hit": 1.0, "hits/s": 1e6}),
            (hit % ("uprobe", 2), {"usecs/hit": 2.0, "hits/s": 1e6}),
            (hit % ("uprobe", 4), {"usecs/hit": 4.0, "hits/s": 1e6}),
            (hit % ("none", 1), {"usecs/hit": 0.01, "hits/s": 1e8}),
            (hit % ("none", 2), {"usecs/hit": 0.01, "hits/s": 2e8}),
            (attach % 0, {"usecs/probe": 100.0}),
            (attach % 16, {"usecs/probe": 300.0})]:
        benchmarks.append(dict({"name": name, "run_name": name, "run_type": "iteration",
                                "repetitions": 1, "real_time": 5.0, "cpu_time": 5.0,
                                "time_unit": "us"}, **counters))
    results = results_io.parse_results(json.dumps({"context": {}, "benchmarks": benchmarks}))
    by_title = {h.spec.title: h for h in results_headlines.compute(results)}
    cost = by_title["Uprobe hit cost against threads"]
    assert cost.header[3] == "usecs/hit"
    assert sorted([r[0], r[1], r[4]] for r in cost.rows) == [
        ["probe=none", "threads=2", "1.0x"],
        ["probe=uprobe", "threads=2", "2.0x"], ["probe=uprobe", "threads=4", "4.0x"]]
    rate = by_title["Uprobe hits/s against threads"]
    assert sorted([r[0], r[1], r[4]] for r in rate.rows) == [
        ["probe=none", "threads=2", "2.00x"],
        ["probe=uprobe", "threads=2", "1.00x"], ["probe=uprobe", "threads=4", "1.00x"]]
    attach_rows = by_title["Uprobe attach cost against processes"].rows
    assert [[r[0], r[1], r[4]] for r in attach_rows] == [["probes=16", "processes=16", "3.0x"]]
