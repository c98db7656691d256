"""What the hostile sweep of issue 38 item 9 found (alerts, the dashboard's production
server, the LAVA import, the KCIDB submit, the browser tests), one test each. The cases
and what main at 1849e5c did: docs/measurements/2026-12-04-hostile-sweep.md.

Each failed on that main. Run:
    tools/py/python -m pytest -q testing/py/test_hostile_sweep_38.py
"""

import http.server
import json
import shutil
import time

import pytest

import synthetic_history
from conftest import data, http_server
from perfscale.labs import kcidb, lava
from test_lava import run_dir  # noqa: F401 (the fixture: the recorded job's folder)

TOKEN = "a-triage-token-of-the-sweep"


@pytest.fixture(scope="module")
def alerted(tmp_path_factory):
    """A small history with one open alert (#1)."""
    path = str(tmp_path_factory.mktemp("alerts") / "history.sqlite")
    synthetic_history.build(path, machines=2, nights=12, benchmarks=1, step_at=8,
                            kernel_change_at=8, step_lineages=2, alerts=True, judge=False,
                            calibrate=False)
    return path


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def either(request, alerted):
    """The same small history on each engine: the SQLite file, or a PostgreSQL database
    built alike (its writer's URL)."""
    if request.param == "sqlite":
        return alerted
    from conftest import pg_history
    from perfscale.history import cluster
    urls = pg_history(request.getfixturevalue("pg_server"), "t_sweep38")
    synthetic_history.build(urls[cluster.OWNER], machines=2, nights=12, benchmarks=1,
                            step_at=8, kernel_change_at=8, step_lineages=2, alerts=True,
                            judge=False, calibrate=False)
    return urls[cluster.WRITER]


NOT_UTF8 = b"\xff\xfe".decode("utf-8", "surrogateescape")  # what argv holds for such bytes


@pytest.mark.parametrize("who, why, words", [
    ("ops", NOT_UTF8, "UTF-8"),
    (NOT_UTF8 + "<script>", "x", "UTF-8"),
    ("ops", "a\x00b", "NUL"),
])
def test_alerts_set_refuses_text_no_history_can_store(cli, alerted, who, why, words):
    """Before: UnicodeEncodeError from the driver, a traceback, exit 1 (a NUL: stored on
    SQLite, refused by PostgreSQL with its own error)."""
    code, out, err = cli("alerts", "set", "1", "--state", "acknowledged", "--who", who,
                         "--why", why, "--history", alerted)
    assert code == 2 and words in err and "Traceback" not in err, (out, err)


def test_alerts_set_of_an_id_past_64_bits_is_no_alert(cli, alerted):
    """Before: OverflowError, a traceback, exit 1."""
    code, _, err = cli("alerts", "set", str(10 ** 20), "--state", "acknowledged", "--who",
                       "a", "--why", "b", "--history", alerted)
    assert code == 2 and err.strip() == "alerts: no alert #%d" % 10 ** 20


@pytest.mark.parametrize("url", ["file:///etc/passwd", "notaurl", "http://[::1",
                                 "http://host:port", "ftp://host/"])
def test_alerts_set_dashboard_must_be_an_http_address(cli, monkeypatch, url):
    """Before: file:// was opened as a file; no scheme or an unclosed [ raised ValueError
    from urllib, a traceback, exit 1."""
    monkeypatch.setenv("PERFSCALE_TRIAGE_TOKEN", TOKEN)
    with pytest.raises(SystemExit) as stop:
        cli("alerts", "set", "1", "--state", "fixed", "--who", "a", "--why", "b",
            "--dashboard", url)
    assert stop.value.code == 2


def test_alerts_set_through_the_dashboard_checks_the_text_first(cli, monkeypatch):
    """Before: UnicodeEncodeError in urlencode, a traceback, exit 1; now the dashboard's
    rules are said before anything is sent (nothing listens on this port)."""
    monkeypatch.setenv("PERFSCALE_TRIAGE_TOKEN", TOKEN)
    code, _, err = cli("alerts", "set", "1", "--state", "fixed", "--who", "a", "--why",
                       NOT_UTF8, "--dashboard", "http://127.0.0.1:9")
    assert code == 2 and err.strip() == "alerts: who and why must be UTF-8 text"


