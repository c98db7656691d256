"""A local LAVA server for a trial or a small lab (`tools/perfscale lava start|stop DIR`).

Debian 12's LAVA 2023.01, as its packages run it, with everything kept in DIR:

    DIR/db          PostgreSQL 15 (perfscale.history.cluster: an unprivileged user, by PID),
                    database lavaserver
    lava-server     Django's migrations, then gunicorn (the web UI and REST API on a free
                    127.0.0.1 port) and lava-scheduler; the server's code from Debian's
                    lava-server package, unpacked under ~/.cache/perfscale (its Python
                    dependencies are Debian's packages, installed)
    lava-worker     Debian's lava-dispatcher: the worker, with one qemu device
                    (perfscale-qemu01, TCG: LAVA's qemu.jinja2 with no_kvm)

The server is configured through the environment its settings read (DATABASE_URL,
SECRET_KEY, LAVA_SETTINGS_*), so nothing under /etc changes. Every process is started in
a session of its own and stopped by its PID (lava.json); `stop` leaves nothing running.
"""

import contextlib
import grp
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

from perfscale.history import cluster
from perfscale.labs import lava
from perfscale.machine import processes
from perfscale.vm import cache, debian, errors

PACKAGE_DIR = os.path.join(cache.CACHE, "lava-server-package")
DATABASE = "lavaserver"
ADMIN = "admin"
WORKER = "perfscale-worker"
DEVICE = "perfscale-qemu01"
_STATE = "lava.json"
_PROCESSES = ("worker", "scheduler", "web")  # the order they stop in


class ServerError(Exception):
    """The server could not be started or stopped; one line, shown as is."""


def package_root():
    """The unpacked lava-server package (usr/...), fetched once with apt-get download."""
    if not os.path.isfile(os.path.join(PACKAGE_DIR, "usr", "bin", "lava-server")):
        try:
            debian.fetch_files("lava-server", "usr", PACKAGE_DIR, "lava-server")
        except errors.VmError as err:
            raise ServerError(str(err)) from None
    return PACKAGE_DIR


def _paths(directory):
    return {name: os.path.join(directory, name) for name in (
        "db", "media", "log", "devices", "dispatcher.d", "health-checks", "worker")}


def server_env(directory, port, secret):
    root = package_root()
    paths = _paths(directory)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LAVA_", "DJANGO_"))}
    env.update({
        "PYTHONPATH": os.path.join(root, "usr", "lib", "python3", "dist-packages"),
        "DJANGO_SETTINGS_MODULE": "lava_server.settings.prod",
        "PGPASSFILE": cluster.pgpass_path(paths["db"]),
        "DATABASE_URL": "postgres://%s@127.0.0.1:%d/%s" % (cluster.OWNER, port, DATABASE),
        "SECRET_KEY": secret,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "LAVA_SETTINGS_MEDIA_ROOT": paths["media"],
        "LAVA_SETTINGS_DJANGO_LOGFILE": os.path.join(paths["log"], "django.log"),
        "LAVA_SETTINGS_DEVICES_PATH": paths["devices"],
        "LAVA_SETTINGS_DISPATCHER_CONFIG_PATH": paths["dispatcher.d"],
        "LAVA_SETTINGS_HEALTH_CHECKS_PATH": paths["health-checks"],
        "LAVA_YAML_SETTINGS_DEVICE_TYPES_PATHS": json.dumps(
            [os.path.join(root, "usr", "share", "lava-server", "device-types")]),
    })
    return env


def _manage(env, *args):
    command = [sys.executable, os.path.join(package_root(), "usr", "bin", "lava-server"),
               "manage"] + list(args)
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        last = ((done.stderr or done.stdout).strip().splitlines() or ["no output"])[-1]
        raise ServerError("lava-server manage %s failed: %s" % (" ".join(args[:2]), last))
    return done.stdout


