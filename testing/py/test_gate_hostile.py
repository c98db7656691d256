"""What a hostile sweep found in the nightly gate (issue 15, items 1-3), one test each.

Each failed before its fix: concurrent creation of a new history, a killed nightly leaving
its runner behind or a half-finished run as the next baseline, and compare passing what
it could not judge.
"""

import json
import multiprocessing
import os
import signal
import subprocess
import sys

import pytest

from conftest import FAKE_RUN, REPO_ROOT, alive, data, wait_for
from perfscale.history import store as history

TOOLS_PY = os.path.join(REPO_ROOT, "tools", "py")


def _open_at_barrier(path, barrier, queue):
    barrier.wait()
    try:
        history.open_history(path).close()
        queue.put("ok")
    except history.HistoryError as err:
        queue.put(str(err))


def test_nightlies_creating_a_new_history_at_once_all_get_it(tmp_path):
    """Four openers released together on a new file, twenty times: every one must get a
    usable history (before: 'not a perfscale history' or 'table runs already exists')."""
    context = multiprocessing.get_context("fork")
    failures = []
    for attempt in range(20):
        path = str(tmp_path / ("h%d.sqlite" % attempt))
        barrier, queue = context.Barrier(4), context.Queue()
        workers = [context.Process(target=_open_at_barrier, args=(path, barrier, queue))
                   for _ in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(120)
        failures += [answer for answer in (queue.get(timeout=10) for _ in workers)
                     if answer != "ok"]
    assert failures == []






def _nightly_process(tmp_path, *run_args, prelude=""):
    """A nightly in its own process (so that it can be killed), with the fake binary."""
    code = ("import sys; sys.path.insert(0, %r)\n%s\nfrom perfscale import cli\n"
            "sys.exit(cli.main(sys.argv[1:]))" % (TOOLS_PY, prelude))
    env = dict(os.environ, PERFSCALE_BINARY=FAKE_RUN,
               PERFSCALE_COMPARE_PY=str(tmp_path / "no-compare.py"))
    return subprocess.Popen(
        [sys.executable, "-c", code, "nightly", "--history", str(tmp_path / "h.sqlite"),
         "--report-dir", str(tmp_path / "nightly"), "--no-plots", "--config", "ci", "--",
         "--"] + list(run_args), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_killing_a_nightly_kills_its_runner_and_the_binary(tmp_path, sig):
    pid_file = tmp_path / "pids"
    nightly = _nightly_process(tmp_path, "--hang=%s" % pid_file)
    try:
        assert wait_for(pid_file.exists, 60), nightly.communicate(timeout=60)[0]
        runner, binary = map(int, pid_file.read_text().split())
        assert alive(runner) and alive(binary)
        os.kill(nightly.pid, sig)
        nightly.wait(30)
        # Bounded wait for the kernel to deliver the signals, not a speed check.
        assert wait_for(lambda: not alive(runner) and not alive(binary), 20), (
            "left running after the nightly died: %s" % [p for p in (runner, binary)
                                                         if alive(p)])
    finally:
        if nightly.poll() is None:
            nightly.kill()
            nightly.wait()


def test_a_nightly_killed_before_its_report_never_becomes_the_baseline(tmp_path):
    first = _nightly_process(tmp_path, "--fixture=base.json")
    assert first.wait(120) == 0, first.stdout.read()
    # A passing run that dies the way SIGKILL does, right after recording: no report.
    killed = _nightly_process(
        tmp_path, "--fixture=clean.json", prelude=(
            "import os, signal\nfrom perfscale.suite import nightly\n"
            "nightly._write_report = lambda *a: os.kill(os.getpid(), signal.SIGKILL)"))
    assert killed.wait(120) == -signal.SIGKILL
    third = _nightly_process(tmp_path, "--fixture=base.json")
    out = third.communicate(timeout=120)[0]
    assert third.returncode == 0, out
    assert "no regression against run 1" in out


@pytest.mark.parametrize("value", ["NaN", "Infinity", '"fast"'])
def test_compare_fails_closed_on_timings_that_are_not_numbers(cli, tmp_path, value):
    document = json.loads(open(data("base.json"), encoding="utf-8").read())
    for item in document["benchmarks"]:
        item["real_time"] = "@@"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(document).replace('"@@"', value))
    for pair in ((data("base.json"), bad), (bad, data("base.json"))):
        code, out, err = cli("compare", "--no-table", *pair)
        assert code == 2, out
        assert "cannot judge" in out + err


def test_compare_fails_closed_when_every_benchmark_errored(cli, tmp_path):
    document = json.loads(open(data("base.json"), encoding="utf-8").read())
    for item in document["benchmarks"]:
        item["error_occurred"], item["error_message"] = True, "SKIPPED: no breakpoint PMU"
    errored = tmp_path / "errored.json"
    errored.write_text(json.dumps(document))
    code, out, err = cli("compare", "--no-table", data("base.json"), errored)
    assert code == 2, out
    assert "cannot judge" in out + err