def test_the_alert_form_refuses_a_nul_on_either_engine(either):
    """Before: SQLite stored the NUL in the log; the same form on PostgreSQL failed in the
    driver (a NUL is no text there)."""
    from perfscale.web import app as web_app
    client = web_app.create_app(either, TOKEN).test_client()
    page = client.post("/alert/1/state", data={"state": "acknowledged", "who": "a",
                                               "why": "x\x00y"},
                       headers={web_app.TOKEN_HEADER: TOKEN})
    assert page.status_code == 400
    assert "NUL" in page.get_data(as_text=True)


class Hostile(http.server.BaseHTTPRequestHandler):
    """A lab's server gone wrong: MODE says how it answers every GET and POST."""
    mode = "list"

    def log_message(self, *_args):
        pass

    def _answer(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.mode == "drip":  # a byte every half second, for 20 s: never hangs a test
            self.send_response(200)
            self.end_headers()
            for _ in range(40):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.5)
            return
        body = {"list": b"[1, 2]", "deep": b"[" * 100000, "ids-not-a-list": b'{"job_ids": 5}',
                "log-deep": b"- {lvl: target, msg: " + b"[" * 50000 + b"}\n"}[self.mode]
        if self.mode == "log-deep" and not self.path.endswith("/logs/"):
            body = json.dumps({"state": "Finished", "health": "Complete",
                               "definition": "a: [" * 5000}).encode()
        self.send_response(201 if self.command == "POST" else 200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer


@pytest.fixture
def hostile():
    with http_server(Hostile, threaded=True) as httpd:
        yield "http://127.0.0.1:%d" % httpd.server_port


@pytest.mark.parametrize("mode", ["list", "deep", "log-deep"])
def test_import_from_a_server_that_answers_no_lava_job(cli, hostile, tmp_path, monkeypatch,
                                                        mode):
    """Before: AttributeError ('list' has no .get) or RecursionError, a traceback, exit 1."""
    Hostile.mode = mode
    monkeypatch.setenv("PERFSCALE_LAVA_TOKEN", "t")
    code, _, err = cli("history", "import", "--create", "--history", tmp_path / "h.sqlite", "--lava",
                       hostile, "7")
    assert code == 2 and err.startswith("history import: LAVA job 7") \
        and len(err.strip().splitlines()) == 1, err


def test_submit_to_a_server_whose_job_ids_are_no_list(hostile):
    """Before: TypeError ('int' object is not subscriptable)."""
    Hostile.mode = "ids-not-a-list"
    with pytest.raises(lava.LavaError, match="answered no job id"):
        lava.submit_job(hostile, "device_type: qemu\n", "t")


def test_a_server_that_drips_its_answer_is_cut_at_the_deadline(hostile, monkeypatch):
    """Before: urllib's timeout bounds each wait, not the answer: kcidb's submit and LAVA's
    fetch waited the whole 20 s of drip and took 40 spaces for an answer (a success for
    kcidb)."""
    Hostile.mode = "drip"
    start = time.monotonic()
    with pytest.raises(kcidb.KcidbError, match="no whole answer within 2 s"):
        kcidb.submit(hostile + "/submit", b"{}", "t", timeout=2)
    monkeypatch.setattr(lava, "TIMEOUT", 2)
    with pytest.raises(lava.LavaError, match="no whole answer within 2 s"):
        lava.fetch_job(hostile, "7")
    assert time.monotonic() - start < 12


def test_a_lava_run_folder_with_a_hostile_line_or_lineage(cli, run_dir, tmp_path):
    """Before: a log line nested 100,000 deep was a RecursionError (now that line is left
    out, as any stray line is); lineage.json holding a list an AttributeError; a damaged
    job.yaml was 'not YAML' without its file."""
    history = str(tmp_path / "h.sqlite")
    with open(run_dir / "log.yaml", "a", encoding="utf-8") as f:
        f.write("{a: " + "[" * 100000 + "\n")
    code, out, err = cli("history", "import", "--create", "--history", history, "--lava", run_dir)
    assert code == 0 and "added as run 1" in out, err
    (run_dir / "lineage.json").write_text("[1, 2]")
    code, _, err = cli("history", "import", "--create", "--history", history, "--lava", run_dir)
    assert code == 2 and "lineage.json is no JSON object" in err
    shutil.copy(data("lava/lineage.json"), run_dir / "lineage.json")
    (run_dir / "job.yaml").write_text("job: [unclosed\n")
    code, _, err = cli("history", "import", "--create", "--history", history, "--lava", run_dir)
    assert code == 2 and "%s: not YAML" % (run_dir / "job.yaml") in err


def test_a_log_cut_inside_the_result_says_so(run_dir):
    text = (run_dir / "log.yaml").read_text()
    cut = text[:text.index("PERFSCALE-LAVA-RESULT-BEGIN") + 2000]
    with pytest.raises(lava.LavaError, match="cut off|damaged"):
        lava.parse_log(lava.log_entries(cut))


@pytest.mark.parametrize("spec", ["debian:6.1\n", "debian:6.12.\u0661\u0661\u0668",
                                  "debian:6.1.0-057", "debian:6.1.0-57\n"])
def test_a_debian_kernel_has_one_spelling(spec):
    """Before: a trailing newline (`$`), Arabic-Indic digits (\\d) and leading zeros were
    each taken, the same kernel under a label of its own in the run's JSON."""
    from perfscale.vm import debian, errors
    with pytest.raises(errors.VmUsageError, match="not a Debian kernel name"):
        debian.choose(spec, [])


def test_stalled_connections_do_not_hold_the_dashboard(alerted):
    """Before: gunicorn's gthread let a thread wait for a request's headers as long as
    bytes trickled in; 12 connections sending a header line every 2 s held the 4 threads
    of `serve --workers 1` and a page timed out (30 s, and again). Now each waits at most
    REQUEST_SECONDS (perfscale.web.worker), in the event loop, no thread."""
    import socket
    import subprocess
    import urllib.request
    from conftest import REPO_ROOT
    from perfscale.web import worker
    proc = subprocess.Popen(
        [REPO_ROOT + "/tools/py/python", "-m", "perfscale.cli", "serve", "--history", alerted,
         "--listen", "127.0.0.1:0", "--workers", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    stalled = []
    try:
        line = proc.stdout.readline()
        port = int(line.split()[2].rstrip("/").rsplit(":", 1)[1])
        for _ in range(12):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
            stalled.append(sock)
        start = time.monotonic()
        for _ in range(3):
            time.sleep(0.5)
            for sock in stalled:
                try:
                    sock.sendall(b"X-Slow: 1\r\n")
                except OSError:
                    pass  # cut: what the fix does
        with urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=30) as page:
            assert page.status == 200
        assert time.monotonic() - start < worker.REQUEST_SECONDS + 8
    finally:
        for sock in stalled:
            sock.close()
        proc.terminate()
        proc.wait(timeout=30)
        proc.stdout.close()


def test_a_history_that_vanishes_under_the_dashboard_is_503_not_a_new_one(alerted, tmp_path):
    """Before: with a triage token each request opened the history as a writer, which
    creates a missing file: the dashboard answered 200 with an empty fleet, 'no alert #1',
    and made a new, empty history where the real one had been."""
    import shutil as files
    from perfscale.web import app as web_app
    path = tmp_path / "history.sqlite"
    files.copy(alerted, path)
    client = web_app.create_app(str(path), TOKEN).test_client()
    assert client.get("/alert/1").status_code == 200
    path.rename(tmp_path / "moved.sqlite")
    page = client.get("/alert/1")
    assert page.status_code == 503 and "the history is gone" in page.get_data(as_text=True)
    assert not path.exists()


def test_the_triage_form_refuses_a_nul_in_the_item(either):
    """Before: a triage row for host '\\0' was stored on SQLite (303), and the driver
    refused the same on PostgreSQL."""
    from perfscale.history import store
    from perfscale.web import app as web_app
    with store.open_history(either, read_only=True) as conn:
        run = store.all_runs(conn)[0]
    client = web_app.create_app(either, TOKEN).test_client()
    page = client.post("/triage", data={
        "kind": "regression", "host": "\x00", "machine": run["machine"], "cpus": run["cpus"],
        "config": run["config"], "name": "BM_X", "run_id": run["id"], "state": "fixed",
        "who": "a", "why": "b"}, headers={web_app.TOKEN_HEADER: TOKEN})
    assert page.status_code == 400 and "NUL" in page.get_data(as_text=True)
