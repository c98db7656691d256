"""What the hostile sweep of issue 48 (items 5 and 6) found in the parts that landed since
the last one (alerts, the LAVA job, server and import, KCIDB, history import and migration,
plot --vs-kernel, nightly), one test each. The cases and what main at eb567ff did:
docs/measurements/2026-12-07-hostile-sweep.md. Each failed on that main. Run:
    tools/py/python -m pytest -q testing/py/test_hostile_sweep_48.py
"""

import hashlib
import http.server
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time

import pytest

from conftest import DATA, FAKE_RUN, REPO_ROOT, alive, as_schema_5, data, http_server
from test_lava import Rest, real_log, run_dir  # noqa: F401 (run_dir: the recorded job's folder)

TOKEN = "a-token-of-the-48-sweep"


def _sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _no_traceback(code, err):
    assert code == 2 and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err


# Credentials: a token goes to the host it was meant for, and is never printed.

class Catcher(http.server.BaseHTTPRequestHandler):
    """The other host a redirect names: it records what it was sent."""
    seen = []

    def _answer(self):
        self.seen.append(dict(self.headers))
        body = b'{"job_ids": [5]}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *_args):
        pass


class Bouncer(http.server.BaseHTTPRequestHandler):
    """A server that sends every request on to the Catcher (302 for a POST, which urllib
    follows as a GET with the same headers; 307 for a GET)."""
    target = ""

    def _bounce(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(302 if self.command == "POST" else 307)
        self.send_header("Location", self.target + self.path)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = _bounce

    def log_message(self, *_args):
        pass


@pytest.fixture
def bouncer():
    Catcher.seen = []
    with http_server(Catcher) as catcher, http_server(Bouncer) as bounce:
        Bouncer.target = "http://localhost:%d" % catcher.server_port
        yield "http://127.0.0.1:%d" % bounce.server_port


def _caught():
    return [v for headers in Catcher.seen for v in headers.values() if TOKEN in v]


def test_kcidb_submit_sends_no_token_to_the_host_a_redirect_names(cli, bouncer, tmp_path,
                                                                  monkeypatch):
    """Before: urllib followed the 302 to another host with the Authorization header:
    the catcher got the bearer token, and kcidb said 'submitted', exit 0."""
    monkeypatch.setenv("PERFSCALE_KCIDB_TOKEN", TOKEN)
    code, _, err = cli("kcidb", "--origin", "o", data("base.json"), "--out",
                       tmp_path / "r.json", "--submit", bouncer + "/submit")
    assert _caught() == [] and code == 2 and "another host" in err, err


def test_lava_submit_sends_no_token_to_the_host_a_redirect_names(cli, bouncer, monkeypatch):
    monkeypatch.setenv("PERFSCALE_LAVA_TOKEN", TOKEN)
    code, _, err = cli("lava", "submit", "--url", bouncer, "--wait", "0",
                       data("lava/job.yaml"))
    assert _caught() == [] and code == 2 and "another host" in err, err


def test_alerts_set_through_a_dashboard_sends_no_token_on(cli, bouncer, monkeypatch):
    """Before: X-Perfscale-Token went to the catcher with the redirected request."""
    monkeypatch.setenv("PERFSCALE_TRIAGE_TOKEN", TOKEN)
    code, _, err = cli("alerts", "set", "1", "--state", "fixed", "--who", "a", "--why", "b",
                       "--dashboard", bouncer)
    assert _caught() == [] and code == 2 and "another host" in err, err


def test_history_import_from_lava_sends_no_token_on(cli, bouncer, tmp_path, monkeypatch):
    monkeypatch.setenv("PERFSCALE_LAVA_TOKEN", TOKEN)
    code, _, err = cli("history", "import", "--create", "--history", tmp_path / "h.sqlite",
                       "--lava", bouncer, "7")
    assert _caught() == [] and code == 2 and "another host" in err, err


TWO_LINES = TOKEN + "\n" + "second-line-of-the-secret"


@pytest.mark.parametrize("command", [
    ("kcidb", "--origin", "o", data("base.json"), "--submit", "http://127.0.0.1:9/submit"),
    ("lava", "submit", "--url", "http://127.0.0.1:9", "--wait", "0", data("lava/job.yaml")),
])
def test_a_token_of_two_lines_is_never_printed(cli, tmp_path, command):
    """Before: http.client refused the header with the header in its message: kcidb a
    traceback ending in ValueError("Invalid header value b'Bearer <token>'"), lava submit
    one line quoting the token."""
    token_file = tmp_path / "token"
    token_file.write_text(TWO_LINES + "\n")
    code, out, err = cli(*command, "--token-file", token_file)
    _no_traceback(code, err)
    assert "second-line" not in out + err and TOKEN not in out + err


def test_a_triage_token_of_two_lines_is_never_printed(cli, monkeypatch):
    monkeypatch.setenv("PERFSCALE_TRIAGE_TOKEN", TWO_LINES)
    code, out, err = cli("alerts", "set", "1", "--state", "fixed", "--who", "a", "--why",
                         "b", "--dashboard", "http://127.0.0.1:9")
    _no_traceback(code, err)
    assert "second-line" not in out + err


@pytest.mark.parametrize("command", [
    ("kcidb", "--origin", "o", data("base.json"), "--submit", "http://127.0.0.1:9/submit"),
    ("history", "import", "--create", "--lava", "http://127.0.0.1:9", "7"),
])
def test_a_token_file_that_is_not_text_is_one_line(cli, tmp_path, command):
    """Before: UnicodeDecodeError, a traceback."""
    token_file = tmp_path / "token"
    token_file.write_bytes(b"\xff\xfe")
    command = command + (("--history", tmp_path / "h.sqlite") if command[0] == "history"
                         else ())
    code, _, err = cli(*command, "--token-file", token_file)
    _no_traceback(code, err)


# Signals: `lava stop` signals its own processes only.

@pytest.mark.parametrize("entry", ["no start time", "a bare PID"])
def test_lava_stop_leaves_a_process_whose_start_time_it_does_not_know(cli, tmp_path, entry):
    """Before: a PID recorded without its start time was taken for the web server's, and
    stop sent SIGTERM to its session: the unrelated program died."""
    folder = tmp_path / "lava"
    folder.mkdir()
    other = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        record = [other.pid, None] if entry == "no start time" else other.pid
        (folder / "lava.json").write_text(json.dumps({"pids": {"web": record}}))
        code, _, err = cli("lava", "stop", folder)
        time.sleep(0.2)
        assert alive(other.pid), "lava stop killed an unrelated process"
        _no_traceback(code, err)
        assert "PID %d" % other.pid in err and "not signalled" in err
    finally:
        other.kill()
        other.wait()


@pytest.mark.parametrize("state", ['{"pids": {"web": "12"}}', '{"pids": [1]}', "[1]"])
def test_lava_stop_with_a_damaged_state_is_no_traceback(cli, tmp_path, state):
    """Before: TypeError ('%d' of a string) or AttributeError ('list' has no .get)."""
    folder = tmp_path / "lava"
    folder.mkdir()
    (folder / "lava.json").write_text(state)
    code, out, err = cli("lava", "stop", folder)
    assert code == 0 and "nothing was running" in out, err


# Writes where none belong.

@pytest.fixture
def foreign(tmp_path):
    """Another application's SQLite file."""
    path = tmp_path / "notes.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE notes (body TEXT)")
        db.execute("INSERT INTO notes VALUES ('mine')")
    db.close()
    return path


