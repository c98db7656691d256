"""`tools/perfscale kcidb`: KCIDB v5.3 reports, validated against kcidb-io's own schema
(perfscale/labs/kcidb_v5_3.schema.json) with Debian's python3-jsonschema as kcidb-io
validates (Draft 7, its format checker), and posted to a real HTTP server."""

import http.server
import json
import os
import socket
import statistics

import pytest

from conftest import data, http_server

jsonschema = pytest.importorskip("jsonschema", reason="python3-jsonschema is not installed "
                                 "(tools/setup test installs it)")

from perfscale.gate import stats  # noqa: E402
from perfscale.history import store  # noqa: E402
from perfscale.labs import kcidb  # noqa: E402
from perfscale.results import io  # noqa: E402

ORIGIN = "perfscale_test"
TOKEN = "s3cret-token-0123"


def validate(document):
    """KCIDB's schema as KCIDB reads it (kcidb.schema_problems: draft 7, `$` the end of
    the text, RFC 3339 and RFC 3986 formats), and no id given twice."""
    problems = kcidb.schema_problems(document)
    assert not problems, "; ".join(problems[:5])
    ids = [item["id"] for kind in ("checkouts", "builds", "tests")
           for item in document.get(kind, [])]
    assert len(ids) == len(set(ids))


def nulls(value, where="$"):
    if value is None:
        return [where]
    if isinstance(value, dict):
        return [n for k, v in value.items() for n in nulls(v, where + "." + k)]
    if isinstance(value, list):
        return [n for i, v in enumerate(value) for n in nulls(v, "%s[%d]" % (where, i))]
    return []


def report_of(cli, *args):
    code, out, err = cli("kcidb", "--origin", ORIGIN, *args)
    assert code == 0, err
    return json.loads(out)


def test_the_schema_is_kcidb_ios_v5_3():
    with open(kcidb.SCHEMA_PATH) as f:
        schema = json.load(f)
    assert schema["properties"]["version"]["properties"]["major"]["const"] == 5
    assert schema["properties"]["version"]["properties"]["minor"]["maximum"] == 3
    test = schema["$defs"]["test"]
    assert test["required"] == ["build_id", "id", "origin"]
    assert set(test["properties"]["status"]["$ref"].split("/")[-1:]) == {"status"}
    assert "DONE" in schema["$defs"]["status"]["enum"]
    # The validator rejects what the schema forbids: a null, a bad status, a bad origin.
    with pytest.raises(AssertionError):
        validate({"version": {"major": 5, "minor": 3},
                  "tests": [{"id": "x:1", "origin": "x", "build_id": "x:b", "path": None}]})
    with pytest.raises(AssertionError):
        validate({"version": {"major": 5, "minor": 3},
                  "tests": [{"id": "x:1", "origin": "x", "build_id": "x:b", "status": "OK"}]})
    with pytest.raises(AssertionError):
        validate({"version": {"major": 5, "minor": 3},
                  "checkouts": [{"id": "Bad:1", "origin": "Bad"}]})
    # What Python's re and Debian's jsonschema alone would let by: a last newline before
    # `$`, an offset with seconds, a URL with a space, a NUL.
    for checkout in ({"id": "o:1", "origin": "o\n"}, {"id": "o:1", "origin": "o",
                                                       "git_commit_hash": "a" * 40 + "\n"},
                     {"id": "o:1", "origin": "o", "start_time": "2026-12-07T10:00:00+05:30:15"},
                     {"id": "o:1", "origin": "o", "git_repository_url": "https://a b/linux"},
                     {"id": "o:1", "origin": "o", "comment": "a\0b"}):
        with pytest.raises(AssertionError):
            validate({"version": {"major": 5, "minor": 3}, "checkouts": [checkout]})
    validate({"version": {"major": 5, "minor": 3}, "checkouts": [{
        "id": "o:1", "origin": "o", "start_time": "2026-12-07T10:00:00.5+05:30",
        "git_repository_url": "https://git.kernel.org/pub/scm/linux.git"}]})


