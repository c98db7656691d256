"""The dashboard's pieces without a browser: triage states, downsampling, trend data."""

import json
import random
import statistics

import pytest

import synthetic_history
from conftest import pg_history, postgres_missing
from perfscale.history import cluster, sqlite_engine, store as history, triage, views
from perfscale.results import io as results_io, names as results_names
from perfscale.web import app as web_app
from perfscale.gate import stats as gate_stats


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("dash") / "history.sqlite")
    built = synthetic_history.build(path, machines=2, nights=30, benchmarks=2, step_at=18,
                                    judge=False)
    built["path"] = path
    return built


def test_triage_stores_the_state_with_who_when_why_and_keeps_every_change(small):
    conn = history.open_history(small["path"])
    try:
        item = triage.Item("regression", "machine-00", "5b25", 2, "--quick", "BM_X", 3)
        triage.set_state(conn, item, "acknowledged", "alice", "seen")
        triage.set_state(conn, item, "fixed", "bob", "reverted in 6.1.0-29")
        state = triage.states(conn, "machine-00", "5b25", 2, "--quick")[item]
        # Another machine identity is another lineage: none of its states.
        assert item not in triage.states(conn, "machine-00", "", 2, "--quick")
        assert (state["state"], state["who"], state["why"]) == ("fixed", "bob",
                                                                "reverted in 6.1.0-29")
        assert state["changed_at"].endswith("+00:00")
        assert [r["state"] for r in triage.history_of(conn, item)] == ["acknowledged", "fixed"]
        assert item in triage.closed(conn)
        for bad in (dict(state="closed", who="a", why="b"), dict(state="fixed", who="", why="b"),
                    dict(state="fixed", who="a", why=" "),
                    dict(state="fixed", who="a" * 3000, why="b")):
            with pytest.raises(triage.TriageError):
                triage.set_state(conn, item, **bad)
        with pytest.raises(triage.TriageError):
            triage.set_state(conn, triage.Item("alert", "h", "", 1, "c", "n", 1), "new", "a", "b")
        assert len(triage.history_of(conn, item)) == 2  # nothing stored by the refusals
    finally:
        conn.close()


def test_downsampling_keeps_the_marked_points_and_real_runs():
    points = [{"x": i, "y": float(i % 7), "run": i} for i in range(5000)]
    keep = {17, 2500, 4999}
    out = web_app.downsample(points, keep, limit=800)
    assert 700 <= len(out) <= 800 + len(keep)
    runs = [p["run"] for p in out]
    assert runs == sorted(runs) and keep <= set(runs)
    assert all(points[p["run"]] is p for p in out)  # every point drawn is a run's own
    assert web_app.downsample(points[:100], set()) == points[:100]


def test_trend_data_finds_the_step_and_stays_small(small):
    app = web_app.create_app(small["path"])
    lineage = small["lineages"][0]
    run_id = small["runs"][lineage][-1]
    with app.test_request_context():
        conn = web_app._db()
        data = web_app.trend_data(conn, small["step"][1], [history.get_run(conn, run_id)])
    series = data["series"][0]
    assert len(series["points"]) == 30
    assert [abs(c["index"] - 18) <= 3 for c in series["changepoints"]] == [True]
    assert series["changepoints"][0]["kernel_before"] == "6.1.0-28-amd64"
    assert len(json.dumps(data)) < 1_000_000


def test_the_read_only_server_cannot_write_the_history(small):
    client = web_app.create_app(small["path"]).test_client()
    response = client.post("/triage", data={"token": "x" * 20})
    assert response.status_code == 403 and b"read-only" in response.data
    assert client.get("/").status_code == 200
    assert "default-src 'none'" in client.get("/").headers["Content-Security-Policy"]


def test_the_whole_file_is_read_neither_at_start_nor_on_every_request(small, monkeypatch):
    """quick_check reads the whole file: seconds on a fleet's year, for every page when
    each request checked it (docs/measurements/2026-12-02-dashboard.md), 14.5 s before a
    server on a 6.8 GB year answered when start checked it (issue 39)."""
    checks = []
    check_usable = sqlite_engine.Engine.check_usable

    def counted(engine, pages=True):
        checks.append(pages)
        return check_usable(engine, pages)
    monkeypatch.setattr(sqlite_engine.Engine, "check_usable", counted)
    client = web_app.create_app(small["path"]).test_client()
    assert checks == [False]
    assert client.get("/").status_code == 200
    assert client.get("/run/%d" % small["runs"][small["lineages"][0]][-1]).status_code == 200
    # Opened by a request thread once at most (it keeps its connection), never checked.
    assert checks[0] is False and len(checks) <= 2 and not any(checks)