@pytest.mark.parametrize("command", [
    ("alerts", "scan"),
    ("alerts", "set", "1", "--state", "fixed", "--who", "a", "--why", "b"),
    ("history", "import", data("base.json")),
])
def test_no_perfscale_tables_in_another_applications_file(cli, foreign, command):
    """Before: each created perfscale's tables beside the file's own (scan: exit 0, 'no
    changepoint'; import: the run added)."""
    before = _sha(foreign)
    code, _, err = cli(*command, "--history", foreign)
    assert code == 2 and "another application" in err, err
    assert _sha(foreign) == before


@pytest.mark.parametrize("command", [
    ("alerts", "scan"),
    ("alerts", "set", "1", "--state", "fixed", "--who", "a", "--why", "b"),
    ("history", "import", data("base.json")),
])
def test_no_new_history_at_a_mistyped_path(cli, tmp_path, command):
    """Before: a new, empty history was made at the path (the import's run in it)."""
    typo = tmp_path / "histroy.sqlite"
    code, _, err = cli(*command, "--history", typo)
    assert code == 2 and "no such history" in err and not typo.exists(), err


def test_import_with_create_starts_a_history(cli, tmp_path):
    new = tmp_path / "new.sqlite"
    code, out, err = cli("history", "import", "--create", "--history", new, data("base.json"))
    assert code == 0 and "added as run 1" in out, err