def _entry(state, name):
    """(pid, start time) that the state holds for process `name`; (0, None) when it holds
    none. What a hand or a damaged file left there (a PID that is no number, a missing
    start time) comes back as it is, for processes.is_ours to refuse."""
    pids = state.get("pids") if isinstance(state, dict) else None
    entry = pids.get(name) if isinstance(pids, dict) else None
    if not entry:
        return 0, None
    if isinstance(entry, list) and len(entry) == 2:
        return entry[0], entry[1]
    return entry, None


def _children(pid):
    """Every descendant of PID, found through /proc (lava-run puts QEMU in a session of
    its own, so the worker's process group does not hold it)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir("/proc/%d/task" % parent)
        except OSError:
            continue
        for task in tasks:
            try:
                with open("/proc/%d/task/%s/children" % (parent, task)) as f:
                    kids = [int(k) for k in f.read().split()]
            except (OSError, ValueError):
                continue
            found += kids
            todo += kids
    return found


def _read_state(directory):
    try:
        with open(os.path.join(directory, _STATE)) as f:
            state = json.load(f)
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def _write_state(directory, state):
    path = os.path.join(directory, _STATE)
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        json.dump(state, f)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _set_up(directory, env, state):
    """Once: the schema, the submitter (admin) and its token, the qemu device type, the
    worker and its device with its device dictionary."""
    _manage(env, "migrate", "--no-input")
    _manage(env, "users", "add", "--staff", "--superuser", ADMIN)
    state["token"] = _manage(env, "tokens", "add", "--user", ADMIN, "--description",
                             "perfscale").strip().splitlines()[-1]
    _manage(env, "device-types", "add", "qemu")
    found = re.search(r"Token: (\S+)", _manage(env, "workers", "add", "--health", "ACTIVE",
                                               WORKER))
    if not found:
        raise ServerError("lava-server manage workers add printed no token")
    state["worker_token"] = found.group(1)
    _manage(env, "devices", "add", "--device-type", "qemu", "--worker", WORKER, DEVICE)


def _spawn(command, env, log):
    """Starts a process in a session of its own; returns [pid, start time]."""
    with open(log, "ab") as out:
        pid = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, start_new_session=True).pid
    # Popen's object is dropped: `stop` (maybe another perfscale) reaps nothing, and the
    # process outlives this one, adopted by init.
    return [pid, processes.started_at(pid)]


def _port_free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _db_error(err):
    """A DbError in one line: its first line and, when it has more (initdb's or pg_ctl's
    output), the last of those, which says why."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return ServerError("PostgreSQL: " + " ".join(lines[:1] + lines[1:][-1:]))


def _check_directory(directory):
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as err:
        raise ServerError("%s: cannot create it (%s)" % (directory, err.strerror)) from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise ServerError("%s: not a folder you can write" % directory)


def _check_programs():
    for program in ("gunicorn", "lava-worker"):
        if not shutil.which(program):
            raise ServerError("%s is not installed: tools/setup lava-server installs "
                              "Debian's packages for a LAVA server" % program)


def _running(state):
    return [name for name in _PROCESSES if processes.is_ours(*_entry(state, name))]


def start(directory, port=0):
    """Starts (setting up on first use) the server in `directory`, its web server on
    `port` (0: the one it had, else a free one); returns {url, token, pids, ...}.
    ServerError when it cannot, and then nothing it started is left running."""
    directory = os.path.abspath(directory)
    _check_directory(directory)
    state = _read_state(directory) or {}
    running = _running(state)
    if running:
        raise ServerError("%s: a LAVA server runs there already (%s); tools/perfscale lava "
                          "stop %s" % (directory, ", ".join(running), directory))
    if port:
        state["port"] = port
    state.setdefault("port", _free_port())
    if not _port_free(state["port"]):
        raise ServerError("127.0.0.1:%d is in use by another program: free it, or start "
                          "with --port N" % state["port"])
    # After the refusals that hold whatever is installed (a server running there, a port
    # taken), before anything starts: a package that cannot be had stops here.
    _check_programs()
    package_root()
    for path in _paths(directory).values():
        os.makedirs(path, exist_ok=True)
    try:
        return _start(directory, state)
    except BaseException:
        stop(directory)  # a start that failed (or was interrupted) leaves nothing running
        raise