def test_a_damaged_page_fails_the_request_that_meets_it_naming_the_history(small, tmp_path):
    """Without the check at start, damage is found by the query that reads it: the page
    answers 503 with the history's message, and the server goes on serving."""
    import shutil
    import sqlite3
    path = str(tmp_path / "damaged.sqlite")
    shutil.copy(small["path"], path)
    conn = sqlite3.connect(path)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'benchmarks'"
                        ).fetchone()[0]
    conn.close()
    with open(path, "r+b") as f:  # the benchmarks table's root page: garbage
        f.seek((root - 1) * page_size)
        f.write(b"\xff" * page_size)
    client = web_app.create_app(path).test_client()  # starts: the schema is readable
    run = small["runs"][small["lineages"][0]][-1]
    response = client.get("/run/%d" % run)
    assert response.status_code == 503
    assert b"damaged" in response.data and b".recover" in response.data
    assert client.get("/run/%d" % run).status_code == 503  # and again: still serving


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_the_medians_the_database_takes_are_the_samples_medians(engine, tmp_path, request):
    """The trend and scaling pages take each run's median from its packed samples
    (views._median): it must be statistics.median's figure, for odd and even repetitions
    and ties, on both engines."""
    if engine == "sqlite":
        target = str(tmp_path / "history.sqlite")
    else:
        if postgres_missing():
            pytest.skip(postgres_missing())
        target = pg_history(request.getfixturevalue("pg_server"), "t_medians")[cluster.WRITER]
    rng = random.Random(5)
    ctx = {"host_name": "m", "num_online_cpus": "4"}
    name = "BM_X/real_time"
    expected = []
    with history.open_history(target) as conn:
        for night, repetitions in enumerate((1, 2, 3, 4, 10, 10)):
            real = [rng.choice((1000.0, 1000.5)) if night == 5 else rng.uniform(900, 1100)
                    for _ in range(repetitions)]  # night 5: ties
            entry = results_io.Entry(name, results_names.parse_name(name), "ns", real, real)
            info = history.RunInfo("m", 4, "c", ["--"], repetitions, ctx,
                                   recorded_at="2026-12-0%dT00:00:00+00:00" % (night + 1))
            history.record_run(conn, info, results_io.ResultSet("", ctx, {name: entry}), [],
                               None, complete=True)
            expected.append(statistics.median(real))
        machine = info.machine
        assert [r["median_ns"] for r in views.trend(conn, name, "m", machine, 4, "c")] == \
            expected
        assert [r["median_ns"] for r in views.scaling(conn, name)] == expected[-1:]


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_a_benchmark_against_the_kernel_release_on_both_engines(engine, tmp_path, request):
    """views.release_series (the Releases page): each lineage of several releases, its
    latest run on each, the verdict against the run before and that run's release."""
    if engine == "sqlite":
        target = str(tmp_path / "history.sqlite")
    else:
        if postgres_missing():
            pytest.skip(postgres_missing())
        target = pg_history(request.getfixturevalue("pg_server"), "t_releases")[cluster.WRITER]
    name = "BM_X/real_time"
    with history.open_history(target) as conn:
        previous = None
        for config, releases in (("series: --quick", ("5.10", "6.1", "6.1", "6.12")),
                                 ("nightly", ("6.12",))):
            for release in releases:
                ctx = {"host_name": "m", "num_online_cpus": "1", "kernel_release": release}
                real = [float(len(release))] * 3
                entry = results_io.Entry(name, results_names.parse_name(name), "ns", real, real)
                verdict = gate_stats.Verdict(name, "slower" if release == "6.12" else
                                             "no significant change", 0.5)
                previous = history.record_run(
                    conn, history.RunInfo("m", 1, config, ["--quick"], 3, ctx),
                    results_io.ResultSet("", ctx, {name: entry}), [verdict],
                    previous if config != "nightly" else None, complete=True)
        points = views.release_series(conn, name)
    # The nightly's one release is no series; 6.1 shows the run it arrived in (judged
    # against 5.10), not its A/A (judged against 6.1).
    assert [p["kernel"] for p in points] == ["5.10", "6.1", "6.12"]
    assert [p["baseline_kernel"] for p in points] == [None, "5.10", "6.1"]
    assert [p["verdict"] for p in points] == ["no significant change"] * 2 + ["slower"]
    assert {p["config"] for p in points} == {"series: --quick"}