def test_a_damaged_schema_5_history_is_not_migrated(cli, tmp_path):
    """Before: schema 5 was migrated to 6 and committed, and only then the damage found
    (quick_check): the file was changed, at schema 6, and refused."""
    from perfscale.history import store, transfer
    path = tmp_path / "old.sqlite"
    with store.open_history(str(path)) as conn:
        transfer.import_results_file(conn, data("base.json"), "")
        as_schema_5(conn)
    with sqlite3.connect(path) as db:
        page = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'alerts_by_key'"
                          ).fetchone()[0]
        size = db.execute("PRAGMA page_size").fetchone()[0]
    db.close()
    with open(path, "r+b") as f:  # an index page no step of the migration reads
        f.seek((page - 1) * size)
        f.write(b"\0" * 8)
    before = _sha(path)
    code, _, err = cli("history", "import", "--history", path, data("clean.json"))
    assert code == 2 and "damaged" in err, err
    assert _sha(path) == before


def test_a_file_that_is_no_sqlite_file_is_said_to_be_so(cli, tmp_path):
    """Before: 'damaged ... try sqlite3 .recover, or move it away to start a new one', for
    a text file that never was a history (sweep 38's case 8)."""
    text = tmp_path / "notes.txt"
    text.write_text("a shopping list\n" * 10)
    code, _, err = cli("alerts", "--history", text)
    assert code == 2 and "not an SQLite file" in err, err


# KCIDB: what KCIDB's schema refuses is never written with exit 0.

def _result_file(tmp_path, context=None, names=("BM_Thing/threads:2",), error=""):
    rows = []
    for name in names:
        for repetition in range(3):
            row = {"name": name, "run_name": name, "run_type": "iteration",
                   "repetitions": 3, "repetition_index": repetition, "iterations": 10,
                   "real_time": 1000.0 + repetition, "cpu_time": 900.0, "time_unit": "ns"}
            if error:
                row.update(error_occurred=True, error_message=error)
            rows.append(row)
    ctx = {"date": "2026-12-07T10:00:00+00:00", "host_name": "h", "num_cpus": 2,
           "kernel_release": "6.1.0-9-amd64"}
    ctx.update(context or {})
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"context": ctx, "benchmarks": rows}))
    return path


def _report(cli, path, origin="o"):
    code, out, err = cli("kcidb", "--origin", origin, path)
    assert code == 0, err
    return out, json.loads(out)


def test_kcidb_origin_with_a_last_newline_is_refused(cli, tmp_path):
    """Before: re.match('^[a-z0-9_]+$') took 'lab\\n' (Python's $ lets a last newline by):
    every id began 'lab\\n:', which KCIDB's pattern refuses; exit 0."""
    code, out, err = cli("kcidb", "--origin", "lab\n", _result_file(tmp_path))
    assert code == 2 and out == "" and "not a KCIDB origin" in err


def test_kcidb_text_holds_no_nul(cli, tmp_path):
    """Before: a NUL in the host's name and in a benchmark's error went into comments
    (KCIDB's [^\\0]*) and misc (PostgreSQL's JSON refuses \\u0000)."""
    out, _ = _report(cli, _result_file(tmp_path, {"host_name": "a\u0000b\u001b[31m"},
                                       error="broke\u0000here"))
    assert "\\u0000" not in out and "\\u001b" not in out


def test_kcidb_repository_url_with_a_space_is_left_out(cli, tmp_path):
    """Before: 'https://git.example.org/a b.git' was the checkout's git_repository_url
    (format uri refuses it)."""
    _, report = _report(cli, _result_file(tmp_path, {
        "kernel_git_url": "https://git.example.org/a b.git"}))
    checkout = report["checkouts"][0]
    assert " " not in checkout.get("git_repository_url", "")
    assert checkout["misc"]["kernel_git_url"] == "https://git.example.org/a b.git"


def test_kcidb_time_offset_with_seconds_is_written_in_utc(cli, tmp_path):
    """Before: '2026-12-07T10:00:00+05:30:15' (Python's isoformat of such a zone), which
    no RFC 3339 date-time is."""
    _, report = _report(cli, _result_file(tmp_path, {"date": "2026-12-07T10:00:00+05:30:15"}))
    assert report["tests"][0]["start_time"] == "2026-12-07T04:29:45+00:00"


