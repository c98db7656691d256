"""A local PostgreSQL for a trial or a small lab (`tools/perfscale db`, the tests).

Debian's postgresql-15 runs as an unprivileged user: the caller itself, or, for root
(PostgreSQL refuses to run as root), the system user perfscale-db, made on first need.
The server listens on 127.0.0.1 (a free port, kept across restarts) and on a socket in
DIR. Three roles, each with a random password written to DIR/pgpass (mode 0600, libpq's
password file: export PGPASSFILE=DIR/pgpass): perfscale (owner), perfscale_writer (adds
runs, reads baselines) and perfscale_reader (reads). URLs never hold a password.
"""

import fcntl
import json
import os
import pwd
import secrets
import signal
import socket
import subprocess
import time

from perfscale.history import schema, store
from perfscale.machine import processes

BIN = os.environ.get("PERFSCALE_PG_BIN", "/usr/lib/postgresql/15/bin")
SYSTEM_USER = "perfscale-db"
DATABASE = "perfscale"
OWNER, WRITER, READER = "perfscale", "perfscale_writer", "perfscale_reader"
_STATE = "perfscale-db.json"
_LOCK = ".db-start.lock"


class DbError(Exception):
    pass


def _user():
    """(name, uid, gid) the server runs as."""
    if os.geteuid() != 0:
        entry = pwd.getpwuid(os.geteuid())
        return entry.pw_name, entry.pw_uid, entry.pw_gid
    try:
        entry = pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                        "--shell", "/usr/sbin/nologin", SYSTEM_USER], check=True,
                       stdout=subprocess.DEVNULL)
        entry = pwd.getpwnam(SYSTEM_USER)
    return entry.pw_name, entry.pw_uid, entry.pw_gid


def _as_user(command, user, **kwargs):
    if os.geteuid() == 0:
        command = ["runuser", "-u", user, "--"] + command
    return subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, **kwargs)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def url(port, role, host="127.0.0.1"):
    return "postgresql://%s@%s:%d/%s" % (role, host, port, DATABASE)


def pgpass_path(directory):
    return os.path.join(os.path.abspath(directory), "pgpass")