def _start(directory, state):
    try:
        db = cluster.start(_paths(directory)["db"])
    except cluster.DbError as err:
        raise _db_error(err) from None
    state.setdefault("secret", secrets.token_urlsafe(32))
    state["db_port"] = db["port"]
    _write_state(directory, state)
    env = server_env(directory, db["port"], state["secret"])
    created = subprocess.run(
        [os.path.join(cluster.BIN, "createdb"), "-h", "127.0.0.1", "-p", str(db["port"]),
         "-U", cluster.OWNER, DATABASE], env=env, capture_output=True, text=True)
    if created.returncode != 0 and "already exists" not in created.stderr:
        raise ServerError("createdb %s failed: %s" % (DATABASE, created.stderr.strip()))
    if "token" not in state:
        try:
            _set_up(directory, env, state)
        except ServerError as err:
            raise ServerError("%s (setting up %s: remove it and start again)"
                              % (err, directory)) from None
        _write_state(directory, state)
    else:
        _manage(env, "migrate", "--no-input")
    # The device dictionary, written at every start so that a folder set up by an older
    # perfscale gets the current one; and the device's health back to Good, which the
    # scheduler sets to Bad when a dictionary does not render (it then schedules nothing).
    with open(os.path.join(directory, "devices", DEVICE + ".jinja2"), "w") as f:
        f.write(lava.QEMU_DICTIONARY)
    _manage(env, "devices", "update", "--health", "GOOD", DEVICE)
    log = _paths(directory)["log"]
    url = "http://127.0.0.1:%d" % state["port"]
    pids = state["pids"] = {}
    try:
        pids["web"] = _spawn(["gunicorn", "--bind", "127.0.0.1:%d" % state["port"],
                              "--workers", "2", "--timeout", "120", "lava_server.wsgi"],
                             env, os.path.join(log, "gunicorn.log"))
        # lava-scheduler drops to the user and group it is given (lavaserver where
        # Debian's package runs it): here, the caller's own.
        pids["scheduler"] = _spawn(
            [sys.executable, os.path.join(package_root(), "usr", "bin", "lava-server"),
             "manage", "lava-scheduler", "--user", pwd.getpwuid(os.geteuid()).pw_name,
             "--group", grp.getgrgid(os.getegid()).gr_name, "--log-file",
             os.path.join(log, "scheduler.log")], env, os.path.join(log, "scheduler.out"))
        token_file = os.path.join(directory, "worker.token")
        with open(os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
                  "w") as f:
            f.write(state["worker_token"] + "\n")
        worker_env = {k: v for k, v in os.environ.items()
                      if k not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE")}
        pids["worker"] = _spawn(
            ["lava-worker", "--name", WORKER, "--url", url + "/", "--token-file",
             token_file, "--worker-dir", _paths(directory)["worker"], "--log-file",
             os.path.join(log, "worker.log")], worker_env, os.path.join(log, "worker.out"))
    finally:
        _write_state(directory, state)
    token_path = os.path.join(directory, "token")
    with open(os.open(token_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(state["token"] + "\n")
    _wait_until_ready(url, state["token"], pids)
    return {"url": url, "token": state["token"], "token_file": token_path,
            "pids": {name: pid for name, (pid, _) in pids.items()},
            "db_pid": db["pid"], "device": DEVICE, "worker": WORKER}


def _wait_until_ready(url, token, pids, seconds=120):
    """Until the REST API answers and says the worker is online: a server that can take
    a job and run it, not just one that listens."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        dead = [name for name, (pid, started) in pids.items()
                if not processes.is_ours(pid, started)]
        if dead:
            raise ServerError("the LAVA %s exited at start (its log is under log/)"
                              % ", ".join(dead))
        request = urllib.request.Request("%s/api/v0.2/workers/%s/" % (url, WORKER),
                                         headers={"Authorization": "Token " + token})
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                if json.load(response).get("state") == "Online":
                    return
        except (OSError, ValueError):
            pass
        time.sleep(1)
    raise ServerError("the LAVA server at %s had no worker online after %d s (logs under "
                      "log/)" % (url, seconds))


def _jobs_of(directory, pids):
    """The download folders of the jobs this worker is running (its own record, in
    DIR/worker, of each job's lava-run PID): lava-run keeps a job's images in LAVA's fixed
    /var/lib/lava/dispatcher/tmp/JOB and removes them when the job ends, which a job cut
    by `stop` never does."""
    try:
        from lava_common.constants import DISPATCHER_DOWNLOAD_DIR
    except ImportError:
        return []
    path = os.path.join(_paths(directory)["worker"], "db.sqlite3")
    if not os.path.exists(path):
        return []
    import sqlite3
    try:
        with contextlib.closing(sqlite3.connect("file:%s?mode=ro" % path, uri=True)) as db:
            rows = db.execute("SELECT id, pid, prefix FROM jobs").fetchall()
    except sqlite3.Error:
        return []
    return [os.path.join(DISPATCHER_DOWNLOAD_DIR, "%s%d" % (prefix or "", job))
            for job, pid, prefix in rows if pid in pids]


def stop(directory, timeout_s=30):
    """Stops the worker (with any job's lava-run and QEMU), the scheduler, the web server
    (each by its PID, checked by its start time: SIGTERM to its session, then SIGKILL to
    every process of its tree still there after timeout_s) and PostgreSQL; returns
    {name: pid} of what it stopped. A PID whose start time the state does not hold is
    not signalled (perfscale.machine.processes): ServerError names it, once the rest is
    stopped."""
    directory = os.path.abspath(directory)
    state = _read_state(directory)
    stopped, unsure, kept = {}, [], {}
    cut = []
    if state:
        for name in _PROCESSES:
            pid, started = _entry(state, name)
            if pid and not isinstance(started, int) and processes.stat(pid) is not None:
                unsure.append("%s (PID %s)" % (name, pid))
                kept[name] = state["pids"][name]  # said again until that PID is gone
                continue
            if not processes.is_ours(pid, started):
                continue
            tree = [(kid, processes.started_at(kid)) for kid in _children(pid)]
            if name == "worker":
                cut = _jobs_of(directory, {kid for kid, _ in tree})
            with processes.held(pid) as pidfd:
                if pidfd is None or not processes.is_ours(pid, started):
                    continue
                try:
                    os.killpg(pid, signal.SIGTERM)  # its session: gunicorn's workers too
                except OSError:  # not a session leader after all: itself alone
                    processes.send(pidfd, signal.SIGTERM)
                processes.wait_exit(pidfd, timeout_s)
            for left, left_started in [(pid, started)] + tree:
                processes.signal_if_ours(left, left_started, signal.SIGKILL)
            stopped[name] = pid
        state["pids"] = kept
        _write_state(directory, state)
    for folder in cut:  # what lava-run would have removed at the job's end
        shutil.rmtree(folder, ignore_errors=True)
    try:
        db = cluster.stop(_paths(directory)["db"])
    except cluster.DbError as err:
        raise _db_error(err) from None
    if db:
        stopped["postgresql"] = db
    if unsure:
        raise ServerError("%s: %s named in %s without a start time: not signalled, it may "
                          "be another program by now (stop it by hand if it is LAVA's)%s"
                          % (directory, ", ".join(unsure), _STATE, "; stopped " + ", ".join(
                              "%s (PID %d)" % item for item in stopped.items())
                             if stopped else ""))
    return stopped
