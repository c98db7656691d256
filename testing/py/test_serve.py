"""The production server (`tools/perfscale serve`, gunicorn) as a lab runs it: pages kept
once per change of the history and never stale after one, 304 on a matching ETag, slow
clients that hold no thread, a port in use said in one line, a NUL in a parameter a 400
on both engines. Real servers on loopback ports, real sockets, real histories.
"""

import json
import multiprocessing
import os
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from conftest import REPO_ROOT, Server, pg_history
import synthetic_history
from perfscale.gate import floors
from perfscale.history import cluster, store as history, views
from perfscale.results import io
from perfscale.web import app as web_app, cache as web_cache, worker

TOKEN = "triage-token-for-the-serve-test"


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def lab(tmp_path_factory, request):
    """A small history with an open alert (#1) on each engine: {"writer": what a nightly
    writes to, "reader": what a read-only server reads}."""
    kwargs = dict(machines=2, nights=12, benchmarks=2, step_at=8, kernel_change_at=8,
                  step_lineages=2, alerts=True, judge=False)
    if request.param == "sqlite":
        path = str(tmp_path_factory.mktemp("serve") / "history.sqlite")
        synthetic_history.build(path, **kwargs)
        return {"writer": path, "reader": path}
    urls = pg_history(request.getfixturevalue("pg_server"), "t_serve")
    synthetic_history.build(urls[cluster.OWNER], **kwargs)
    return {"writer": urls[cluster.WRITER], "reader": urls[cluster.READER]}


