"""What the hostile sweep of issue 33 found in the Python tools, one test each.

Each failed on the main of the day before its fix. Run:
    tools/py/python -m pytest -q testing/py/test_hostile_sweep.py
"""

import json
import os

import pytest

from conftest import FAKE_RUN, data

DROPPED = ("BM_BreakpointThread/breakpoints:4/parallelism:2/threads:20/real_time",
           "BM_BreakpointThread/breakpoints:4/parallelism:2/threads:5/real_time")


def _without(tmp_path, fixture, names, out="fewer.json"):
    """A copy of `fixture` without the rows of `names`: a run that lost benchmarks, as a
    run with breakpoint slots held elsewhere did."""
    with open(data(fixture), encoding="utf-8") as f:
        doc = json.load(f)
    doc["benchmarks"] = [b for b in doc["benchmarks"] if b["run_name"] not in names]
    path = tmp_path / out
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_compare_fails_closed_on_rows_that_vanished_from_the_new_run(cli, tmp_path):
    """Item 1: before, 'not compared: in the baseline only' and 'no regression', exit 0."""
    code, out, _ = cli("compare", data("base.json"), _without(tmp_path, "clean.json", DROPPED),
                       "--no-table")
    assert code == 2, out
    assert "no regression" not in out
    last = out.rstrip().splitlines()[-1]
    assert "cannot judge 2 benchmark(s) of the baseline that the new run lacks" in last
    for name in DROPPED:
        assert name in last


def test_compare_still_passes_rows_that_are_new(cli, tmp_path):
    """The other direction is no loss: a benchmark the baseline lacked is only shown."""
    code, out, _ = cli("compare", _without(tmp_path, "base.json", DROPPED), data("clean.json"),
                       "--no-table")
    assert code == 0, out
    assert "new benchmark, not in the baseline" in out


def test_nightly_fails_closed_on_rows_that_vanished_and_records_nothing(cli, tmp_path,
                                                                       monkeypatch):
    """Item 1 in nightly: before, 'no regression against run 1', exit 0, recorded as a
    baseline that lacks the rows."""
    monkeypatch.setenv("PERFSCALE_BINARY", FAKE_RUN)
    monkeypatch.setenv("PERFSCALE_COMPARE_PY", str(tmp_path / "no-compare.py"))
    fewer = _without(tmp_path, "clean.json", DROPPED)
    db, reports = tmp_path / "h.sqlite", tmp_path / "nightly"
    common = ("nightly", "--history", db, "--report-dir", reports, "--no-plots", "--config",
              "ci", "--", "--")
    assert cli(*common, "--fixture=base.json")[0] == 0
    # fake_run copies testing/py/data/NAME; a path outside it works the same (os.path.join)
    code, out, err = cli(*common, "--fixture=%s" % fewer)
    assert code == 2, out + err
    assert "no regression" not in out
    assert "the new run lacks" in err and DROPPED[0] in err
    import sqlite3
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1
    finally:
        conn.close()
