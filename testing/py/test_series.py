"""`tools/perfscale series` without guests: the order of its steps, its resume keys, the
gate's verdict on a step, the step pages, the source diff on two tiny trees, the history
and the dashboard's Releases page. The guests stand in as functions that write result
files (the guest runs themselves are the recorded demonstration,
docs/measurements/2026-12-07-kernel-series.md)."""

import io as text_io
import json
import os
import random
import re

import pytest

from perfscale.gate import stats, steps
from perfscale.history import store, views
from perfscale.plots import kernels as kernel_plots, series_pages as pages
from perfscale.results import io
from perfscale.suite import runner, series
from perfscale.vm import debian, errors, kernel, sources

ENABLE = "BM_BreakpointEnable/passive:0/active:1/placement:same_cpu/real_time"
OPEN = "BM_EventOpen/strategy:cpu_major/events:100/phases:lifecycle/cpus:1/manual_time"

# Each fake kernel: its release, Debian version, and what it costs (us) and counts.
KERNELS = {
    "debian:5.10-cloud": ("5.10.0-46-cloud-amd64", "5.10.262-1", {ENABLE: 100.0, OPEN: 50.0},
                          {ENABLE: 2.0, OPEN: 1.0}),
    "debian:6.1-cloud": ("6.1.0-57-cloud-amd64", "6.1.192-3", {ENABLE: 130.0, OPEN: 50.0},
                         {ENABLE: 2.0, OPEN: 1.0}),
    "debian:6.12-cloud": ("6.12.118+deb12-cloud-amd64", "6.12.118-1~deb12u1",
                          {ENABLE: 130.0, OPEN: 50.0}, {ENABLE: 2.0, OPEN: 4.0}),
}


def document(spec, clock="instructions", repetitions=10, seed=0):
    """A guest's results file of `spec`: every repetition within 0.3% of its cost."""
    release, version, costs, xcalls = KERNELS[spec]
    rng = random.Random(seed)
    rows = []
    for name, cost in costs.items():
        for repetition in range(repetitions):
            rows.append({"name": name, "run_name": name, "run_type": "iteration",
                         "repetitions": repetitions, "repetition_index": repetition,
                         "threads": 1, "iterations": 100, "time_unit": "us",
                         "real_time": cost * (1 + 0.003 * rng.uniform(-1, 1)),
                         "cpu_time": cost, "xcalls/op": xcalls[name],
                         "ipis_sent/op": xcalls[name]})
    context = {"kernel_release": release, "num_cpus": 1, "num_online_cpus": "1",
               "kernel_version": "#1 SMP PREEMPT_DYNAMIC Debian %s (2026-11-28)" % version,
               "host_name": "guest", "vm_kernel": spec, "vm_vcpus": "1",
               "vm_memory_mib": "1024", "vm_clock": clock, "attribution": "counting_pass",
               "vm_accelerator": "tcg", "timings_comparable": "no" if clock == "real" else
               "no", "timings_note": "emulated by QEMU TCG, not run on the CPU"
               if clock == "real" else "instruction clock"}
    if clock == "instructions":
        context["host_name"] = "qemu-instruction-clock"
    return {"context": context, "benchmarks": rows}


def results(tmp_path, spec, name=None, **kwargs):
    path = tmp_path / (name or spec.replace(":", "-") + ".json")
    path.write_text(json.dumps(document(spec, **kwargs)))
    return io.load_results(str(path))


# --- The gate on one step -------------------------------------------------------------

def test_a_release_that_slowed_is_a_step_and_an_aa_is_none(tmp_path):
    old = results(tmp_path, "debian:5.10-cloud")
    again = results(tmp_path, "debian:5.10-cloud", "again.json", seed=1)
    new = results(tmp_path, "debian:6.1-cloud")
    options = steps.options_for("instructions")
    assert options.between_runs_floor_pct == stats.DEFAULT_THRESHOLD_PCT
    verdicts, how = steps.judge_step(old, again, options)
    assert how == "timings and attributed counts" and steps.flagged(verdicts) == []
    verdicts, _ = steps.judge_step(old, new, options)
    moved = {v.name: v for v in steps.flagged(verdicts)}
    assert list(moved) == [ENABLE]
    assert moved[ENABLE].verdict == stats.SLOWER
    assert 0.29 < moved[ENABLE].change < 0.31
    assert moved[ENABLE].ci[0] < moved[ENABLE].change < moved[ENABLE].ci[1]
    # The same step the other way round is a step too: faster.
    verdicts, _ = steps.judge_step(new, old, options)
    assert [v.verdict for v in steps.flagged(verdicts)] == [stats.FASTER]