def test_a_result_file_reports_done_and_skip_and_validates(cli):
    document = report_of(cli, data("base.json"))
    validate(document)
    assert nulls(document) == []
    assert document["version"] == {"major": 5, "minor": 3}
    (checkout,), (build,) = document["checkouts"], document["builds"]
    assert checkout["misc"]["kernel_release"] == "6.1.0-27-amd64"
    assert build["checkout_id"] == checkout["id"] and build["architecture"] == "x86_64"
    tests = document["tests"]
    paths = [t["path"] for t in tests]
    assert len(set(paths)) == len(paths)
    assert len({t["id"] for t in tests}) == len(tests)
    assert all(t["id"].startswith(ORIGIN + ":") and t["build_id"] == build["id"]
               for t in tests)
    by_path = {t["path"]: t for t in tests}
    figure = by_path["perfscale.breakpoint.thread.b4_p2_t20.usecs_per_op"]
    assert figure["status"] == "DONE" and figure["number"]["unit"] == "s/op"
    results = io.load_results(data("base.json"))
    entry = results.entries["BM_BreakpointThread/breakpoints:4/parallelism:2/threads:20/"
                            "real_time"]
    assert figure["number"]["value"] == pytest.approx(
        statistics.median(entry.counters["usecs/op"]) * 1e-6)
    assert "perfscale.breakpoint.thread.b4_p2_t20.real_time" in by_path
    skipped = [t for t in tests if t["status"] == "SKIP"]
    assert skipped and all("number" not in t for t in skipped)
    assert any("lockdep" in t["misc"]["reason"] for t in skipped)
    assert {t["status"] for t in tests} == {"DONE", "SKIP"}
    # Instances whose parameters share an initial keep apart (passive, placement).
    assert any(".passive0_a0_placement0." in p for p in paths)


def test_ids_are_stable_and_match_the_imported_run(cli, tmp_path):
    first = report_of(cli, data("base.json"))
    again = report_of(cli, data("base.json"))
    assert first == again  # resubmitting merges: the same ids
    other = report_of(cli, data("slow.json"))
    assert {t["id"] for t in other["tests"]}.isdisjoint({t["id"] for t in first["tests"]})
    history = str(tmp_path / "h.sqlite")
    code, _, err = cli("history", "import", "--create", "--history", history, data("base.json"))
    assert code == 0, err
    imported = report_of(cli, "--run", "1", "--history", history)
    validate(imported)
    assert {t["id"] for t in imported["tests"]} == {t["id"] for t in first["tests"]}
    assert imported["builds"] == first["builds"]


def judged_history(path):
    """A history with base.json as the baseline and slow.json judged against it, as the
    nightly stores them; the baseline's lineage calibrated for one benchmark."""
    base, slow = io.load_results(data("base.json")), io.load_results(data("slow.json"))
    with store.open_history(path) as conn:
        info = store.RunInfo.from_results(base, "ci", [], 10)
        base_id = store.record_run(conn, info, base, [], None, complete=True)
        verdicts = stats.compare_entries(base.entries, slow.entries)
        slow_info = store.RunInfo.from_results(slow, "ci", [], 10)
        slow_info.host, slow_info.context = info.host, dict(slow.context,
                                                            host_name=info.host)
        run_id = store.record_run(conn, slow_info, slow, verdicts, base_id, complete=True)
        slower = [v.name for v in verdicts if v.regression]
        store.store_calibration(conn, info.host, info.cpus, "ci", [store.Calibration(
            slower[0], stats.REAL_TIME, 0.02, 0.07, 0.01, 10)], machine=info.machine)
    return run_id, slower, {v.name: v for v in verdicts}


def test_a_judged_run_reports_its_regressions_as_fail(cli, tmp_path):
    history = str(tmp_path / "h.sqlite")
    run_id, slower, verdicts = judged_history(history)
    assert slower, "the fixture must hold a regression"
    document = report_of(cli, "--run", run_id, "--history", history)
    validate(document)
    assert nulls(document) == []
    failed = [t for t in document["tests"] if t["status"] == "FAIL"]
    assert {t["misc"]["benchmark"] for t in failed} == set(slower)
    first = next(t for t in failed if t["misc"]["benchmark"] == slower[0]
                 and t["misc"]["metric"] == "real_time")
    gate = first["misc"]["gate"]
    assert gate["verdict"] == stats.SLOWER and gate["baseline_run"] == 1
    assert gate["mdc"] == 0.07 and gate["noise_floor"] == 0.02
    low, high = gate["interval"]
    assert low <= verdicts[slower[0]].change <= high
    assert gate["change"] == pytest.approx(verdicts[slower[0]].change)
    done = [t for t in document["tests"] if t["status"] == "DONE"]
    assert done and all(t["misc"]["gate"]["verdict"] != stats.SLOWER for t in done
                        if "gate" in t["misc"])