def test_a_regression_marked_invalid_leaves_the_fleets_open_list(small, tmp_path):
    import shutil
    path = str(tmp_path / "copy.sqlite")
    shutil.copy(small["path"], path)
    token = "t" * 20
    client = web_app.create_app(path, token).test_client()
    lineage = small["lineages"][0]
    stepped_run = small["runs"][lineage][18]

    def open_count():
        page = client.get("/?days=365").get_data(as_text=True)
        return page.count('class="bench"')
    before = open_count()
    assert before >= 1
    conn = history.open_history(path, read_only=True)
    machine = history.get_run(conn, stepped_run)["machine"]
    conn.close()
    form = {"kind": "regression", "host": lineage[0], "machine": machine, "cpus": lineage[1],
            "config": lineage[2], "name": small["step"][1], "run_id": stepped_run,
            "state": "invalid", "who": "carol", "why": "a synthetic step", "next": "/"}
    assert client.post("/triage", data=dict(form, token="w" * 20)).status_code == 403
    assert open_count() == before
    response = client.post("/triage", data=form, headers={"X-Perfscale-Token": token})
    assert response.status_code == 303
    assert open_count() == before - 1


def test_the_run_page_shows_the_profile_tops_where_recorded(tmp_path):
    from test_profile_report import profiled_results
    results = profiled_results(tmp_path)
    path = str(tmp_path / "history.sqlite")
    conn = history.open_history(path)
    try:
        run_id = history.record_run(conn, history.RunInfo.from_results(results, "ci", [], 10),
                                    results, [], None)
    finally:
        conn.close()
    page = web_app.create_app(path).test_client().get("/run/%d" % run_id)
    text = page.get_data(as_text=True)
    assert page.status_code == 200
    assert "<h2>Profiles</h2>" in text and "smp_call_function_single" in text
    assert "Headline figures" in text and "All benchmarks" in text


def test_the_mail_lists_the_profile_deltas_and_the_counts_that_moved():
    import copy
    from perfscale.gate import stats as gate_stats
    from perfscale.plots import mail
    from perfscale.results import io as results_io, names as results_names
    from test_profile_report import PROFILE
    name = PROFILE["benchmarks"][0]["name"]

    def entries(scale, xcalls):
        entry = results_io.Entry(name, results_names.parse_name(name), "ns",
                                 [scale * (100 + i) for i in range(10)], [],
                                 {"xcalls/op": [xcalls] * 10, "ipis_sent/op": [1.0] * 10})
        return {name: entry}
    head_profile = copy.deepcopy(PROFILE)
    head_profile["benchmarks"][0]["symbols"][2]["self"] = 0.4
    verdict = gate_stats.Verdict(name, gate_stats.SLOWER, 0.3, 0.001,
                                 counters=[("xcalls/op", 2.0, 4.0)])
    text = mail.regression_mail(("h", 2, "c"), "run 1", "run 2", [entries(1.0, 2.0)],
                                [entries(1.3, 4.0)], [verdict],
                                mail.reproduce_commands([name], 10, 1, "c", ["--quick"], "h.db"),
                                base_profile=PROFILE, head_profile=head_profile)
    lines = text.splitlines()
    time_line = next(l for l in lines if l.endswith(name + ".real_time_ns"))
    assert "+30.0%" in time_line
    assert any(l.endswith(name + ".xcalls/op") and "+100.0%" in l for l in lines)
    assert not any(l.endswith(".ipis_sent/op") for l in lines)  # did not move
    delta = next(l for l in lines if l.endswith("llist_add_batch"))
    assert "9.94%" in delta and "+30.06" in delta and "40.00%" in delta
    assert "tools/perfscale nightly --history h.db --baseline 1 --config c -- --quick" in text


def test_compare_takes_two_kernels_of_a_lineage(small):
    client = web_app.create_app(small["path"]).test_client()
    lineage = small["lineages"][0]
    runs = small["runs"][lineage]
    page = client.get("/compare", query_string={
        "run": runs[-1], "kernel_a": "6.1.0-27-amd64", "kernel_b": "6.1.0-28-amd64"})
    text = page.get_data(as_text=True)
    assert page.status_code == 200
    # the latest complete run of each kernel: the night before the change, and the last
    assert "Compare run %d → run %d" % (runs[14], runs[-1]) in text
    assert "slower" in text and "xcalls/op 2" in text
    missing = client.get("/compare", query_string={
        "run": runs[-1], "kernel_a": "6.1.0-27-amd64", "kernel_b": "9.9"})
    assert missing.status_code == 404
    assert client.get("/compare?a=1").status_code == 400