def test_tcg_time_is_judged_on_counts_both_ways(tmp_path):
    old = results(tmp_path, "debian:6.1-cloud", clock="real")
    new = results(tmp_path, "debian:6.12-cloud", clock="real")
    verdicts, how = steps.judge_step(old, new, steps.options_for("real"))
    assert how.startswith("attributed counts only")
    moved = {v.name: v.verdict for v in steps.flagged(verdicts)}
    assert moved == {OPEN: stats.COUNTS}  # 1 -> 4 cross-CPU calls; the times not judged
    verdicts, _ = steps.judge_step(new, old, steps.options_for("real"))
    assert {v.name: v.verdict for v in steps.flagged(verdicts)} == {OPEN: steps.COUNTS_DOWN}
    with pytest.raises(steps.StepError):
        steps.judge_step(old, results(tmp_path, "debian:6.12-cloud", "ic.json"))


# --- The release table and plots ------------------------------------------------------

def test_runs_are_ordered_by_release_and_a_repeated_release_is_its_own_column(tmp_path):
    runs = [results(tmp_path, "debian:6.12-cloud"), results(tmp_path, "debian:5.10-cloud"),
            results(tmp_path, "debian:6.1-cloud"),
            results(tmp_path, "debian:6.1-cloud", "aa.json", seed=3)]
    shapes = kernel_plots.by_shape(runs)
    assert list(shapes) == ["1 vCPUs, 1024 MiB, instruction clock"]
    ordered = shapes["1 vCPUs, 1024 MiB, instruction clock"]
    assert kernel_plots.column_labels(ordered) == [
        "5.10.0-46-cloud-amd64", "6.1.0-57-cloud-amd64", "6.1.0-57-cloud-amd64 (2)",
        "6.12.118+deb12-cloud-amd64"]
    judged = kernel_plots.judge_releases(ordered)
    lines = kernel_plots.release_table(ordered, judged)
    enable = next(l for l in lines if l.startswith("| " + ENABLE))
    assert "(+30.0% slower)" in enable and enable.count("slower") == 1
    opened = next(l for l in lines if l.startswith("| " + OPEN))
    assert opened.endswith("% counts up) |")  # 6.12's cross-CPU calls
    assert sorted(kernel_plots.release_key(r) for r in ("6.12.1", "6.2.0", "5.10.0-46")) == [
        kernel_plots.release_key("5.10.0-46"), kernel_plots.release_key("6.2.0"),
        kernel_plots.release_key("6.12.1")]


def test_plot_vs_kernel_without_x_draws_against_the_release(tmp_path, cli):
    files = []
    for spec in KERNELS:
        files.append(str(tmp_path / (spec[7:] + ".json")))
        with open(files[-1], "w") as f:
            json.dump(document(spec), f)
    code, out, err = cli("plot", "--vs-kernel", "-o", tmp_path / "p", *files)
    assert code == 0, err
    assert (tmp_path / "p" / "BM_BreakpointEnable-releases.png").stat().st_size > 1000
    assert "(+30.0% slower)" in (tmp_path / "p" / "releases.md").read_text()


# --- Sources: two tiny trees ------------------------------------------------------------

OLD_CORE = """#include <linux/perf_event.h>
#include "internal.h"

static int
perf_install(struct perf_event *event, int cpu)
{
	/* a brace in a comment { */
	const char *s = "}";
	return cpu;
}

SYSCALL_DEFINE5(perf_event_open, struct perf_event_attr __user *, attr_uptr,
		pid_t, pid, int, cpu, int, group_fd, unsigned long, flags)
{
	return perf_install(NULL, cpu);
}

void perf_unchanged(void)
{
	perf_install(NULL, 0);
}
"""
NEW_CORE = OLD_CORE.replace("\treturn cpu;\n", "\tsmp_call_function_single(cpu);\n"
                            "\treturn cpu;\n").replace(
    "void perf_unchanged(void)", "static void perf_added(void)\n{\n}\n\n"
    "void perf_unchanged(void)")
HEADER = """static inline void perf_inline(void) { }
void perf_install(struct perf_event *event, int cpu);
"""