@pytest.mark.parametrize("key, value, field", [
    ("kernel_arch", "x86_64\n", "architecture"),
    ("kernel_git_commit", "a" * 40 + "\n", "git_commit_hash"),
])
def test_kcidb_fields_with_a_last_newline_are_left_out(cli, tmp_path, key, value, field):
    """Before: re.match with '$' took them, newline and all; KCIDB's patterns refuse."""
    _, report = _report(cli, _result_file(tmp_path, {key: value}))
    objects = report["builds"] + report["checkouts"]
    assert all(not str(o.get(field, "")).endswith("\n") for o in objects)


def test_kcidb_two_benchmarks_never_share_a_test_id(cli, tmp_path):
    """Before: BM_A.B and BM_A_B both became perfscale.a.b.default.real_time: one id for
    two figures, of which KCIDB keeps one."""
    _, report = _report(cli, _result_file(tmp_path, names=("BM_A.B", "BM_A_B")))
    ids = [t["id"] for t in report["tests"]]
    assert len(ids) == len(set(ids)) == 2


# LAVA jobs.

def _lava_job(cli, tmp_path, monkeypatch, out, *extra, run=("run", "--quick")):
    pytest.importorskip("lava_common.schemas")
    kernel = tmp_path / "vmlinuz-6.1.0-99-amd64"
    kernel.write_bytes(b"not really a kernel")
    monkeypatch.setenv("PERFSCALE_BINARY", "/bin/true")
    return cli("lava", "job", "--kernel", kernel, "--out", out, *extra, "--", *run)


def test_a_path_lava_cannot_read_back_is_refused_before_the_build(cli, tmp_path,
                                                                  monkeypatch):
    """Before: file:///.../a#b/ramdisk.cpio.gz was written, which LAVA reads as the path
    '/.../a' (it opens urlparse(url).path, the rest a fragment); exit 0."""
    out = tmp_path / "a#b"
    code, _, err = _lava_job(cli, tmp_path, monkeypatch, out)
    _no_traceback(code, err)
    assert "file:// URL" in err and not (out / "job.yaml").exists()


def test_perfscales_own_job_name_fits_lavas_200_characters(cli, tmp_path, monkeypatch):
    """Before: 'perfscale run --quick -- --benchmark_filter=... on KERNEL', 270
    characters, which LAVA's own validator refused (exit 2) after the build."""
    out = tmp_path / "job"
    code, _, err = _lava_job(cli, tmp_path, monkeypatch, out,
                             run=("run", "--quick", "--", "--benchmark_filter=" + "x" * 200))
    assert code == 0, err
    import yaml
    name = yaml.safe_load((out / "job.yaml").read_text())["job_name"]
    assert len(name) <= 200 and name.startswith("perfscale run --quick -- --benchmark_filt")
    assert name.endswith("\u2026 on %s" % (tmp_path / "vmlinuz-6.1.0-99-amd64"))


def test_a_name_past_200_characters_is_a_usage_error(cli, tmp_path, monkeypatch):
    with pytest.raises(SystemExit) as stop:
        _lava_job(cli, tmp_path, monkeypatch, tmp_path / "job", "--name", "n" * 201)
    assert stop.value.code == 2 and not (tmp_path / "job").exists()


# Tracebacks on unchecked input.

@pytest.fixture
def fake_lava_run(tmp_path, monkeypatch):
    """A lava-run on PATH and a templates folder: what `lava run` looks for before it
    reads the job's context."""
    bin_dir, templates = tmp_path / "bin", tmp_path / "templates"
    bin_dir.mkdir()
    templates.mkdir()
    (bin_dir / "lava-run").write_text("#!/bin/sh\nexit 1\n")
    (bin_dir / "lava-run").chmod(0o755)
    (templates / "qemu.jinja2").write_text("{% block body %}{% endblock %}\n")
    monkeypatch.setenv("PATH", "%s:%s" % (bin_dir, os.environ["PATH"]))
    return templates


@pytest.mark.parametrize("job", [
    b"device_type: qemu\njob_name: x\ncontext: {extra_options: ['-smp x']}\n",
    b"device_type: qemu\njob_name: x\ncontext: {extra_options: ['-smp 2'], memory: lots}\n",
    b"device_type: qemu\njob_name: \xff\n",
])
def test_lava_run_of_a_damaged_job_is_one_line(cli, tmp_path, fake_lava_run, job):
    """Before: ValueError (int('x')), UnicodeDecodeError: tracebacks."""
    folder = tmp_path / "job"
    folder.mkdir()
    (folder / "job.yaml").write_bytes(job)
    code, _, err = cli("lava", "run", folder, "--templates", fake_lava_run,
                       "--output", tmp_path / "out")
    _no_traceback(code, err)


