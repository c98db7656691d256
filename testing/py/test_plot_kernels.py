"""`plot --vs-kernel`: a kernel A/B drawn and tabled, one line per kernel (issue 37).

Synthetic runs of BM_BreakpointThread on two kernels: on "5.10" the cost per created
thread with 4 breakpoints grows with the live threads (5 us more per thread alive, as a
list walked under one mutex would make it), on "6.12" it does not."""

import json
import os

import pytest

from perfscale.plots import kernels
from perfscale.results import io

THREADS = (20, 100, 500)


def _run(tmp_path, kernel, cost, cpus=4):
    rows = []
    for breakpoints in (0, 4):
        for threads in THREADS:
            name = "BM_BreakpointThread/breakpoints:%d/parallelism:1/threads:%d/real_time" % (
                breakpoints, threads)
            for repetition in range(3):
                usecs = cost(breakpoints, threads) + repetition  # a little spread
                rows.append({"name": name, "run_name": name, "run_type": "iteration",
                             "repetition_index": repetition, "iterations": 1,
                             "real_time": usecs * 1000.0 * threads, "cpu_time": 1.0,
                             "time_unit": "ns", "usecs/op": usecs})
    path = tmp_path / ("%s-cpus%d.json" % (kernel, cpus))
    path.write_text(json.dumps({"context": {"kernel_release": kernel, "num_cpus": cpus,
                                            "vm_vcpus": cpus, "host_name": "guest"},
                                "benchmarks": rows}))
    return str(path)


def _files(tmp_path):
    old = _run(tmp_path, "5.10.0-46-cloud-amd64",
               lambda b, t: 700 + (5 * t if b else 0))
    new = _run(tmp_path, "6.12.118+deb12-cloud-amd64", lambda b, t: 700 + (100 if b else 0))
    return old, new


def test_the_table_has_a_column_and_a_ratio_per_kernel(tmp_path):
    runs = [io.load_results(f) for f in _files(tmp_path)]
    written, lines = kernels.ab(runs, ["threads"], "usecs/op", str(tmp_path / "out"),
                                ratio="breakpoints")
    text = "\n".join(lines)
    assert "BM_BreakpointThread, 4 vCPUs:" in text
    assert ("| threads | parameters | 5.10.0-46-cloud-amd64 | 6.12.118+deb12-cloud-amd64 | "
            "5.10.0-46-cloud-amd64 breakpoints:4 / breakpoints:0 |") in text
    # 500 threads, 4 breakpoints: 701 + 2500 on 5.10 (medians), 801 on 6.12.
    row = next(l for l in lines if l.startswith("| 500 | breakpoints=4 parallelism=1 |"))
    assert row == "| 500 | breakpoints=4 parallelism=1 | 3201 | 801 | 4.57x | 1.14x |"
    row = next(l for l in lines if l.startswith("| 20 | breakpoints=4 parallelism=1 |"))
    assert "| 1.14x | 1.14x |" in row  # 801/701: the same on both at 20 threads
    paths = [p for p, _ in written]
    assert str(tmp_path / "out" / "BM_BreakpointThread-cpus4.png") in paths
    assert os.path.getsize(tmp_path / "out" / "BM_BreakpointThread-cpus4.png") > 1000
    assert (tmp_path / "out" / "ab.md").read_text() == text + "\n"


def test_the_command_prints_the_table_and_refuses_what_it_cannot_draw(cli, tmp_path):
    old, new = _files(tmp_path)
    code, out, err = cli("plot", "--vs-kernel", "--x", "threads*parallelism", "--metric",
                         "usecs/op", "--ratio", "breakpoints", "-o", str(tmp_path / "o"),
                         old, new)
    assert code == 0, err
    assert "| 500 | breakpoints=4 |" in out  # threads x parallelism: 500 x 1
    code, _, err = cli("plot", "--vs-kernel", "--x", "processes", "-o", str(tmp_path / "p"),
                       old, new)
    assert code == 2 and "no benchmark has every --x parameter (processes)" in err
    with pytest.raises(SystemExit):  # --metric without --x: the release view has none
        cli("plot", "--vs-kernel", "--metric", "usecs/op", "-o", str(tmp_path / "q"), old)
    with pytest.raises(SystemExit):
        cli("plot", "--x", "threads", "-o", str(tmp_path / "q"), old)  # no --vs-kernel