def tree(root, core, header=HEADER, smp=None):
    os.makedirs(root / "kernel" / "events")
    os.makedirs(root / "include" / "linux")
    (root / "kernel" / "events" / "core.c").write_text(core)
    (root / "kernel" / "events" / "internal.h").write_text("int internal;\n")
    (root / "include" / "linux" / "perf_event.h").write_text(header)
    (root / "include" / "linux" / "unused.h").write_text("static inline void perf_x(void) {}\n")
    if smp is not None:
        (root / "kernel" / "smp.c").write_text(smp)
    return sources.Tree(str(root), root.name)


def test_the_changed_functions_are_found_with_their_files_and_hunks(tmp_path):
    old = tree(tmp_path / "linux-old", OLD_CORE)
    new = tree(tmp_path / "linux-new", NEW_CORE,
               HEADER.replace("{ }", "{ barrier(); }"), smp="void smp_x(void)\n{\n}\n")
    # The headers the searched files include, not every header.
    assert old.files == ["kernel/events/core.c", "kernel/events/internal.h",
                         "include/linux/perf_event.h"]
    changes = {c.symbol: c for c in sources.diff_functions(old, new, [
        "perf_install.isra.0", "__x64_sys_perf_event_open", "perf_unchanged", "perf_added",
        "perf_inline", "smp_x", "osq_lock"])}
    assert changes["perf_install.isra.0"].function == "perf_install"
    assert changes["perf_install.isra.0"].status == sources.CHANGED
    assert changes["perf_install.isra.0"].old_files == ["kernel/events/core.c"]
    hunk = changes["perf_install.isra.0"].hunk
    assert "+\tsmp_call_function_single(cpu);" in hunk and hunk.startswith(
        "--- linux-old/kernel/events/core.c")
    assert changes["perf_install.isra.0"].lines_changed == 1
    assert changes["__x64_sys_perf_event_open"].function == "sys:perf_event_open"
    assert changes["__x64_sys_perf_event_open"].status == sources.UNCHANGED
    assert changes["perf_unchanged"].status == sources.UNCHANGED
    assert changes["perf_added"].status == sources.ADDED and changes["perf_added"].changed
    assert changes["perf_inline"].status == sources.CHANGED
    assert changes["perf_inline"].old_files == ["include/linux/perf_event.h"]
    assert changes["smp_x"].status == sources.ADDED  # kernel/smp.c is searched
    assert changes["osq_lock"].status == sources.NOT_FOUND and not changes["osq_lock"].found
    files = sources.file_changes(old, new, ["kernel/events/core.c", "kernel/smp.c"])
    assert files == {"kernel/events/core.c": (5, 0), "kernel/smp.c": (3, 0)}


def test_a_definition_is_not_a_declaration_or_a_call():
    text = ("int foo(int a);\nstatic int bar(void)\n{\n\treturn foo(1);\n}\n"
            "int foo(int a)\n{\n\treturn a;\n}\n#define foo(x) x\n")
    assert sources.definitions(text, "foo") == ["int foo(int a)\n{\n\treturn a;\n}"]
    assert sources.definitions(text, "bar") == ["static int bar(void)\n{\n\treturn foo(1);\n}"]


def test_the_release_comes_from_uname_v():
    context = {"kernel_version": "#1 SMP PREEMPT_DYNAMIC Debian 6.12.118-1~deb12u1 (2026)"}
    assert sources.release_of(context) == sources.Release("6.12", "6.12.118-1~deb12u1")
    assert sources.release_of({"kernel_version": "#1 SMP Sat Dec 5"}) is None


# --- Step pages -----------------------------------------------------------------------

def profile_doc(shares):
    # As the binary names a profile: the benchmark without the time it reports.
    return {"benchmarks": [{"name": ENABLE[:-len("/real_time")], "samples": 400, "symbols": [
        {"symbol": symbol, "dso": "[kernel.kallsyms]", "kernel": True, "self": own,
         "children": own} for symbol, own in shares.items()]}]}


def a_step(tmp_path, changes, old_shares=None, new_shares=None):
    old = results(tmp_path, "debian:5.10-cloud")
    new = results(tmp_path, "debian:6.1-cloud")
    verdicts, how = steps.judge_step(old, new, steps.options_for("instructions"))
    step = pages.Step(1, pages.Side("debian:5.10-cloud", kernel_plots.kernel_of(old),
                                    old.source),
                      pages.Side("debian:6.1-cloud", kernel_plots.kernel_of(new), new.source),
                      verdicts, how)
    if old_shares is not None:
        step.old.profile = profile_doc(old_shares)
        step.new.profile = profile_doc(new_shares)
    step.changes = changes
    step.sources = "linux-old against linux-new"
    return step