def test_the_alert_page_shows_the_worst_members_profile_difference(tmp_path):
    from test_profile_report import profiled_results
    from perfscale.history import alerts
    results = profiled_results(tmp_path)
    path = str(tmp_path / "history.sqlite")
    name = "BM_BreakpointEnable/passive:8/active:0/placement:other_cpus"  # in the profile
    conn = history.open_history(path)
    try:
        ids = [history.record_run(conn, history.RunInfo.from_results(results, "ci", [], 10),
                                  results, [], None) for _ in range(2)]
        run = history.get_run(conn, ids[1])
        alerts.open_or_join(conn, "regression", alerts.change_between(
            history.get_run(conn, ids[0]), run), alerts.Member(
                run["host"], run["machine"], run["cpus"], run["config"], name, ids[0], 0.2),
            ids[1])
    finally:
        conn.close()
    page = web_app.create_app(path).test_client().get("/alert/1")
    text = page.get_data(as_text=True)
    assert page.status_code == 200
    assert "<h2>Profile difference</h2>" in text and "self share" in text
    assert 'class="no-profile"' not in text


def test_the_scaling_page_draws_a_line_per_kernel(tmp_path):
    """A kernel A/B of guests on one machine: 5.10's and 6.12's nights at 4 and 8 vCPUs
    are one lineage per size, so the default page keeps only the last kernel's points;
    by=kernel keeps each kernel's latest run, one line per kernel."""
    path = str(tmp_path / "history.sqlite")
    name = "BM_BreakpointThread/breakpoints:4/parallelism:8/threads:256/real_time"
    medians = {}
    with history.open_history(path) as conn:
        night = 0
        for kernel, cost in (("5.10.0-46-cloud-amd64", 29000.0),
                             ("6.12.118+deb12-cloud-amd64", 5000.0)):
            for cpus in (4, 8):
                for _ in range(2):  # two nights each: the later one is the point
                    night += 1
                    real = [cost * cpus + night]
                    ctx = {"host_name": "guest", "num_online_cpus": str(cpus),
                           "kernel_release": kernel}
                    entry = results_io.Entry(name, results_names.parse_name(name), "ns",
                                             real, real)
                    info = history.RunInfo("guest", cpus, "c", ["--"], 1, ctx,
                                           recorded_at="2026-12-%02dT00:00:00+00:00" % night)
                    history.record_run(conn, info, results_io.ResultSet("", ctx, {name: entry}),
                                       [], None, complete=True)
                    medians[(kernel, cpus)] = real[0]
        by_kernel = {(p["kernel"], p["cpus"]): p["median_ns"]
                     for p in views.scaling(conn, name, per_kernel=True)}
        latest = {(p["kernel"], p["cpus"]): p["median_ns"] for p in views.scaling(conn, name)}
    assert by_kernel == medians
    assert latest == {k: v for k, v in medians.items() if k[0].startswith("6.12")}
    client = web_app.create_app(path).test_client()
    page = client.get("/scaling?by=kernel&name=" + name)
    assert page.status_code == 200
    data = json.loads(page.get_data(as_text=True).split(
        '<script type="application/json" id="data">')[1].split("</script>")[0])
    assert data["by"] == "kernel" and len(data["points"]) == 4
    assert client.get("/scaling?name=%s" % name).status_code == 200
    assert client.get("/scaling?by=cpu").status_code == 400


def test_a_pair_of_runs_is_judged_once_and_again_after_a_new_calibration(tmp_path,
                                                                         monkeypatch):
    import collections
    from perfscale.gate import stats
    path = str(tmp_path / "history.sqlite")
    built = synthetic_history.build(path, machines=1, nights=6, benchmarks=2, judge=False,
                                    calibrate=False, hostile=False)
    runs = built["runs"][built["lineages"][0]]
    judged = []
    real = stats.compare_runs
    monkeypatch.setattr(stats, "compare_runs", lambda *a: judged.append(1) or real(*a))
    monkeypatch.setattr(web_app, "_verdicts", collections.OrderedDict())
    client = web_app.create_app(path).test_client()
    pair = {"a": runs[3], "b": runs[5]}
    first = client.get("/compare", query_string=pair).get_data(as_text=True)
    assert client.get("/compare", query_string=pair).get_data(as_text=True) == first
    assert client.get("/compare.txt", query_string=pair).status_code == 200
    assert len(judged) == 1  # the page again and its mail: the verdicts kept
    assert client.get("/compare", query_string={"a": runs[4], "b": runs[5]}).status_code \
        == 200
    assert len(judged) == 2  # another pair is judged
    with history.open_history(path) as conn:
        run = history.get_run(conn, runs[5])
        name = views.benchmark_names(conn, runs[5])[0]
        history.store_calibration(conn, run["host"], run["cpus"], run["config"], [
            history.Calibration(name, "real_time", 0.4321, 0.5, 0.2, 8)], run["machine"])
    again = client.get("/compare", query_string=pair).get_data(as_text=True)
    assert len(judged) == 3  # judged again, with the new floor
    assert again != first  # the calibrated benchmark's floor and interval