@pytest.mark.parametrize("url", ["http://[::1", "notaurl"])
def test_lava_submit_to_an_address_that_is_none(cli, monkeypatch, url):
    """Before: ValueError (Invalid IPv6 URL; unknown url type), a traceback."""
    monkeypatch.setenv("PERFSCALE_LAVA_TOKEN", TOKEN)
    code, _, err = cli("lava", "submit", "--url", url, "--wait", "0", data("lava/job.yaml"))
    _no_traceback(code, err)


def test_lava_submit_of_a_job_that_is_not_text(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("PERFSCALE_LAVA_TOKEN", TOKEN)
    job = tmp_path / "job.yaml"
    job.write_bytes(b"\xff\xfe")
    code, _, err = cli("lava", "submit", "--url", "http://127.0.0.1:9", "--wait", "0", job)
    _no_traceback(code, err)


def test_lava_submit_wait_below_zero_is_a_usage_error(cli, monkeypatch):
    """Before: taken, the job submitted, and not followed."""
    monkeypatch.setenv("PERFSCALE_LAVA_TOKEN", TOKEN)
    with pytest.raises(SystemExit) as stop:
        cli("lava", "submit", "--url", "http://127.0.0.1:9", "--wait", "-5",
            data("lava/job.yaml"))
    assert stop.value.code == 2


@pytest.mark.parametrize("url, job, words", [
    ("http://[::1", "7", "not a URL"),
    ("http://127.0.0.1:9", "../../x", "not a LAVA job id"),
])
def test_import_from_lava_checks_the_address_and_the_job_id(cli, tmp_path, url, job, words):
    """Before: ValueError from inside urllib; a job id that is a path, sent as one
    (/api/v0.2/jobs/../../x/)."""
    code, _, err = cli("history", "import", "--create", "--history", tmp_path / "h.sqlite",
                       "--lava", url, job)
    _no_traceback(code, err)
    assert words in err


def test_import_of_a_lava_run_folder_whose_job_is_not_text(cli, run_dir, tmp_path):  # noqa: F811
    """Before: UnicodeDecodeError from job.yaml, a traceback."""
    (run_dir / "job.yaml").write_bytes(b"job_name: \xff\n")
    code, _, err = cli("history", "import", "--create", "--history", tmp_path / "h.sqlite",
                       "--lava", run_dir)
    _no_traceback(code, err)


class ListContext(Rest):
    """The recorded job, its definition's context and metadata lists."""

    def do_GET(self):
        if self.path == "/api/v0.2/jobs/77/":
            with open(data("lava/job.yaml"), encoding="utf-8") as f:
                definition = re.sub(r"^(context|metadata):", r"\1: [1]\nold_\1:", f.read(),
                                    flags=re.M)
            self.answer(200, {"id": 77, "actual_device": "qemu01", "state": "Finished",
                              "health": "Complete", "requested_device_type": "qemu",
                              "definition": definition})
        else:
            super().do_GET()


def test_import_of_a_job_whose_definition_has_odd_shapes(cli, tmp_path, monkeypatch):
    """Before: AttributeError ('list' object has no attribute 'get'), a traceback."""
    monkeypatch.setenv("PERFSCALE_LAVA_TOKEN", TOKEN)
    Rest.seen = []
    Rest.log = "".join("- %s\n" % line for line in real_log().splitlines())
    with http_server(ListContext) as httpd:
        code, out, err = cli("history", "import", "--create", "--history",
                             tmp_path / "h.sqlite", "--lava",
                             "http://127.0.0.1:%d" % httpd.server_port, "77")
    assert code == 0 and "added as run 1" in out, err


def test_kcidb_of_a_run_past_64_bits(cli, tmp_path):
    """Before: OverflowError from sqlite3, a traceback."""
    history = tmp_path / "h.sqlite"
    assert cli("history", "import", "--create", "--history", history,
               data("base.json"))[0] == 0
    code, _, err = cli("kcidb", "--origin", "o", "--run", str(10 ** 20), "--history", history)
    _no_traceback(code, err)
    assert "no run" in err


def _kernel_file(tmp_path, release, metric=True):
    rows = []
    for threads in (2, 4):
        name = "BM_BreakpointThread/breakpoints:0/parallelism:1/threads:%d/real_time" % threads
        for repetition in range(3):
            row = {"name": name, "run_name": name, "run_type": "iteration",
                   "repetition_index": repetition, "iterations": 1, "real_time": 1000.0,
                   "cpu_time": 1.0, "time_unit": "ns"}
            if metric:
                row["usecs/op"] = 5.0 + repetition
            rows.append(row)
    path = tmp_path / ("k%d.json" % len(os.listdir(tmp_path)))
    path.write_text(json.dumps({"context": {"kernel_release": release, "num_cpus": 2},
                                "benchmarks": rows}))
    return str(path)


def test_plot_vs_kernel_of_a_release_of_5000_digits(cli, tmp_path):
    """Before: int() of the release's part: ValueError (Python's 4300-digit limit)."""
    files = [_kernel_file(tmp_path, "9" * 5000), _kernel_file(tmp_path, "6.1")]
    code, out, err = cli("plot", "--vs-kernel", "--x", "threads", "-o", tmp_path / "o", *files)
    assert code == 0 and "ab.md" in out, err


def test_plot_vs_kernel_x_of_no_parameter_is_a_usage_error(cli, tmp_path):
    """Before: --x '*' drew every benchmark at x = 1 under an empty axis name."""
    with pytest.raises(SystemExit) as stop:
        cli("plot", "--vs-kernel", "--x", "*", "-o", tmp_path / "o",
            _kernel_file(tmp_path, "6.1"))
    assert stop.value.code == 2


def test_help_without_numpy_is_one_line(tmp_path):
    """Before: `compare --help` (the door installs nothing for --help) imported the gate:
    ModuleNotFoundError, a traceback of 20 lines."""
    fake = tmp_path / "numpy"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'numpy'\", name='numpy')\n")
    done = subprocess.run(
        [sys.executable, "-m", "perfscale.cli", "compare", "--help"], capture_output=True,
        text=True, env=dict(os.environ, PYTHONPATH="%s:%s" % (
            tmp_path, os.path.join(REPO_ROOT, "tools", "py"))))
    _no_traceback(done.returncode, done.stderr)
    assert "python3-numpy" in done.stderr