def test_a_step_whose_moved_function_changed_is_explained_on_its_page(tmp_path):
    change = sources.FunctionChange("perf_install.isra.0", "perf_install",
                                    ["kernel/events/core.c"], ["kernel/events/core.c"],
                                    sources.CHANGED, "--- a\n+++ b\n+\tsmp_call();", 1)
    step = a_step(tmp_path, [change], {"perf_install.isra.0": 0.10, "osq_lock": 0.5},
                  {"perf_install.isra.0": 0.40, "osq_lock": 0.5})
    assert pages.moved_symbols(step) == ["perf_install.isra.0"]  # osq_lock did not move
    state, why = pages.explanation(step)
    assert state == pages.EXPLAINED and "perf_install (kernel/events/core.c" in why
    path = pages.write_step(step, str(tmp_path / "steps"))
    text = open(path).read()
    assert text.startswith("# Step 1: 5.10.0-46-cloud-amd64 -> 6.1.0-57-cloud-amd64: "
                           "1 benchmark(s) moved, explained")
    assert "| %s | slower | +30.0%% [" % ENABLE in text
    assert "| perf_install.isra.0 | [k] | 10.0% | 40.0% (+30.0) |" in text
    assert "+\tsmp_call();" in text and "## Explanation: explained" in text
    assert os.path.isfile(path[:-3] + ".html")


def test_a_step_explained_for_one_benchmark_and_not_another_is_partly_explained(tmp_path):
    old = results(tmp_path, "debian:5.10-cloud")
    new = results(tmp_path, "debian:6.12-cloud")  # ENABLE slower, OPEN's counts up
    verdicts, how = steps.judge_step(old, new, steps.options_for("instructions"))
    step = pages.Step(2, pages.Side("a", "5.10", old.source, profile_doc(
        {"perf_install": 0.1})), pages.Side("b", "6.12", new.source, profile_doc(
            {"perf_install": 0.4})), verdicts, how, changes=[sources.FunctionChange(
                "perf_install", "perf_install", ["k.c"], ["k.c"], sources.CHANGED, "-a\n+b")],
        sources="x")
    assert [v.name for v in step.flagged] == [ENABLE, OPEN]
    assert pages.benchmark_explanation(step, ENABLE)[0] == pages.EXPLAINED
    assert pages.benchmark_explanation(step, OPEN) == (
        pages.UNEXPLAINED, "no kernel function's share of its samples moved by 1 point or more")
    state, why = pages.explanation(step)
    assert state == pages.PARTLY and why.startswith("1 of 2 moved benchmarks")
    text = open(pages.write_step(step, str(tmp_path / "s"))).read()
    assert "| %s | unexplained | no kernel function" % OPEN in text


@pytest.mark.parametrize("case", ["no profile", "nothing moved", "no sources", "unchanged"])
def test_a_step_without_a_cause_is_named_unexplained_with_the_reason(tmp_path, case):
    unchanged = sources.FunctionChange("perf_install", "perf_install", ["k.c"], ["k.c"],
                                       sources.UNCHANGED)
    if case == "no profile":
        step = a_step(tmp_path, None)
        step.old.profile_note = "the profiled run failed"
    elif case == "nothing moved":
        step = a_step(tmp_path, [], {"perf_install": 0.3}, {"perf_install": 0.305})
    elif case == "no sources":
        step = a_step(tmp_path, None, {"perf_install": 0.1}, {"perf_install": 0.4})
    else:
        step = a_step(tmp_path, [unchanged], {"perf_install": 0.1}, {"perf_install": 0.4})
    state, why = pages.explanation(step)
    assert state == pages.UNEXPLAINED
    assert {"no profile": "the profiled run failed", "nothing moved": "no kernel function",
            "no sources": "could not be compared",
            "unchanged": "none of the 1 kernel functions"}[case] in why
    text = open(pages.write_step(step, str(tmp_path / "s"))).read()
    assert "## Explanation: unexplained" in text and "moved, unexplained" in text


# --- The series: ordering, resume, skipped kernels, history ---------------------------

