"""`tools/perfscale lava start|stop DIR`: the refusals (a folder it cannot write, a port in
use, a second start, a package it cannot have), each one line and exit 2 with nothing
started; `stop` ending a process tree by PID, QEMU's own session included; the device
dictionary rendered by LAVA's own qemu.jinja2; and a real start of Debian's LAVA 2023.01
(server, scheduler, worker online, device idle) stopped with nothing left and its ports
free. The whole run of a job on it is recorded in
docs/measurements/2026-12-04-lava-server.md (two minutes of TCG on a loaded machine)."""

import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.request

import pytest

from conftest import alive, wait_for

from perfscale.labs import lava, lava_server
from perfscale.machine import processes


def _one_line_refusal(code, out, err, *words):
    assert code == 2, (out, err)
    assert len(err.strip().splitlines()) == 1, err
    for word in words:
        assert word in err, err


def test_a_folder_it_cannot_write_is_one_line(cli, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, out, err = cli("lava", "start", blocker / "lava")
    _one_line_refusal(code, out, err, "lava start:", "cannot create it")


def test_a_port_in_use_is_one_line_and_starts_nothing(cli, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = cli("lava", "start", tmp_path / "lava", "--port", port)
    _one_line_refusal(code, out, err, "127.0.0.1:%d is in use" % port)
    assert not (tmp_path / "lava" / "db").exists()  # no PostgreSQL was started


def test_a_second_start_is_one_line(cli, tmp_path):
    folder = tmp_path / "lava"
    folder.mkdir()
    # A server's state naming a live process of this test, as a running one would.
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        started = processes.started_at(sleeper.pid)
        (folder / "lava.json").write_text(json.dumps(
            {"port": 1, "pids": {"web": [sleeper.pid, started]}}))
        code, out, err = cli("lava", "start", folder)
        _one_line_refusal(code, out, err, "runs there already (web)", "lava stop")
        assert alive(sleeper.pid)
        # The same PID started at another time is another program: not running, not ours.
        (folder / "lava.json").write_text(json.dumps(
            {"pids": {"web": [sleeper.pid, started + 1]}}))
        assert lava_server._running(lava_server._read_state(str(folder))) == []
        assert lava_server.stop(str(folder)) == {}
        assert alive(sleeper.pid)
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_package_it_cannot_have_is_one_line(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    code, out, err = cli("lava", "start", tmp_path / "lava")
    _one_line_refusal(code, out, err, "is not installed", "tools/setup lava-server")


def test_stop_ends_the_tree_qemu_s_session_too(tmp_path, monkeypatch):
    """lava-run starts QEMU in a session of its own (pexpect), out of reach of a signal to
    the worker's process group: `stop` finds it through /proc and kills it by PID; and
    removes the download folder of the job it cut (which lava-run removes at a job's end),
    not another's."""
    constants = pytest.importorskip("lava_common.constants")
    downloads = tmp_path / "dispatcher-tmp"
    monkeypatch.setattr(constants, "DISPATCHER_DOWNLOAD_DIR", str(downloads))
    folder = tmp_path / "lava"
    (folder / "worker").mkdir(parents=True)
    pidfile = tmp_path / "grandchild"
    # A leader that ignores SIGTERM and a grandchild in a new session, as QEMU is.
    script = ("import os, signal, subprocess, time\n"
              "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
              "p = subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
              "open(%r, 'w').write(str(p.pid))\n"
              "time.sleep(300)\n" % str(pidfile))
    leader = lava_server._spawn([sys.executable, "-c", script], dict(os.environ),
                                str(tmp_path / "out.log"))
    assert wait_for(pidfile.exists, 30)
    assert wait_for(lambda: pidfile.read_text().strip(), 5)
    grandchild = int(pidfile.read_text())
    (folder / "lava.json").write_text(json.dumps({"pids": {"worker": leader}}))
    # The worker's record: job 7 is this tree's (its lava-run, here the grandchild), job 8
    # another's (a PID outside it).
    import sqlite3
    with sqlite3.connect(folder / "worker" / "db.sqlite3") as db:
        db.execute("CREATE TABLE jobs(id INTEGER PRIMARY KEY, pid INTEGER, status INTEGER, "
                   "last_update INTEGER, prefix VARCHAR(100) DEFAULT '', token TEXT)")
        db.executemany("INSERT INTO jobs VALUES (?, ?, 0, 0, '', 't')",
                       [(7, grandchild), (8, os.getpid())])
    db.close()
    for job in ("7", "8"):
        (downloads / job).mkdir(parents=True)
    stopped = lava_server.stop(str(folder), timeout_s=1)
    assert stopped == {"worker": leader[0]}
    assert wait_for(lambda: not alive(leader[0]) and not alive(grandchild), 10)
    assert sorted(os.listdir(downloads)) == ["8"]
    assert json.loads((folder / "lava.json").read_text())["pids"] == {}


def _templates():
    # The templates the server renders with: those of the unpacked lava-server, fetched as
    # `lava start` fetches it (one Debian package unpacked, nothing installed) on a machine
    # that has not started a server yet.
    try:
        root = lava_server.package_root()
    except lava_server.ServerError as err:
        pytest.skip("lava-server could not be fetched: %s" % err)
    templates = lava.find_templates((os.path.join(
        root, "usr", "share", "lava-server", "device-types"),))
    assert templates, "lava-server unpacked under %s holds no device-type templates" % root
    return templates


def test_the_device_dictionary_renders_with_lava_s_own_template():
    """The dictionary `start` writes, rendered by qemu.jinja2 as the server renders it for
    its worker, with a perfscale job's context: TCG, the job's memory and vCPUs. (A
    dictionary that does not render makes the scheduler mark the device Bad and schedule
    nothing, with no word in its log at its default level.)"""
    import jinja2
    import yaml
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader([_templates()]),
                                     autoescape=False, trim_blocks=True)
    rendered = yaml.safe_load(environment.from_string(lava.QEMU_DICTIONARY).render(
        memory=2048, extra_options=["-smp 3", "-accel tcg,thread=single"]))
    qemu = rendered["actions"]["boot"]["methods"]["qemu"]["parameters"]
    assert qemu["command"] == "qemu-system-x86_64"
    options = " ".join(qemu["options"] + qemu.get("extra", []))
    assert "-m 2048" in qemu["options"]
    assert "-smp 3" in options and "tcg" in options and "kvm" not in options


def _lava_server_installed():
    missing = [p for p in ("gunicorn", "lava-worker") if not shutil.which(p)]
    if missing or not os.path.exists(os.path.join(lava_server.cluster.BIN, "pg_ctl")):
        pytest.skip("a LAVA server's packages are not installed (tools/setup lava-server)")
    if not os.path.isfile(os.path.join(lava_server.PACKAGE_DIR, "usr", "bin",
                                       "lava-server")):
        pytest.skip("lava-server is not unpacked under %s (lava start fetches it)"
                    % lava_server.PACKAGE_DIR)


def _listening(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.skipif(os.environ.get("PERFSCALE_LAVA_SERVER_TEST") != "1",
                    reason="starts a real LAVA server (75-136 s on the shared VM, over the "
                           "unit run's budget): PERFSCALE_LAVA_SERVER_TEST=1 runs it; "
                           "docs/measurements/2026-12-04-lava-server.md has the full run")
def test_a_real_server_starts_takes_its_worker_and_stops_clean(cli):
    """Debian's LAVA 2023.01 in a folder: the REST API with the token printed, the worker
    online, the qemu device idle and good; `stop` leaves none of its processes (nor
    gunicorn's workers, nor PostgreSQL's) and frees both ports."""
    _lava_server_installed()
    # PostgreSQL runs as an unprivileged user, who must reach the folder: not under
    # pytest's root-private tmp_path when root (a pytest starting meanwhile makes its
    # folder private again).
    base = tempfile.mkdtemp(prefix="perfscale-lava-")
    os.chmod(base, 0o755)
    try:
        _start_and_stop(cli, pathlib.Path(base) / "lava")
    finally:
        shutil.rmtree(base)


def _start_and_stop(cli, folder):
    code, out, err = cli("lava", "start", folder)
    try:
        assert code == 0, err
        state = json.loads((folder / "lava.json").read_text())
        token = (folder / "token").read_text().strip()
        assert "token %s" % token in out
        url = "http://127.0.0.1:%d" % state["port"]

        def get(path):
            request = urllib.request.Request(url + path,
                                             headers={"Authorization": "Token " + token})
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.load(response)
        assert get("/api/v0.2/workers/perfscale-worker/")["state"] == "Online"
        device = get("/api/v0.2/devices/perfscale-qemu01/")
        assert (device["state"], device["health"], device["device_type"]) == (
            "Idle", "Good", "qemu")
        tree = {pid: lava_server._children(pid) for pid, _ in state["pids"].values()}
        assert len(tree[state["pids"]["web"][0]]) == 2  # gunicorn's two workers
        db_pid = lava_server.cluster._pid(str(folder / "db" / "data"))
        code, out, err = cli("lava", "start", folder)
        _one_line_refusal(code, out, err, "runs there already")
    finally:
        stop = cli("lava", "stop", folder)
    assert stop[0] == 0, stop
    assert "postgresql (PID %d)" % db_pid in stop[1]
    everything = [db_pid] + [p for leader, kids in tree.items() for p in [leader] + kids]
    assert wait_for(lambda: not any(alive(p) for p in everything), 30)
    assert not _listening(state["port"]) and not _listening(state["db_port"])
    assert cli("lava", "stop", folder)[1].strip() == "lava stop: nothing was running"
