"""`report` shows a profiled run's top symbols from its --profile side file."""

import json
import shutil

from conftest import data
from perfscale.plots import report
from perfscale.results import io as results_io

PROFILE = {
    "event": "cpu-clock", "frequency_hz": 4000, "kernel_symbols": "ok",
    "benchmarks": [{
        "name": "BM_BreakpointEnable/passive:8/active:0/placement:other_cpus",
        "lost": 0, "note": "", "samples": 1000,
        "symbols": [
            {"symbol": "main", "dso": "all", "kernel": False, "self": 0.0, "children": 1.0},
            {"symbol": "smp_call_function_single", "dso": "[kernel.kallsyms]", "kernel": True,
             "self": 0.7901, "children": 0.95},
            {"symbol": "llist_add_batch", "dso": "[kernel.kallsyms]", "kernel": True,
             "self": 0.0994, "children": 0.0994},
        ]}],
}


def profiled_results(tmp_path, profile_name="run.json.profile.json", profile=PROFILE):
    with open(data("base.json")) as f:
        document = json.load(f)
    # Named as the binary wrote it, somewhere else: the report finds it beside the results.
    document["context"]["profile_file"] = "/elsewhere/" + profile_name
    results_path = tmp_path / "run.json"
    results_path.write_text(json.dumps(document))
    if profile is not None:
        (tmp_path / profile_name).write_text(
            profile if isinstance(profile, str) else json.dumps(profile))
    return results_io.load_results(str(results_path))


def test_report_lists_top_symbols_by_self_and_children(tmp_path):
    results = profiled_results(tmp_path)
    md, _ = report.write_report(results, str(tmp_path / "out"), plots=False)
    text = open(md).read()
    assert "## Profiles" in text
    assert "### BM_BreakpointEnable/passive:8/active:0/placement:other_cpus" in text
    assert "| 79.01% | 95.00% | [k] | smp_call_function_single | [kernel.kallsyms] |" in text
    by_self = text.index("By self:")
    by_children = text.index("Kernel frames by children:")
    # By self the kernel function leads; by children only kernel frames are listed.
    assert text.index("smp_call_function_single", by_self) < text.index("llist_add_batch",
                                                                          by_self)
    assert "main" not in text[by_self:by_children]  # no self samples: not in the self table
    assert "| main |" not in text[by_children:]
    assert "| 79.01% | 95.00% | [k] | smp_call_function_single" in text[by_children:]


def test_report_without_profile_has_no_section(tmp_path):
    shutil.copy(data("base.json"), tmp_path / "run.json")
    results = results_io.load_results(str(tmp_path / "run.json"))
    md, _ = report.write_report(results, str(tmp_path / "out"), plots=False)
    assert "Profiles" not in open(md).read()


def test_missing_or_corrupt_profile_is_said_not_fatal(tmp_path):
    missing = profiled_results(tmp_path, profile=None)
    md, _ = report.write_report(missing, str(tmp_path / "out1"), plots=False)
    assert "is missing" in open(md).read()
    corrupt = profiled_results(tmp_path, "bad.profile.json", profile='{"benchmarks": [{"nam')
    md, _ = report.write_report(corrupt, str(tmp_path / "out2"), plots=False)
    assert "cannot read profile file" in open(md).read()
    foreign = profiled_results(tmp_path, "foreign.profile.json",
                               profile={"benchmarks": [{"name": "x", "symbols": [{"self": "a"}]}]})
    md, _ = report.write_report(foreign, str(tmp_path / "out3"), plots=False)
    assert "without self/children" in open(md).read()