@pytest.fixture
def guests(tmp_path, monkeypatch):
    """Kernels and guests stood in for: resolve_kernel gives a file per kernel, and a
    guest writes its kernel's results (and profile); `runs` lists what was measured."""
    monkeypatch.setenv(runner.STAND_IN_ENV, "fake-binary v1")
    runs = []
    broken = set()

    def resolve(spec):
        if spec == "debian:4.19-cloud":
            raise errors.VmError("apt knows no linux-image-4.19* package")
        if spec == "debian:nonsense":
            raise errors.VmUsageError("--kernel: unknown Debian kernel 'debian:nonsense'")
        path = tmp_path / "kernels" / spec.replace(":", "_")
        path.parent.mkdir(exist_ok=True)
        path.write_text(spec)
        return kernel.Kernel(spec, str(path), spec)

    def measure(settings, options, spec, log_path, tag):
        runs.append((spec, options.profile, list(options.flags)))
        if spec in broken:
            with open(log_path, "w") as log:
                log.write("perfscale vm: %s (vmlinuz), 1 vCPUs, 1024 MiB, TCG\n"
                          "perfscale vm: the kernel did not reach /init in 120 s (tcg, 1 "
                          "vCPUs); last console lines:\n  | x86: Booting SMP configuration:\n"
                          % spec)
            return 1
        with open(options.out, "w") as f:
            json.dump(document(spec, seed=len(runs)), f)
        if options.profile:
            share = 0.4 if spec != "debian:5.10-cloud" else 0.1
            with open(options.out + ".profile.json", "w") as f:
                json.dump(profile_doc({"perf_install.isra.0": share}), f)
        return 0

    roots = {}
    for version, core in (("5.10.262-1", OLD_CORE), ("6.1.192-3", NEW_CORE),
                          ("6.12.118-1~deb12u1", NEW_CORE)):
        tree(tmp_path / "src" / version, core)
        roots[version] = str(tmp_path / "src" / version)
    monkeypatch.setattr(kernel, "resolve_kernel", resolve)
    monkeypatch.setattr(series, "measure", measure)
    monkeypatch.setattr(sources, "fetch", lambda release, cache=None, log=None:
                        roots[release.version])
    return runs, broken


def settings_for(tmp_path, kernels, **kwargs):
    return series.Settings(kernels=kernels, run_args=["--quick"], out=str(tmp_path / "out"),
                           history=str(tmp_path / "history.sqlite"),
                           gate=steps.options_for("instructions"), **kwargs)


def run_series(settings):
    out = text_io.StringIO()
    status = series.run(settings, series.Progress(len(settings.kernels), out))
    return status, out.getvalue()


def test_the_default_kernels_are_each_lines_newest_oldest_first():
    def build(line, flavour="cloud", rc=False):
        return debian.Build(line=line, flavour=flavour, version=line, release=line, suite=None,
                            image="linux-image-%s" % line, config=None, rc=rc)
    builds = [build("7.3", rc=True), build("6.12"), build("7.1", flavour="rt"), build("5.10"),
              build("6.1"), build("6.16"), build("6.12", flavour="")]
    # Oldest line first; a line with no cloud build, or only release candidates, is none.
    assert series.default_kernels(builds) == ["debian:5.10-cloud", "debian:6.1-cloud",
                                              "debian:6.12-cloud", "debian:6.16-cloud"]


def test_the_eta_is_the_pace_so_far_times_what_is_left():
    progress = series.Progress(4, text_io.StringIO())
    assert progress.eta(3) is None and "ETA unknown" in progress.eta_text(3)
    progress.durations += [100.0, 200.0]
    assert progress.eta(3, running_for=50.0) == 100.0 + 2 * 150.0
    assert progress.eta(1, running_for=400.0) == 0.0  # overdue: not negative
    assert progress.eta(0) == 0.0 and progress.eta_text(0) == "nothing left to measure"
    assert progress.eta_text(2) == "ETA 5m00s for 2 more (at 2m30s a kernel)"


def test_the_resume_key_changes_with_what_made_the_run_and_only_that(tmp_path):
    settings = settings_for(tmp_path, ["debian:6.1-cloud"])
    key = series.measurement_key("bin", "vmlinuz", settings, 0)
    assert key == series.measurement_key("bin", "vmlinuz", settings, 0)
    other = [series.measurement_key("bin2", "vmlinuz", settings, 0),
             series.measurement_key("bin", "vmlinuz2", settings, 0),
             series.measurement_key("bin", "vmlinuz", settings, 1),
             series.measurement_key("bin", "vmlinuz", settings_for(tmp_path, [], cpus=2), 0),
             series.measurement_key("bin", "vmlinuz", settings_for(tmp_path, [],
                                                                   repetitions=20), 0),
             series.measurement_key("bin", "vmlinuz", settings_for(tmp_path, [],
                                                                   clock="real"), 0)]
    assert key not in other and len(set(other)) == len(other)