def start(directory, wait_s=300):
    """Starts (initialising on first use) the cluster in `directory`; returns its state
    {port, pid, urls}. Two at once on one folder take turns (a lock in the folder): the
    second waits for the first to finish setting it up, then finds it running."""
    if not os.path.exists(os.path.join(BIN, "pg_ctl")):
        raise DbError("PostgreSQL 15 is not installed (%s/pg_ctl): tools/setup installs "
                      "postgresql-15" % BIN)
    directory = os.path.abspath(directory)
    os.makedirs(directory, exist_ok=True)
    lock = os.open(os.path.join(directory, _LOCK), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise DbError("%s: another `db start` has been setting it up for %d s; "
                                  "try again when it is done" % (directory, wait_s)) from None
                time.sleep(0.2)
        return _start(directory)
    finally:
        os.close(lock)  # and with it the lock


def _start(directory):
    data = os.path.join(directory, "data")
    user, uid, gid = _user()
    state_path = os.path.join(directory, _STATE)
    initialised = os.path.exists(os.path.join(data, "PG_VERSION"))
    if os.path.exists(state_path):
        with open(state_path) as f:
            state = json.load(f)
    elif initialised:
        raise DbError("%s holds a PostgreSQL cluster but no %s (a `db start` of an older "
                      "perfscale was interrupted setting it up, or the file was removed): its "
                      "passwords are lost; move %s away and run `db start` again"
                      % (directory, _STATE, data))
    else:
        # The passwords are kept before initdb uses them, and "set_up" says whether the
        # roles exist yet, so an interrupted start is finished by the next one.
        state = {"port": _free_port(),
                 "passwords": {r: secrets.token_urlsafe(18) for r in (OWNER, WRITER, READER)},
                 "set_up": False}
        _write_state(state_path, state)
    if not initialised:
        if os.path.exists(data) and os.listdir(data):
            raise DbError("%s: not empty and not a PostgreSQL cluster (an initdb interrupted?): "
                          "move it away and run `db start` again" % data)
        os.chown(directory, uid, gid)
        os.chmod(directory, 0o700)
        if _as_user(["test", "-w", directory], user).returncode != 0:
            raise DbError("%s: user %s cannot reach it (a folder above it is private to "
                          "%s): choose one it can, say under /tmp or /var/lib" % (
                              directory, user, pwd.getpwuid(os.geteuid()).pw_name))
        pwfile = os.path.join(directory, ".initdb-pw")
        with open(os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(state["passwords"][OWNER] + "\n")
        os.chown(pwfile, uid, gid)
        try:
            done = _as_user([os.path.join(BIN, "initdb"), "-D", data, "-U", OWNER,
                             "--auth=scram-sha-256", "--pwfile", pwfile, "-E", "UTF8",
                             "--locale=C.UTF-8"], user)
        finally:
            os.remove(pwfile)
        if done.returncode != 0:
            raise DbError("initdb failed:\n%s" % done.stdout[-2000:])
    _write_pgpass(directory, state)
    if _pid(data) is None:
        done = _as_user([os.path.join(BIN, "pg_ctl"), "-D", data, "-l",
                         os.path.join(directory, "postgresql.log"), "-w", "-t", "60", "-o",
                         "-p %d -k %s -c listen_addresses=127.0.0.1" % (state["port"], directory),
                         "start"], user)
        if done.returncode != 0:
            raise DbError("pg_ctl start failed (log: %s):\n%s" % (
                os.path.join(directory, "postgresql.log"), done.stdout[-2000:]))
    if state.get("set_up", True) is False:  # absent: a cluster made before the flag
        _set_up(state)
        state["set_up"] = True
        _write_state(state_path, state)
    else:  # a perfscale of a newer schema: migrate as the owner, grant the new tables
        _upgrade(state, DATABASE)
    return {"port": state["port"], "pid": _pid(data),
            "urls": {r: url(state["port"], r) for r in (OWNER, WRITER, READER)}}


def _write_state(path, state):
    """Writes perfscale-db.json whole (a temporary file renamed over it)."""
    work = path + ".new"
    with open(os.open(work, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        json.dump(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.rename(work, path)


def _write_pgpass(directory, state):
    lines = ["127.0.0.1:%d:*:%s:%s" % (state["port"], role, password)
             for role, password in state["passwords"].items()]
    with open(os.open(pgpass_path(directory), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
              "w") as f:
        f.write("\n".join(lines) + "\n")


def _set_up(state):
    """The two roles, then the database with its schema and grants."""
    from psycopg import sql
    from perfscale.history import postgres_engine
    with postgres_engine.connect(_owner_conninfo(state, "postgres"), autocommit=True) as conn:
        for role in (WRITER, READER):
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(role), sql.Literal(state["passwords"][role])))
    _create(state, DATABASE)


def _owner_conninfo(state, database):
    return "host=127.0.0.1 port=%d user=%s dbname=%s password=%s" % (
        state["port"], OWNER, database, state["passwords"][OWNER])


def _create(state, database):
    from psycopg import sql
    from perfscale.history import postgres_engine
    with postgres_engine.connect(_owner_conninfo(state, "postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    owner = _owner_conninfo(state, database)
    store.open_history(owner).close()  # the schema, created by its owner
    with postgres_engine.connect(owner, autocommit=True) as conn:
        grant(conn, WRITER, READER)


def _upgrade(state, database):
    from perfscale.history import postgres_engine
    owner = _owner_conninfo(state, database)
    store.open_history(owner).close()
    with postgres_engine.connect(owner, autocommit=True) as conn:
        grant(conn, WRITER, READER)  # GRANT is idempotent: the same grants again are no-ops


def create_history(directory, database):
    """Another history (database) in the cluster of `directory`, with the same roles;
    returns {role: url}. A lab keeps one; tests make one each."""
    with open(os.path.join(os.path.abspath(directory), _STATE)) as f:
        state = json.load(f)
    _create(state, database)
    return {r: url(state["port"], r).rsplit("/", 1)[0] + "/" + database
            for r in (OWNER, WRITER, READER)}


def grant(conn, writer, reader):
    """The writer's and reader's privileges on a history's tables (a psycopg connection
    of the tables' owner)."""
    for statement in schema.statements(schema.WRITER_GRANTS.format(writer='"%s"' % writer)
                                       + schema.READER_GRANTS.format(reader='"%s"' % reader)):
        conn.execute(statement)


def _pid_file(data):
    """The PID postmaster.pid names, or None (no file, or not a number)."""
    try:
        with open(os.path.join(data, "postmaster.pid")) as f:
            pid = int(f.readline())
    except (OSError, ValueError):
        return None
    # A negative number is a single-user backend's (initdb's bootstrap, left by an initdb
    # that failed): no postmaster to stop, and pidfd_open would refuse it (EINVAL).
    return pid if pid > 0 else None


def _is_postmaster_of(pid, data):
    """Whether PID is a postgres whose working folder is `data`: a postmaster chdirs into
    its data folder, so a PID the pid file names but that was reused by another program,
    or is another cluster's server, fails this."""
    try:
        exe = os.path.basename(os.readlink("/proc/%d/exe" % pid))
        cwd = os.readlink("/proc/%d/cwd" % pid)
    except OSError:
        return False
    return exe.startswith("postgres") and os.path.realpath(cwd) == os.path.realpath(data)


def _pid(data):
    """The running postmaster's PID from postmaster.pid, or None."""
    pid = _pid_file(data)
    if pid is None or not _is_postmaster_of(pid, data):
        return None
    return pid


def stop(directory, timeout_s=60):
    """Stops the server of `directory` by its PID (SIGINT: fast shutdown); returns the
    PID it stopped, or None if none ran. The process is held by a pidfd before it is checked
    to be this folder's postmaster, so the signal reaches the process checked even if the
    number is reused meanwhile; a pid file naming any other live process is a DbError and
    nothing is signalled."""
    data = os.path.join(os.path.abspath(directory), "data")
    pid = _pid_file(data)
    if pid is None:
        return None
    with processes.held(pid) as pidfd:  # machine.processes: the one home of this check
        if pidfd is None:
            return None
        if not _is_postmaster_of(pid, data):
            raise DbError("%s names pid %d, which is not the PostgreSQL server of %s: the "
                          "pid file is stale; nothing was signalled (remove the file once no "
                          "server runs there)" % (os.path.join(data, "postmaster.pid"), pid,
                                                  data))
        processes.send(pidfd, signal.SIGINT)
        if not processes.wait_exit(pidfd, timeout_s):
            processes.send(pidfd, signal.SIGKILL)
        return pid