def _get(url, etag=None):
    """(status, headers, body) of a GET, a 304 or an error status included."""
    request = urllib.request.Request(url, headers={"If-None-Match": etag} if etag else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.headers, answer.read().decode()
    except urllib.error.HTTPError as err:
        with err:
            return err.code, err.headers, err.read().decode()


def _record_night(target, kernel):
    """A nightly's write: the latest run again, as a new night on `kernel`; its id."""
    with history.open_history(target) as conn:
        last = history.get_run(conn, max(r["id"] for r in history.all_runs(conn)))
        context = dict(json.loads(last["context"]), kernel_release=kernel)
        info = history.RunInfo(last["host"], last["cpus"], last["config"],
                               json.loads(last["run_args"]), last["repetitions"], context,
                               recorded_at=history.utc_now())
        results = io.ResultSet("", context, history.load_entries(conn, last["id"]))
        run_id = history.record_run(conn, info, results, [], last["id"])
        history.mark_complete(conn, run_id)
    return run_id


def test_a_page_answers_304_until_a_night_is_recorded_and_shows_it_at_once(lab):
    """Two workers (two processes sharing the kept pages): the fleet page's ETag answers
    304 while nothing changes; a night recorded by a nightly is on the very next request
    of every worker, and the old ETag gets the new page, not a 304."""
    server = Server(lab["reader"], workers=2)
    try:
        status, headers, before = _get(server.url + "/")
        etag = headers["ETag"]
        assert status == 200 and etag and headers["Cache-Control"] == "no-cache"
        for _ in range(6):  # every worker: the same page, unchanged
            assert _get(server.url + "/", etag)[0] == 304
        assert "6.99.0-fresh" not in before
        run_id = _record_night(lab["writer"], "6.99.0-fresh")
        for _ in range(6):  # at once, whichever worker answers
            status, headers, after = _get(server.url + "/", etag)
            assert status == 200 and headers["ETag"] != etag
            assert "6.99.0-fresh" in after and "/run/%d" % run_id in after
        status, _headers, page = _get(server.url + "/run/%d" % run_id)
        assert status == 200 and "6.99.0-fresh" in page
    finally:
        server.stop()
    assert server.proc.returncode == 0


def test_a_triage_is_on_the_alert_page_at_once(lab):
    server = Server(lab["writer"], TOKEN, workers=2)
    try:
        status, headers, page = _get(server.url + "/alert/1")
        assert status == 200 and "racks were swapped" not in page
        form = urllib.parse.urlencode({"state": "acknowledged", "who": "ops",
                                       "why": "racks were swapped", "token": TOKEN}).encode()
        request = urllib.request.Request(server.url + "/alert/1/state", data=form)
        with urllib.request.urlopen(request, timeout=30) as answer:  # 303 then the page
            assert answer.status == 200 and "racks were swapped" in answer.read().decode()
        for _ in range(4):
            status, again, page = _get(server.url + "/alert/1", headers["ETag"])
            assert status == 200 and "racks were swapped" in page
            assert again["ETag"] != headers["ETag"]
    finally:
        server.stop()


def _make_counted(directory, log, stamp, key, started):
    cache = web_cache.SharedCache(directory)
    started.wait()

    def make():
        with open(log, "a") as f:
            f.write("made\n")
        time.sleep(0.3)  # long enough for every other process to ask meanwhile
        return b"the page"
    assert cache.get_or_make(stamp, key, make) == b"the page"


def test_an_entry_is_made_once_for_every_process_that_asks(tmp_path):
    """Eight processes ask for one page at once: one computes it, the seven others wait
    for it and read it; a new stamp computes again and removes the older stamp's folder."""
    cache = web_cache.SharedCache(str(tmp_path / "cache"))
    os.makedirs(cache.directory)
    log = str(tmp_path / "made")
    context = multiprocessing.get_context("fork")
    started = context.Event()
    procs = [context.Process(target=_make_counted, args=(cache.directory, log, "7-a", "/",
                                                         started)) for _ in range(8)]
    for proc in procs:
        proc.start()
    started.set()
    for proc in procs:
        proc.join(30)
        assert proc.exitcode == 0
    with open(log) as f:
        assert f.read() == "made\n"
    assert cache.get_or_make("8-b", "/", lambda: b"newer") == b"newer"
    assert sorted(os.listdir(cache.directory)) == ["8-b"]
    assert cache.get_or_make("7-a", "/", lambda: b"late") == b"late"  # a slow request's


def test_a_page_that_reads_the_clock_is_made_again_by_one_request(tmp_path):
    """The fleet page (its window of days) is kept CLOCK_SECONDS; past them the request
    that takes the entry's lock makes it again, and one that finds it taken meanwhile
    gets the page kept (the same history: the same stamp), not a wait."""
    import fcntl
    cache = web_cache.SharedCache(str(tmp_path / "cache"))
    os.makedirs(cache.directory)
    assert cache.get_or_make("1-a", "/", lambda: b"old", 60) == b"old"
    assert cache.get_or_make("1-a", "/", lambda: b"new", 60) == b"old"  # still fresh
    entry = os.path.join(cache.directory, "1-a", [n for n in os.listdir(
        os.path.join(cache.directory, "1-a")) if not n.endswith(".lock")][0])
    os.utime(entry, (time.time() - 61, time.time() - 61))
    with open(entry + ".lock", "a") as held:  # another request is making it
        fcntl.flock(held, fcntl.LOCK_EX)
        assert cache.get_or_make("1-a", "/", lambda: b"new", 60) == b"old"
    assert cache.get_or_make("1-a", "/", lambda: b"new", 60) == b"new"
    assert cache.get_or_make("1-a", "/", lambda: b"newer", 60) == b"new"


def test_a_lineage_is_learned_once_per_change_whichever_process_asks(lab, monkeypatch,
                                                                     tmp_path):
    """The compare page's floors, learned from the lineage's passing runs, are kept in the
    server's cache at the history's stamp: a fresh process (its own floors forgotten)
    finds them there and learns nothing; a change of the history learns them again."""
    learned = []
    real = floors.learn
    monkeypatch.setattr(floors, "learn", lambda *a, **k: learned.append(1) or real(*a, **k))
    shared = web_cache.SharedCache(str(tmp_path / "cache"))
    with history.open_history(lab["reader"], read_only=True) as conn:
        first = history.all_runs(conn)[0]
        runs = views.runs_of(conn, first["host"], first["machine"], first["cpus"],
                             first["config"])
    pairs = ["/compare?a=%d&b=%d" % (runs[i]["id"], runs[-1]["id"]) for i in (-3, -4, -5)]
    for fresh, url in enumerate(pairs[:2]):  # another pair: a page not kept yet
        monkeypatch.setattr(floors, "_learned", type(floors._learned)())  # a new process
        client = web_app.create_app(lab["reader"], cache=shared).test_client()
        assert client.get(url).status_code == 200
        assert len(learned) == 1, fresh
    _record_night(lab["writer"], "6.99.0-again")
    monkeypatch.setattr(floors, "_learned", type(floors._learned)())
    client = web_app.create_app(lab["reader"], cache=shared).test_client()
    assert client.get(pairs[2]).status_code == 200
    assert len(learned) == 2


@pytest.mark.parametrize("url", ["/trend?name=%00&run=1", "/scaling?name=a%00b",
                                 "/compare?run=1&kernel_a=%00&kernel_b=x", "/?days=1%00",
                                 "/trend?run=1&%00=x"])
def test_a_nul_in_a_parameter_is_the_clients_error_on_both_engines(lab, url):
    """Before: PostgreSQL's driver refused the NUL, and the page said the history was
    unusable (503)."""
    page = web_app.create_app(lab["reader"]).test_client().get(url)
    assert page.status_code == 400 and "NUL" in page.get_data(as_text=True)


def test_a_port_in_use_is_one_line(tmp_path, lab):
    """Before: gunicorn retried the bind for five seconds and logged eleven lines."""
    if lab["reader"] != lab["writer"]:
        pytest.skip("the listening socket, not the history: once is enough")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for workers in ("2", "0"):
            done = subprocess.run(
                [os.path.join(REPO_ROOT, "tools", "py", "python"), "-m", "perfscale.cli",
                 "serve", "--history", lab["reader"], "--listen", "127.0.0.1:%d" % port,
                 "--workers", workers], capture_output=True, text=True, timeout=60)
            assert done.returncode == 2 and done.stdout == ""
            lines = done.stderr.splitlines()
            assert len(lines) == 1 and "cannot listen on 127.0.0.1:%d" % port in lines[0] \
                and "in use" in lines[0], done.stderr


def _trickle(socks, stop, piece):
    while not stop.wait(0.3):
        for sock in socks:
            try:
                sock.sendall(piece)
            except OSError:
                pass  # answered and closed: what the worker does at its deadline


def test_slow_clients_hold_no_thread_another_client_needs(lab):
    """One worker, 4 threads, against 8 clients trickling header lines, 8 trickling a
    declared body, 4 that declared a body and never send it: every page of another client
    is answered at once, a declared huge body is refused before it is read (413), and the
    trickling connections are cut at the deadline (408). Before: gthread gave each
    connection a thread that waited for the body as long as bytes came."""
    if lab["reader"] != lab["writer"]:
        pytest.skip("the server's sockets, not the history: once is enough")
    server = Server(lab["reader"], workers=1)
    stop = threading.Event()
    slow = []
    try:
        address = ("127.0.0.1", server.port)
        heads = [socket.create_connection(address) for _ in range(8)]
        for sock in heads:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        bodies = [socket.create_connection(address) for _ in range(8)]
        for sock in bodies:
            sock.sendall(b"POST /triage HTTP/1.1\r\nHost: x\r\nContent-Type: application/"
                         b"x-www-form-urlencoded\r\nContent-Length: 60000\r\n\r\nkind=")
        silent = [socket.create_connection(address) for _ in range(4)]
        for sock in silent:
            sock.sendall(b"GET /alert/1 HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
        slow = heads + bodies + silent
        threads = [threading.Thread(target=_trickle, args=(heads, stop, b"X-Slow: 1\r\n")),
                   threading.Thread(target=_trickle, args=(bodies, stop, b"a"))]
        for thread in threads:
            thread.start()
        started = time.monotonic()
        for _ in range(5):
            asked = time.monotonic()
            status, _headers, _page = _get(server.url + "/alert/1")
            assert status == 200 and time.monotonic() - asked < 5
        assert time.monotonic() - started < worker.REQUEST_SECONDS  # all while they trickle
        stop.set()  # what they sent after their deadline would only be answered with a reset
        for thread in threads:
            thread.join()
        with socket.create_connection(address) as huge:
            huge.sendall(b"POST /triage HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000"
                         b"\r\n\r\n")
            huge.settimeout(10)
            assert huge.recv(100).startswith(b"HTTP/1.1 413 ")
        for sock in slow:  # each cut at its deadline, answered 408
            sock.settimeout(worker.REQUEST_SECONDS + 10)
            answer = b""
            while True:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 408 "), answer[:80]
    finally:
        stop.set()
        for sock in slow:
            sock.close()
        server.stop()
    assert server.proc.returncode == 0