def test_a_series_judges_each_release_against_the_one_before_and_explains_it(tmp_path,
                                                                             guests):
    runs, _broken = guests
    kernels = ["debian:5.10-cloud", "debian:6.1-cloud", "debian:6.1-cloud",
               "debian:6.12-cloud"]
    status, said = run_series(settings_for(tmp_path, kernels))
    assert status == 0, said
    # Measured in the order given, 6.1 twice (an A/A); then both sides of each flagged
    # step profiled, filtered to the benchmarks that moved.
    assert [(spec, prof) for spec, prof, _ in runs] == [
        ("debian:5.10-cloud", False), ("debian:6.1-cloud", False),
        ("debian:6.1-cloud", False), ("debian:6.12-cloud", False),
        ("debian:5.10-cloud", True), ("debian:6.1-cloud", True),
        ("debian:6.1-cloud", True), ("debian:6.12-cloud", True)]
    assert runs[4][2][-1] == "--benchmark_filter=^(%s)$" % ENABLE.replace(
        "/", "/").replace(":", ":")
    summary = json.loads((tmp_path / "out" / "steps.json").read_text())
    flagged = {(s["old"], s["new"]): [f["verdict"] for f in s["flagged"]]
               for s in summary["steps"]}
    assert flagged == {("5.10.0-46-cloud-amd64", "6.1.0-57-cloud-amd64"): ["slower"],
                       ("6.1.0-57-cloud-amd64", "6.1.0-57-cloud-amd64"): [],  # the A/A
                       ("6.1.0-57-cloud-amd64", "6.12.118+deb12-cloud-amd64"): ["counts up"]}
    first = summary["steps"][0]
    assert first["explanation"][0] == "explained" and "perf_install" in first["explanation"][1]
    page = (tmp_path / "out" / "steps" / (first["page"])).read_text()
    assert "smp_call_function_single" in page  # the hunk
    index = (tmp_path / "out" / "index.md").read_text()
    assert re.search(r"\| 130\.\d \(\+30\.\d% slower\) \|", index) and "## Wall time" in index
    assert "steps/" + first["page"] in index
    # The HTML index reads on to the HTML step pages, which sit beside the .md ones.
    html_page = first["page"][:-len(".md")] + ".html"
    assert 'href="steps/%s"' % html_page in (tmp_path / "out" / "index.html").read_text()
    assert (tmp_path / "out" / "steps" / html_page).is_file()
    assert "ETA" in said and "step 1, 5.10.0-46-cloud-amd64 -> 6.1.0-57-cloud-amd64: 1 " \
        "benchmark(s) moved" in said
    # The history: one lineage of the series' own, each run against the one before.
    conn = store.open_history(str(tmp_path / "history.sqlite"))
    try:
        rows = store.all_runs(conn)
        assert [r["config"] for r in rows] == ["series: --quick"] * 4
        assert [r["baseline_id"] for r in rows] == [None, rows[0]["id"], rows[1]["id"],
                                                    rows[2]["id"]]
        points = views.release_series(conn, ENABLE)
        assert [(p["kernel"], p["verdict"]) for p in points] == [
            ("5.10.0-46-cloud-amd64", None), ("6.1.0-57-cloud-amd64", "slower"),  # arrived
            ("6.12.118+deb12-cloud-amd64", "no significant change")]
    finally:
        conn.close()
    # Again: nothing measured or recorded twice.
    del runs[:]
    status, said = run_series(settings_for(tmp_path, kernels))
    assert status == 0 and runs == []
    assert said.count("measured earlier with the same binary") == 4
    conn = store.open_history(str(tmp_path / "history.sqlite"))
    try:
        assert len(store.all_runs(conn)) == 4
    finally:
        conn.close()


def test_a_kernel_that_does_not_boot_is_skipped_with_its_console(tmp_path, guests):
    runs, broken = guests
    broken.add("debian:6.1-cloud")
    status, said = run_series(settings_for(tmp_path, ["debian:5.10-cloud", "debian:6.1-cloud",
                                                      "debian:6.12-cloud"], profile=False))
    assert status == 1
    assert "[2/3] debian:6.1-cloud: skipped, did not boot" in said
    assert "x86: Booting SMP configuration:" in said
    summary = json.loads((tmp_path / "out" / "steps.json").read_text())
    assert [(s["old"], s["new"]) for s in summary["steps"]] == [
        ("5.10.0-46-cloud-amd64", "6.12.118+deb12-cloud-amd64")]
    assert summary["steps"][0]["explanation"][0] == "unexplained"  # --no-profile
    assert summary["kernels"][1]["state"] == "did not boot"
    # The failed kernel is tried again on the next start; the others are not.
    del runs[:]
    broken.clear()
    status, _ = run_series(settings_for(tmp_path, ["debian:5.10-cloud", "debian:6.1-cloud",
                                                   "debian:6.12-cloud"], profile=False))
    assert status == 0 and [spec for spec, _p, _f in runs] == ["debian:6.1-cloud"]