# Silence: what is not compared is named.

def _counts(tmp_path, name, drop, unavailable=False):
    with open(os.path.join(DATA, "aa", "aa1-new.json"), encoding="utf-8") as f:
        doc = json.load(f)
    for row in doc["benchmarks"]:
        row.pop(drop, None)
    if unavailable:
        sources = json.loads(doc["context"]["counter_sources"])
        sources[drop.split("/")[0]] = "unavailable: tracepoint csd:csd_queue_cpu does not exist"
        doc["context"]["counter_sources"] = json.dumps(sources)
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("unavailable, words", [
    (False, "not compared: xcalls/op, which the new run lacks in 3 benchmark(s)"),
    (True, "not compared: xcalls, which the new run could not count (unavailable"),
])
def test_nightly_names_the_counts_it_did_not_compare(cli, tmp_path, monkeypatch,
                                                     unavailable, words):
    """Before: compare named a count the new kernel could not give, the nightly said
    nothing of it; a count that vanished from the new run neither said."""
    monkeypatch.setenv("PERFSCALE_BINARY", FAKE_RUN)
    monkeypatch.setenv("PERFSCALE_COMPARE_PY", str(tmp_path / "no-compare.py"))
    common = ("nightly", "--history", tmp_path / "h.sqlite", "--report-dir",
              tmp_path / "n", "--no-plots", "--config", "ci", "--", "--")
    assert cli(*common, "--fixture=aa/aa1-base.json")[0] == 0
    new = _counts(tmp_path, "new.json", "xcalls/op", unavailable)
    code, out, err = cli(*common, "--fixture=%s" % new)
    assert code == 0 and "nightly: " + words in out, out + err


def test_compare_names_a_count_that_vanished(cli, tmp_path):
    code, out, _ = cli("compare", "--no-table", data("aa/aa1-base.json"),
                       _counts(tmp_path, "new.json", "xcalls/op"))
    assert code == 0 and "not compared: xcalls/op, which the new run lacks" in out, out


def test_plot_vs_kernel_names_a_kernel_the_metric_left_out(cli, tmp_path):
    """Before: the 6.12 run had no usecs/op and its column was missing, without a word."""
    files = [_kernel_file(tmp_path, "5.10"), _kernel_file(tmp_path, "6.12", metric=False)]
    code, out, err = cli("plot", "--vs-kernel", "--x", "threads", "--metric", "usecs/op",
                         "-o", tmp_path / "o", *files)
    assert code == 0, err
    assert re.search(r"left out: .*k1\.json \(kernel 6\.12\): no benchmark with threads "
                     r"and usecs/op", out)
    assert "left out" in (tmp_path / "o" / "ab.md").read_text()