class Recorder(http.server.BaseHTTPRequestHandler):
    received = []
    reply = 200

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, dict(self.headers), body))
        self.send_response(self.reply)
        self.end_headers()
        self.wfile.write(b'{"ok": true}' if self.reply == 200 else b"bad token\n")

    def log_message(self, *_args):
        pass


@pytest.fixture
def server():
    Recorder.received, Recorder.reply = [], 200
    with http_server(Recorder) as httpd:
        yield httpd


def test_submit_posts_the_report_with_the_bearer_token(cli, server, tmp_path, monkeypatch):
    monkeypatch.delenv("PERFSCALE_KCIDB_TOKEN", raising=False)
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    out = tmp_path / "report.json"
    url = "http://127.0.0.1:%d/submit" % server.server_port
    code, stdout, stderr = cli("kcidb", "--origin", ORIGIN, data("base.json"), "--out", out,
                               "--submit", url, "--token-file", token_file)
    assert code == 0, stderr
    assert TOKEN not in stdout + stderr and "submitted" in stderr
    (path, headers, body), = Recorder.received
    assert path == "/submit"
    assert headers["Authorization"] == "Bearer " + TOKEN
    assert headers["Content-Type"] == "application/json"
    assert body == out.read_bytes()
    validate(json.loads(body))
    # From the environment too.
    monkeypatch.setenv("PERFSCALE_KCIDB_TOKEN", "env-token-9")
    code, stdout, stderr = cli("kcidb", "--origin", ORIGIN, data("base.json"), "--submit", url)
    assert code == 0, stderr
    assert Recorder.received[-1][1]["Authorization"] == "Bearer env-token-9"
    assert "env-token-9" not in stdout + stderr


def test_a_refusing_or_unreachable_server_is_one_line_and_exit_2(cli, server, tmp_path,
                                                                  monkeypatch):
    monkeypatch.setenv("PERFSCALE_KCIDB_TOKEN", TOKEN)
    Recorder.reply = 401
    url = "http://127.0.0.1:%d/submit" % server.server_port
    code, _, err = cli("kcidb", "--origin", ORIGIN, data("base.json"), "--out",
                       tmp_path / "r.json", "--submit", url)
    assert code == 2 and "HTTP 401" in err and len(err.strip().splitlines()) == 1
    assert TOKEN not in err
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, _, err = cli("kcidb", "--origin", ORIGIN, data("base.json"), "--out",
                       tmp_path / "r.json", "--submit",
                       "http://user:pw@127.0.0.1:%d/submit" % port)
    assert code == 2 and err.startswith("kcidb: cannot reach http://127.0.0.1:%d/submit"
                                        % port)
    assert len(err.strip().splitlines()) == 1 and "pw" not in err


@pytest.mark.parametrize("args, message", [
    (("--origin", "Bad-Origin", data("base.json")), "not a KCIDB origin"),
    (("--origin", ORIGIN, data("no_benchmarks.json")), "no benchmark results"),
    (("--origin", ORIGIN, "/nonexistent.json"), "cannot read"),
    (("--origin", ORIGIN, data("base.json"), "--submit", "http://127.0.0.1:9/"),
     "no token"),
])
def test_bad_input_is_one_line_and_exit_2(cli, args, message, monkeypatch):
    monkeypatch.delenv("PERFSCALE_KCIDB_TOKEN", raising=False)
    code, out, err = cli("kcidb", *args)
    assert code == 2 and message in err and out == ""
    assert len(err.strip().splitlines()) == 1


def test_a_missing_run_is_exit_2(cli, tmp_path):
    history = str(tmp_path / "h.sqlite")
    judged_history(history)
    code, _, err = cli("kcidb", "--origin", ORIGIN, "--run", "99", "--history", history)
    assert code == 2 and "no run 99" in err