def test_a_kernel_the_archive_lacks_is_skipped_and_a_bad_name_stops_before_any_guest(
        tmp_path, guests):
    runs, _broken = guests
    status, said = run_series(settings_for(tmp_path, ["debian:4.19-cloud", "debian:5.10-cloud",
                                                      "debian:6.1-cloud"], profile=False,
                                           sources=False))
    assert status == 1 and "[1/3] debian:4.19-cloud: skipped, not fetched: apt knows no" in said
    assert [spec for spec, _p, _f in runs] == ["debian:5.10-cloud", "debian:6.1-cloud"]
    del runs[:]
    with pytest.raises(errors.VmUsageError):
        run_series(settings_for(tmp_path, ["debian:5.10-cloud", "debian:nonsense"]))
    assert runs == []


def test_the_series_command_checks_its_options_first(cli, capsys, tmp_path):
    def usage_error(*argv):
        with pytest.raises(SystemExit) as exited:
            cli("series", *argv)
        assert exited.value.code == 2
        return capsys.readouterr().err
    assert "names no kernel" in usage_error("--kernels", "", "--out", tmp_path)
    assert "no such kernel image" in usage_error("--kernels", tmp_path / "nope")
    assert "from 9 repetitions" in usage_error("--repetitions", "3")
    assert "--repetitions is the series' own" in usage_error("--", "--quick",
                                                             "--repetitions", "4")
    assert "--clock must be" in usage_error("--clock", "sometimes")
    assert "--mem must be MiB" in usage_error("--mem", "100")


def test_the_releases_page_draws_a_line_per_lineage_and_marks_the_steps(tmp_path, guests):
    """(Its query on PostgreSQL: test_dashboard's, beside the other engine tests.)"""
    from perfscale.web import app as web_app
    settings = settings_for(tmp_path, ["debian:5.10-cloud", "debian:6.1-cloud"],
                            profile=False)
    status, said = run_series(settings)
    assert status == 0, said
    client = web_app.create_app(settings.history).test_client()
    page = client.get("/releases?name=" + ENABLE)
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    data = json.loads(text.split('<script type="application/json" id="data">')[1]
                      .split("</script>")[0])
    assert data["releases"] == ["5.10.0-46-cloud-amd64", "6.1.0-57-cloud-amd64"]
    [line] = data["lines"]
    assert "series: --quick" in line["lineage"]
    assert [(p["verdict"], p["step"]) for p in line["points"]] == [(None, False),
                                                                   ("slower", True)]
    assert '<tr class="step">' in text and "compare</a>" in text


def _source_archive(tmp_path, served, listed=("6.19.14-1~bpo13+1", "6.19.10-1~bpo13+1")):
    """A real apt source repository (a flat one, file: URIs) listing linux at `listed`
    (6.19.14 and 6.19.10 of trixie-backports' kind), whose archive holds the upstream
    tarballs of the versions in `served` only; apt reads it through options of its own."""
    import hashlib
    import subprocess
    import tarfile
    repo = tmp_path / "repo"
    repo.mkdir()
    stanzas = []
    for version in listed:
        upstream = version.split("-")[0]
        name = "linux_%s.orig.tar.xz" % upstream
        tree = tmp_path / "tree" / ("linux-" + upstream)
        (tree / "kernel" / "events").mkdir(parents=True)
        (tree / "kernel" / "events" / "core.c").write_text(
            "static int perf_release(void)\n{\n\treturn %s;\n}\n" % upstream.split(".")[-1])
        with tarfile.open(repo / name, "w:xz") as archive:
            archive.add(tree, arcname=tree.name)
        data = (repo / name).read_bytes()
        if upstream not in served:
            (repo / name).unlink()  # listed, not served: the archive's 404
        stanzas.append(
            "Package: linux\nBinary: linux-source-6.19\nVersion: %s\nMaintainer: k <k@k>\n"
            "Architecture: all\nFormat: 3.0 (quilt)\nDirectory: .\nFiles:\n %s %d %s\n"
            "Checksums-Sha256:\n %s %d %s\n" % (
                version, hashlib.md5(data).hexdigest(), len(data), name,
                hashlib.sha256(data).hexdigest(), len(data), name))
    (repo / "Sources").write_text("\n".join(stanzas))
    state = tmp_path / "apt"
    for folder in ("lists/partial", "cache/archives/partial"):
        (state / folder).mkdir(parents=True)
    (state / "list").write_text("deb-src [trusted=yes] file:%s ./\n" % repo)
    options = ["-o", "Dir::Etc::SourceList=%s" % (state / "list"),
               "-o", "Dir::Etc::SourceParts=/nonexistent", "-o", "Dir::State::Lists=%s"
               % (state / "lists"), "-o", "Dir::Cache=%s" % (state / "cache")]
    subprocess.run(["apt-get"] + options + ["update", "-qq"], check=True,
                   capture_output=True)
    return lambda tool, suite: [tool] + options


def test_a_version_whose_tarball_is_not_served_has_its_line_neighbour_stand_in(
        tmp_path, monkeypatch):
    # 2026-12-07: trixie-backports listed linux 6.19.14-1~bpo13+1 and answered 404 for its
    # files, while it served 6.19.10's tarball; the step was left unexplained.
    monkeypatch.setattr(sources, "apt_command", _source_archive(tmp_path, {"6.19.10"}))
    monkeypatch.setattr(sources, "SUITES", (None,))
    tree = sources.tree_for(sources.Release("6.19", "6.19.14-1~bpo13+1"),
                            cache=str(tmp_path / "cache"))
    assert tree.label == "linux-6.19.10"
    assert tree.origin.startswith("linux-6.19.10 standing in for 6.19.14-1~bpo13+1")
    assert "did not serve linux_6.19.14.orig.tar.xz (File not found" in tree.origin
    assert tree.find("perf_release") == {
        "kernel/events/core.c": ["static int perf_release(void)\n{\n\treturn 10;\n}"]}


def test_a_version_served_is_its_own_tree_and_nothing_served_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "apt_command", _source_archive(tmp_path, {"6.19.14"}))
    monkeypatch.setattr(sources, "SUITES", (None,))
    tree = sources.tree_for(sources.Release("6.19", "6.19.14-1~bpo13+1"),
                            cache=str(tmp_path / "cache"))
    assert tree.label == "linux-6.19.14" and "standing in" not in tree.origin
    assert "upstream tarball of 6.19.14-1~bpo13+1" in tree.origin
    (tmp_path / "repo" / "linux_6.19.14.orig.tar.xz").unlink()
    with pytest.raises(sources.SourceError) as raised:
        sources.fetch(sources.Release("6.19", "6.19.10-1~bpo13+1"), str(tmp_path / "cache"))
    message = str(raised.value)
    assert "no sources of Debian's linux 6.19.10-1~bpo13+1" in message
    assert "did not serve linux_6.19.10.orig.tar.xz" in message
    assert "did not serve linux_6.19.14.orig.tar.xz" in message
    assert not (tmp_path / "cache" / "sources" / "6.19.10-1~bpo13+1").exists()


def test_a_download_failure_is_named_without_the_archive_address():
    # apt-helper's own line, as the archive answered on 2026-12-07 (address made up).
    stderr = ("W: Download is performed unsandboxed as root\n"
              "E: Failed to fetch http://archive.invalid/debian/pool/main/l/linux/"
              "linux_6.16.12.orig.tar.xz  404  Not Found [IP: 203.0.113.80 80]\n"
              "E: Download Failed\n")
    assert sources._fetch_failure(stderr) == "404 Not Found"


def test_a_release_candidate_is_its_own_tree_and_never_a_stand_in(tmp_path, monkeypatch):
    listed = ("7.3~rc7-1~exp1", "7.3.4-1~bpo13+1")
    monkeypatch.setattr(sources, "apt_command",
                        _source_archive(tmp_path, {"7.3~rc7"}, listed))
    monkeypatch.setattr(sources, "SUITES", (None,))
    tree = sources.tree_for(sources.Release("7.3", "7.3~rc7-1~exp1"),
                            cache=str(tmp_path / "cache"))
    assert tree.label == "linux-7.3~rc7" and "standing in" not in tree.origin
    with pytest.raises(sources.SourceError) as raised:
        sources.fetch(sources.Release("7.3", "7.3.4-1~bpo13+1"), str(tmp_path / "cache"))
    assert "did not serve linux_7.3.4.orig.tar.xz" in str(raised.value)
