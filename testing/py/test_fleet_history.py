"""The fleet's shared history on a real PostgreSQL (tools/perfscale db start, as an
unprivileged user, in a temporary folder; stopped by its PID at the end): concurrent
writers, a server lost mid-write, a writer killed mid-transaction, imports, bad input."""

import json
import os
import shutil
import signal
import sqlite3
import subprocess

import pytest

from conftest import (FAKE_RUN, REPO_ROOT, alive, as_schema_5, data, pg_history,
                      postgres_missing)
from perfscale.history import cluster as db, schema, spool, store as history, transfer
from perfscale.machine import identity
from perfscale.results import io as results_io

PYTHON = os.path.join(REPO_ROOT, "tools", "py", "python")

pytestmark = pytest.mark.skipif(bool(postgres_missing()), reason=postgres_missing() or "-")


@pytest.fixture
def lab(pg_server, request):
    """{role: url} of a new history for this test."""
    return pg_history(pg_server, "t_" + request.node.name.lower().replace("test_", "")[:40])


def _identity(i):
    # Two identities per hostname: the same name on another machine is another lineage.
    return ["--host=lab-%d" % (i % 4), "--context=machine_microcode=0x%x" % (0x100 + i)]


def _rows(url, sql, params=()):
    with history.open_history(url) as conn:
        return conn.engine.execute(sql, params)


def test_eight_machines_write_at_once_each_judged_against_its_own_lineage(lab, tmp_path):
    url = lab[db.WRITER]

    def wave(fixture_of):
        procs = [subprocess.Popen(
            [PYTHON, "-m", "perfscale.cli", "nightly", "--history", url, "--report-dir",
             str(tmp_path / ("n%d" % i)), "--no-plots", "--config", "ci",
             "--confirm-rounds", "0", "--", "--", "--fixture=" + fixture_of(i)]
            + _identity(i), cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, env=dict(os.environ, PERFSCALE_BINARY=FAKE_RUN,
                                PERFSCALE_COMPARE_PY=str(tmp_path / "none.py")))
            for i in range(8)]
        outputs = [p.communicate()[0] for p in procs]  # all run at once; read each whole
        return [(p.returncode, out) for p, out in zip(procs, outputs)]

    first = wave(lambda i: "base.json")
    assert all(code == 0 for code, _ in first), first
    second = wave(lambda i: "slow.json" if i % 2 else "base.json")
    for i, (code, out) in enumerate(second):
        assert code == (1 if i % 2 else 0), out
    runs = _rows(url, "SELECT id, host, machine, baseline_id, regressions, context FROM runs "
                 "ORDER BY id")
    assert len(runs) == 16
    by_id = {r["id"]: r for r in runs}
    judged = [r for r in runs if r["baseline_id"] is not None]
    assert len(judged) == 8
    for run in judged:  # against the first run of its own host *and* identity
        base = by_id[run["baseline_id"]]
        assert (base["host"], base["machine"]) == (run["host"], run["machine"])
        assert json.loads(base["context"])["machine_microcode"] == json.loads(
            run["context"])["machine_microcode"]
    assert len({(r["host"], r["machine"]) for r in runs}) == 8
    counts = _rows(url, "SELECT r.id, SUM(LENGTH(b.real_ns)) AS n FROM runs r "
                   "JOIN benchmarks b ON b.run_id = r.id GROUP BY r.id")
    assert len({c["n"] for c in counts}) == 1 and len(counts) == 16  # every run whole


def test_server_stopped_mid_write_spools_the_run_and_sync_stores_it_once(
        lab, tmp_path, monkeypatch, cli):
    from perfscale.history import postgres_engine
    url = lab[db.WRITER]
    monkeypatch.setenv("PERFSCALE_BINARY", FAKE_RUN)
    monkeypatch.setenv("PERFSCALE_COMPARE_PY", str(tmp_path / "none.py"))
    argv = ["nightly", "--history", url, "--report-dir", tmp_path / "n", "--spool",
            tmp_path / "spool", "--no-plots", "--config", "ci", "--", "--",
            "--fixture=base.json"]
    assert cli(*argv)[0] == 0
    real = postgres_engine.Engine.executemany
    stopped = []

    def stop_midway(self, sql, rows):
        if "INSERT INTO benchmarks" in sql and not stopped:
            stopped.append(db.stop(lab["dir"]))  # the run's row is in, its benchmarks not
        return real(self, sql, rows)
    monkeypatch.setattr(postgres_engine.Engine, "executemany", stop_midway)
    try:
        code, out, err = cli(*argv)
    finally:
        db.start(lab["dir"])
    assert stopped and stopped[0]
    assert code == 2, out + err
    assert "nothing half-written" in err and "run kept in" in err
    [folder] = spool.pending(str(tmp_path / "spool"))
    monkeypatch.setattr(postgres_engine.Engine, "executemany", real)
    assert _rows(url, "SELECT COUNT(*) AS n FROM runs")[0]["n"] == 1  # no half run
    assert _rows(url, "SELECT COUNT(*) AS n FROM benchmarks b LEFT JOIN runs r "
                 "ON r.id = b.run_id WHERE r.id IS NULL OR b.run_id <> 1")[0]["n"] == 0
    shutil.copytree(folder, str(tmp_path / "again"))
    code, out, _ = cli("history", "sync", "--history", url, "--spool", tmp_path / "spool")
    assert code == 0 and "1 run(s) stored, 0 already there" in out
    assert spool.pending(str(tmp_path / "spool")) == []
    # The same run sent again (a spool restored from a backup): stored once.
    os.makedirs(str(tmp_path / "spool"), exist_ok=True)
    shutil.move(str(tmp_path / "again"), str(tmp_path / "spool" / os.path.basename(folder)))
    code, out, _ = cli("history", "sync", "--history", url, "--spool", tmp_path / "spool")
    assert code == 0 and "0 run(s) stored, 1 already there" in out
    runs = _rows(url, "SELECT complete, regressions, baseline_id FROM runs ORDER BY id")
    assert len(runs) == 2
    assert runs[1]["complete"] == 0 and runs[1]["baseline_id"] is None  # never a baseline


_KILLED_WRITER = r"""
import sys, time
from perfscale.history import postgres_engine, store
from perfscale.results import io
real = postgres_engine.Engine.executemany
def hang(self, sql, rows):
    real(self, sql, rows)
    if "INSERT INTO benchmarks" in sql:
        print("inside", flush=True)
        time.sleep(600)
postgres_engine.Engine.executemany = hang
results = io.load_results(sys.argv[2])
conn = store.open_history(sys.argv[1])
store.record_run(conn, store.RunInfo.from_results(results, "ci", [], 10), results, [], None)
"""


def test_a_writer_killed_mid_transaction_leaves_nothing(lab, tmp_path):
    url = lab[db.WRITER]
    proc = subprocess.Popen([PYTHON, "-c", _KILLED_WRITER, url, data("base.json")],
                            cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "inside"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
        proc.stdout.close()
    # The server sees the connection drop and rolls the transaction back.
    for table in ("runs", "benchmarks"):
        assert _rows(url, "SELECT COUNT(*) AS n FROM %s" % table)[0]["n"] == 0
    results = results_io.load_results(data("base.json"))
    with history.open_history(url) as conn:  # and nothing is left locked
        history.record_run(conn, history.RunInfo.from_results(results, "ci", [], 10),
                           results, [], None)
        assert history.counts(conn)["runs"] == 1


def test_a_sqlite_history_imported_twice_holds_its_runs_once_with_the_same_verdicts(
        lab, tmp_path, cli, monkeypatch):
    monkeypatch.setenv("PERFSCALE_BINARY", FAKE_RUN)
    monkeypatch.setenv("PERFSCALE_COMPARE_PY", str(tmp_path / "none.py"))
    local = tmp_path / "history.sqlite"
    for fixture in ("base.json", "base.json", "slow.json"):
        cli("nightly", "--history", local, "--report-dir", tmp_path / "n", "--no-plots",
            "--config", "ci", "--confirm-rounds", "0", "--", "--", "--fixture=" + fixture)
    with history.open_history(str(local)) as conn:
        history.store_calibration(conn, "perfscale-ci-1", 2, "ci", [history.Calibration(
            "BM_A", "real_time", 0.05, 0.08, 0.02, 4, 0.1)], machine="m1")
    loose = tmp_path / "loose.json"
    shutil.copyfile(data("base.json"), loose)
    url = lab[db.OWNER]
    outputs = [cli("history", "import", "--history", url, local, loose) for _ in range(2)]
    assert [o[0] for o in outputs] == [0, 0]
    assert "3 run(s) added, 0 already there, calibrations of 1 lineage(s)" in outputs[0][1]
    assert "0 run(s) added, 3 already there" in outputs[1][1]
    assert "already there as run" in outputs[1][1]

    def verdicts(target):
        return sorted((r["run_key"], r["name"], r["verdict"], r["regressions"],
                       r["baseline_key"]) for r in _rows(
            target, "SELECT r.run_key, b.name, b.verdict, r.regressions, "
            "(SELECT run_key FROM runs x WHERE x.id = r.baseline_id) AS baseline_key "
            "FROM runs r JOIN benchmarks b ON b.run_id = r.id"))
    imported = [v for v in verdicts(url) if not v[0].startswith("sha256-")]  # not the loose
    assert imported == verdicts(str(local))
    assert any(v[2] == "slower" for v in imported)
    assert _rows(url, "SELECT COUNT(*) AS n FROM runs")[0]["n"] == 4
    with history.open_history(url) as conn:
        assert history.load_calibration(conn, "perfscale-ci-1", 2, "ci", "m1")[
            ("BM_A", "real_time")].mdc == 0.08


def test_a_wrong_url_and_a_wrong_password_are_clear_and_exit_2(lab, tmp_path, cli):
    port = lab[db.WRITER].split(":")[2].split("/")[0]
    for target, expected in (
            ("postgresql://perfscale_writer@127.0.0.1:notaport/perfscale", "invalid integer"),
            ("postgresql://perfscale_writer:hunter2secret@127.0.0.1:%s/perfscale" % port,
             "password authentication failed"),
            ("service=no_such_service_here", "service"),
            ("host=127.0.0.1 port=%s user=perfscale_writer password=hunter2secret "
             "dbname=perfscale" % port, "password authentication failed")):
        code, out, err = cli("history", "sync", "--history", target, "--spool", tmp_path / "s")
        assert code == 2, (target, out, err)
        assert expected in err and "hunter2secret" not in out + err, err
        assert err.count("\n") == 1  # one line


def test_an_unreachable_server_the_nightly_still_runs_unjudged_and_exits_2(
        lab, tmp_path, cli, monkeypatch):
    monkeypatch.setenv("PERFSCALE_BINARY", FAKE_RUN)
    monkeypatch.setenv("PERFSCALE_COMPARE_PY", str(tmp_path / "none.py"))
    target = "postgresql://perfscale_writer:hunter2secret@127.0.0.1:1/perfscale"
    code, out, err = cli("nightly", "--history", target, "--report-dir", tmp_path / "n",
                         "--spool", tmp_path / "spool", "--no-plots", "--config", "ci",
                         "--", "--", "--fixture=base.json")
    assert code == 2
    assert "hunter2secret" not in out + err
    [line] = [l for l in err.splitlines() if l.startswith("nightly: history unreachable")]
    assert "running unjudged" in line and "***" in line
    assert "baseline" not in out and "REGRESSION" not in out  # judged against nothing
    assert len(spool.pending(str(tmp_path / "spool"))) == 1


@pytest.fixture
def silent_server():
    """The port of a TCP server that accepts connections and never answers (a server lost
    behind a network cut looks so to a client that has just connected), closed at the end."""
    import socket
    import threading
    listener = socket.create_server(("127.0.0.1", 0))
    held, stop = [], threading.Event()

    def accept():
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                return
    thread = threading.Thread(target=accept)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join()
        for conn in held:
            conn.close()
        assert held  # the nightly did reach it


def test_a_server_that_never_answers_ends_the_nightly_in_its_spool(silent_server, tmp_path):
    # No connect_timeout in the URL: perfscale's own bound applies (nothing else would
    # stop the wait), and the nightly spools its run as for a server that is down.
    target = "postgresql://perfscale_writer@127.0.0.1:%d/perfscale" % silent_server
    nightly = subprocess.run(
        [PYTHON, "-m", "perfscale.cli", "nightly", "--history", target, "--report-dir",
         str(tmp_path / "n"), "--spool", str(tmp_path / "spool"), "--no-plots", "--config",
         "ci", "--", "--", "--fixture=base.json"], cwd=REPO_ROOT, capture_output=True,
        text=True, timeout=120, env=dict(os.environ, PERFSCALE_BINARY=FAKE_RUN,
                                         PERFSCALE_COMPARE_PY=str(tmp_path / "none.py")))
    assert nightly.returncode == 2, nightly.stdout + nightly.stderr
    [line] = [l for l in nightly.stderr.splitlines()
              if l.startswith("nightly: history unreachable")]
    assert "timeout" in line and "running unjudged" in line, line
    assert len(spool.pending(str(tmp_path / "spool"))) == 1


def test_connections_are_bounded_unless_the_user_bounds_them(tmp_path):
    from perfscale.history import postgres_engine as pg
    url = "postgresql://w@db.lab/perfscale"
    assert pg.connection_settings(url, {}) == pg.CONNECTION_DEFAULTS
    # The user's own values win, wherever libpq would find them.
    mine = pg.connection_settings(url + "?keepalives_idle=5&connect_timeout=3", {})
    assert "keepalives_idle" not in mine and "connect_timeout" not in mine
    assert mine["keepalives_count"] == pg.CONNECTION_DEFAULTS["keepalives_count"]
    assert pg.connection_settings(url, {"PGCONNECT_TIMEOUT": "4"})["connect_timeout"] == "4"
    services = tmp_path / "services.conf"
    services.write_text("[other]\nconnect_timeout=99\n\n# the lab's\n[lab]\n"
                        "host=db.lab\nconnect_timeout = 7\ntcp_user_timeout=5000\n")
    for target, environ in (("service=lab", {"PGSERVICEFILE": str(services)}),
                            ("postgresql:///perfscale",
                             {"PGSERVICEFILE": str(services), "PGSERVICE": "lab"})):
        settings = pg.connection_settings(target, environ)
        # psycopg reads connect_timeout only from the string: the service's is passed on;
        # libpq reads the rest of the service itself.
        assert settings["connect_timeout"] == "7" and "tcp_user_timeout" not in settings
        assert settings["keepalives_idle"] == pg.CONNECTION_DEFAULTS["keepalives_idle"]
    # A service only in the system's file, as libpq looks there after the user's.
    (tmp_path / "pg_service.conf").write_text("[lab]\nkeepalives_idle=1\n")
    settings = pg.connection_settings("service=lab", {"PGSERVICEFILE": str(tmp_path / "x"),
                                                      "PGSYSCONFDIR": str(tmp_path)})
    assert "keepalives_idle" not in settings and settings["connect_timeout"] == "10"


def test_a_newer_schema_is_refused_naming_both_versions(lab, cli, tmp_path):
    import psycopg
    with psycopg.connect(lab[db.OWNER], autocommit=True) as conn:
        conn.execute("UPDATE perfscale_schema SET version = 99")
    code, _, err = cli("history", "sync", "--history", lab[db.WRITER], "--spool",
                       tmp_path / "s")
    assert code == 2
    assert "schema 99, this one knows %d" % history.SCHEMA_VERSION in err


def test_an_older_sqlite_history_is_migrated_with_stable_run_keys(tmp_path, lab, cli):
    path = str(tmp_path / "v2.sqlite")
    old = sqlite3.connect(path)
    from test_gate import VERSION_1_SCHEMA
    old.executescript(VERSION_1_SCHEMA + "ALTER TABLE runs ADD COLUMN complete INTEGER NOT "
                      "NULL DEFAULT 1;" + schema.CALIBRATION_V2
                      + "PRAGMA user_version = 2;")
    for _ in range(2):  # two identical rows still get two keys
        old.execute("INSERT INTO runs (recorded_at, host, cpus, config, run_args, "
                    "repetitions, context, regressions) VALUES ('t', 'h', 2, 'ci', '[]', 10, "
                    "'{}', 0)")
    old.execute("INSERT INTO calibration VALUES ('h', 2, 'ci', 'BM_A', 'real_time', 0.1, "
                "0.2, 0.03, 5, NULL, 't')")
    old.commit()
    old.close()
    with history.open_history(path) as conn:
        keys = [r["run_key"] for r in history.all_runs(conn)]
        assert len(set(keys)) == 2 and all(keys)
        assert history.find_baseline(conn, "h", 2, "ci")["id"] == 2
        assert history.load_calibration(conn, "h", 2, "ci")[("BM_A", "real_time")].mdc == 0.2
    migrated = sqlite3.connect(path)
    assert migrated.execute("PRAGMA user_version").fetchone()[0] == history.SCHEMA_VERSION == 7
    # Version 4: the dashboard's triage tables; version 5: the alerts; all empty.
    for table in ("triage", "triage_log", "alerts", "alert_members", "alert_log"):
        assert migrated.execute("SELECT COUNT(*) FROM %s" % table).fetchone()[0] == 0
    migrated.close()
    assert cli("history", "import", "--history", lab[db.OWNER], path)[0] == 0
    assert sorted(r["run_key"] for r in _rows(lab[db.OWNER], "SELECT run_key FROM runs")) \
        == sorted(keys)


def test_sql_and_markup_in_benchmark_names_are_stored_as_text(lab, tmp_path, cli):
    document = json.loads(open(data("base.json"), encoding="utf-8").read())
    evil = "BM_X'); DROP TABLE runs; --/<script>alert(1)</script>/%s?/real_time"
    for item in document["benchmarks"]:
        item["name"] = item["name"].replace("BM_", evil.replace("/real_time", "") + "_", 1)
        item["run_name"] = item.get("run_name", item["name"]).replace(
            "BM_", evil.replace("/real_time", "") + "_", 1)
    document["context"]["host_name"] = "h'; DELETE FROM samples; --"
    path = tmp_path / "evil.json"
    path.write_text(json.dumps(document))
    code, out, err = cli("history", "import", "--history", lab[db.WRITER], path)
    assert code == 0, err
    names = [r["name"] for r in _rows(lab[db.WRITER], "SELECT name FROM benchmarks")]
    assert names and all(n.startswith("BM_X'); DROP TABLE runs; --/<script>") for n in names)
    assert _rows(lab[db.WRITER], "SELECT host FROM runs")[0]["host"] == \
        "h'; DELETE FROM samples; --"
    assert _rows(lab[db.WRITER], "SELECT COUNT(*) AS n FROM benchmarks "
                 "WHERE real_ns IS NOT NULL")[0]["n"] > 0


def test_the_reader_reads_and_cannot_write(lab):
    results = results_io.load_results(data("base.json"))
    with history.open_history(lab[db.READER]) as conn:
        assert history.trends(conn) == {}
        with pytest.raises(history.HistoryError, match="permission denied"):
            history.record_run(conn, history.RunInfo.from_results(results, "ci", [], 10),
                               results, [], None)
    import psycopg
    with history.open_history(lab[db.WRITER]) as conn:  # the writer only adds
        for sql in ("DROP TABLE benchmarks", "DELETE FROM runs", "UPDATE runs SET host = 'x'"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.engine.execute(sql)


def test_passwords_are_redacted_in_every_form():
    assert history.redact("postgresql://w:s3cr3t@h:5/db failed") == \
        "postgresql://w:***@h:5/db failed"
    assert history.redact("host=h password=s3cr3t dbname=x") == "host=h password=*** dbname=x"
    assert history.redact("postgresql://h/db?password=s3cr3t&sslmode=x") == \
        "postgresql://h/db?password=***&sslmode=x"
    assert "s3cr3t" not in history.redact("FATAL: for s3cr3t", "host=h password=s3cr3t")
    assert history.describe("results/history.sqlite") == "results/history.sqlite"


def test_identity_changes_are_named():
    old = {"machine_mitigations": json.dumps({"spectre_v2": "Mitigation: Retpolines",
                                              "mds": "Not affected"}),
           "machine_microcode": "0xf0", "kernel_release": "6.1"}
    new = dict(old, machine_mitigations=json.dumps({"spectre_v2": "Vulnerable",
                                                    "mds": "Not affected"}),
               kernel_release="6.12")
    assert identity.changes(old, new) == ["mitigations: spectre_v2 changed"]
    assert identity.kernel_reported_changes(old, new) == ["mitigations: spectre_v2 changed"]
    # The kernel under test stays inside the lineage, and so do the mitigations it reports
    # (5.10 and 6.12 word them differently on one CPU); the machine does not.
    assert identity.digest(old) == identity.digest(new)
    assert identity.digest(old) == identity.digest(dict(old, kernel_release="6.12",
                                                        kernel_cmdline="quiet"))
    assert identity.digest(old) != identity.digest(dict(old, machine_microcode="0xf4"))
    assert identity.kernel_reported_changes(old, dict(old, machine_microcode="0xf4")) == []
    host = dict(old, machine_host_mitigations=old["machine_mitigations"])
    assert identity.digest(host) == identity.digest(
        dict(host, machine_host_mitigations=new["machine_mitigations"]))
    # Text perfscale did not write is named, not parsed into a traceback.
    assert identity.changes(old, dict(old, machine_mitigations="[1")) == [
        "mitigations: %s -> [1" % old["machine_mitigations"]]
    here = identity.collect()
    assert here["machine_threads"] == str(os.cpu_count()) or here["machine_threads"] != "0"
    assert set(json.loads(here["machine_mitigations"])) == set(
        os.listdir("/sys/devices/system/cpu/vulnerabilities")) if os.path.isdir(
        "/sys/devices/system/cpu/vulnerabilities") else True


def _two_nights(tmp_path, cli, monkeypatch, first, second):
    """The fake suite's nightly twice in one history, the context set as given; the
    second night's (exit status, output)."""
    monkeypatch.setenv("PERFSCALE_BINARY", FAKE_RUN)
    monkeypatch.setenv("PERFSCALE_COMPARE_PY", str(tmp_path / "none.py"))
    argv = ["nightly", "--history", tmp_path / "h.sqlite", "--report-dir", tmp_path / "n",
            "--no-plots", "--config", "ci", "--", "--", "--fixture=base.json"]
    assert cli(*argv, "--context=" + first)[0] == 0
    code, out, _ = cli(*argv, "--context=" + second)
    return code, out


def test_the_nightly_says_what_changed_when_a_host_is_another_machine(tmp_path, cli,
                                                                       monkeypatch):
    code, out = _two_nights(tmp_path, cli, monkeypatch, "machine_microcode=0xf0",
                            "machine_microcode=0xf4")
    assert code == 0
    assert "is another machine than at run 1 (microcode: 0xf0 -> 0xf4)" in out
    assert "no baseline yet" in out  # not compared silently


def test_mitigations_the_kernel_reports_otherwise_are_judged_in_the_lineage_and_named(
        tmp_path, cli, monkeypatch):
    """A kernel A/B (issue 37: 5.10 against 6.12 in one guest) changes the mitigations'
    text; the nights stay one lineage, judged, and the nightly names what moved."""
    code, out = _two_nights(tmp_path, cli, monkeypatch,
                            'machine_mitigations={"spectre_v2": "Mitigation"}',
                            'machine_mitigations={"spectre_v2": "Vulnerable"}')
    assert code == 0, out
    assert "another machine" not in out and "no baseline yet" not in out
    assert "no regression against run 1" in out
    assert "reports otherwise than at baseline run 1" in out
    assert "mitigations: spectre_v2 changed" in out


def test_trials_take_a_private_sqlite_copy_of_a_server_history(lab, tmp_path):
    results = results_io.load_results(data("base.json"))
    with history.open_history(lab[db.WRITER]) as conn:
        run_id = history.record_run(conn, history.RunInfo.from_results(results, "ci", [], 10),
                                    results, [], None, complete=True)
        history.store_calibration(conn, results.host, results.cpus, "ci", [
            history.Calibration("BM_A", "real_time", 0.05, 0.08, 0.02, 4)])
        expected = history.load_entries(conn, run_id)
    copy = transfer.snapshot_to_sqlite(lab[db.READER], str(tmp_path / "copy.sqlite"))
    with history.open_history(copy) as conn:
        assert history.calibrated_lineages(conn, "ci") == [(results.host, results.cpus, "")]
        [row] = history.find_baselines(conn, results.host, results.cpus, "ci", 8)
        got = history.load_entries(conn, row["id"])
    assert {n: e.real_ns for n, e in got.items()} == {n: e.real_ns for n, e in expected.items()}


def test_db_start_migrates_an_older_history_and_grants_its_new_tables(pg_server):
    """A lab's history of schema 3 (before the triage and alert tables): `db start` again
    migrates it as the owner and grants the roles the new tables, so the dashboard's
    writer can triage and open alerts, and its reader read."""
    from perfscale.history import alerts, triage, views
    running = db.start(pg_server["dir"])  # already running: nothing to start
    urls = running["urls"]
    with history.open_history(urls[db.OWNER]) as conn:
        as_schema_5(conn)
        # Statement by statement: transaction() would renew schema 7's change stamp.
        for table in ("alert_log", "alert_members", "alerts", "triage_log", "triage"):
            conn.engine.execute("DROP TABLE %s" % table)
        conn.engine.set_version(3)
    with pytest.raises(history.HistoryError):  # the writer may not migrate
        history.open_history(urls[db.WRITER]).close()
    assert db.start(pg_server["dir"])["pid"] == running["pid"]  # the same server
    item = triage.Item("regression", "lab-1", "5b25", 2, "ci", "BM_X", 1)
    with history.open_history(urls[db.WRITER]) as conn:
        assert conn.engine.version() == history.SCHEMA_VERSION == 7
        triage.set_state(conn, item, "acknowledged", "alice", "known")
        alert_id, opened = alerts.open_or_join(
            conn, "regression", alerts.Change("6.1", "6.12"),
            alerts.Member("lab-1", "5b25", 2, "ci", "BM_X", None, 0.1), 1)
        assert opened
        alerts.set_state(conn, alert_id, "acknowledged", "alice", "known")
    with history.open_history(urls[db.READER], read_only=True) as conn:
        assert [r["state"] for r in views.rows(conn, "SELECT state FROM triage")] == [
            "acknowledged"]
        assert [r["state"] for r in alerts.log(conn, alert_id)] == ["new", "acknowledged"]
        with pytest.raises(history.HistoryError):
            alerts.set_state(conn, alert_id, "fixed", "bob", "a reader cannot")
        with pytest.raises(history.HistoryError):
            triage.set_state(conn, item, "fixed", "bob", "a reader cannot")


def test_a_pooled_target_lends_one_connection_again_and_again(lab):
    """use_pool (the dashboard's): an Engine borrows its connection and gives it back; a
    reader's borrow is read-only even after a writer's, and the other way round."""
    from perfscale.history import postgres_engine
    target = lab[db.WRITER]
    postgres_engine.use_pool(target, 2)
    try:
        pids = set()
        for read_only in (False, True, False):
            with history.open_history(target, read_only=read_only) as conn:
                pids.add(conn.engine.execute("SELECT pg_backend_pid() AS p")[0]["p"])
                assert conn.engine.execute("SHOW default_transaction_read_only")[0][
                    "default_transaction_read_only"] == ("on" if read_only else "off")
        assert len(pids) == 1
    finally:
        postgres_engine._POOL_SIZES.pop(target)
        postgres_engine._POOLS.pop((os.getpid(), target)).close()


def test_db_stop_signals_nothing_but_its_own_server(tmp_path, cli, pg_server):
    """A postmaster.pid naming a live process that is not that folder's PostgreSQL (a
    stale file whose number was reused, or another cluster's server): `db stop` says the
    file is stale, exits 2 and signals nothing; the folder's own server still stops."""
    server = db.start(pg_server["dir"])["pid"]  # already running: its current pid
    stranger = subprocess.Popen(["sleep", "60"])
    try:
        other = tmp_path / "other"
        (other / "data").mkdir(parents=True)
        for pid in (stranger.pid, server):
            (other / "data" / "postmaster.pid").write_text("%d\n/somewhere\n" % pid)
            code, out, err = cli("db", "stop", other)
            assert code == 2, (out, err)
            assert "stale" in err and str(pid) in err and "nothing was signalled" in err
        assert alive(stranger.pid) and alive(server)
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


def test_db_stop_after_a_failed_initdb_is_nothing_to_stop(tmp_path):
    """An initdb that failed leaves its single-user backend's postmaster.pid, a negative
    number: no server runs, and stop says so (pidfd_open refused it with EINVAL)."""
    from perfscale.history import cluster
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "postmaster.pid").write_text("-25313\n%s\n" % (tmp_path / "data"))
    assert cluster.stop(str(tmp_path)) is None


def _sha(path):
    import hashlib
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_import_reads_its_sources_and_never_writes_them(tmp_path, cli):
    """Another program's SQLite file is refused and left as it was (it used to gain
    perfscale's tables, reported as "0 runs added"); a perfscale history the user may read
    but not write imports (it used to say "read-only ... pass another --history")."""
    foreign = tmp_path / "other-app.sqlite"
    with sqlite3.connect(foreign) as other:
        other.execute("CREATE TABLE notes (body TEXT)")
        other.execute("INSERT INTO notes VALUES ('mine')")
    other.close()
    before = _sha(foreign)
    code, out, err = cli("history", "import", "--create", "--history", tmp_path / "h.sqlite",
                         foreign)
    assert code == 2 and "not a perfscale history" in err and str(foreign) in err, (out, err)
    assert _sha(foreign) == before

    import tempfile
    base = tempfile.mkdtemp(prefix="perfscale-ro-")  # a user other than root must reach it
    os.chmod(base, 0o755)
    try:
        _import_from_a_history_i_cannot_write(base)
    finally:
        for folder, _, _ in os.walk(base):
            os.chmod(folder, 0o755)
        shutil.rmtree(base)


def _import_from_a_history_i_cannot_write(base):
    shared = os.path.join(base, "shared")
    os.mkdir(shared)
    source = os.path.join(shared, "lab.sqlite")
    with history.open_history(source) as conn:
        results = results_io.load_results(data("base.json"))
        history.record_run(conn, history.RunInfo.from_results(results, "ci", [], 10),
                           results, [], None)
    os.chmod(source, 0o444)
    os.chmod(shared, 0o555)  # not even a journal beside it
    before = _sha(source)
    mine = os.path.join(base, "mine")
    os.mkdir(mine)
    os.chmod(mine, 0o777)
    command = [os.path.join(REPO_ROOT, "tools", "perfscale"), "history", "import", "--create",
               "--history", os.path.join(mine, "h.sqlite"), source]
    if os.geteuid() == 0:  # root writes anything: import as a user who cannot
        command = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] + command
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "1 run(s) added" in done.stdout
    assert _sha(source) == before


def _spool_a_run(spool_dir, key):
    results = results_io.load_results(data("base.json"))
    info = history.RunInfo.from_results(results, "ci", [], 10)
    info.run_key = key
    return spool.save(str(spool_dir), info, data("base.json"))


def test_sync_names_a_bad_spooled_run_sets_it_aside_and_stores_the_others(tmp_path, cli):
    """A spooled run.json cut short, lacking run_key, or with a list for the host: named,
    kept as .unusable-NAME, the good runs stored, exit 2; the history is not blamed."""
    spool_dir = tmp_path / "spool"
    good = _spool_a_run(spool_dir, "run-good")
    bad = {}
    for key, damage in (("run-cut", lambda text: text[:len(text) // 2]),
                        ("run-nokey", lambda text: json.dumps(
                            {k: v for k, v in json.loads(text).items() if k != "run_key"})),
                        ("run-list", lambda text: json.dumps(
                            dict(json.loads(text), host=["a", "b"])))):
        folder = _spool_a_run(spool_dir, key)
        info = os.path.join(folder, "run.json")
        with open(info) as f:
            text = f.read()
        with open(info, "w") as f:
            f.write(damage(text))
        bad[key] = info
    target = tmp_path / "h.sqlite"
    code, out, err = cli("history", "sync", "--history", target, "--spool", spool_dir)
    assert code == 2, (out, err)
    assert "1 run(s) stored" in out and "3 unusable" in out
    for key, info in bad.items():
        assert info in err, (key, err)
        assert (spool_dir / (".unusable-" + key) / "run.json").is_file()
    assert "lacks run_key" in err and "host is list" in err
    assert "damaged" not in err and "Traceback" not in err
    assert not os.path.exists(good) and spool.pending(str(spool_dir)) == []
    with history.open_history(str(target)) as conn:
        assert history.has_run(conn, "run-good")
    # A sync again: nothing left to do, and the set-aside runs stay set aside.
    assert cli("history", "sync", "--history", target, "--spool", spool_dir)[0] == 0
    assert len(list(spool_dir.glob(".unusable-*"))) == 3


def test_two_syncs_at_once_store_each_run_once_and_both_exit_0(tmp_path):
    spool_dir = tmp_path / "spool"
    for n in range(12):
        _spool_a_run(spool_dir, "run-%02d" % n)
    target = str(tmp_path / "h.sqlite")
    history.open_history(target).close()
    command = [os.path.join(REPO_ROOT, "tools", "perfscale"), "history", "sync",
               "--history", target, "--spool", str(spool_dir)]
    syncs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outputs = [s.communicate(timeout=300) for s in syncs]
    assert [s.returncode for s in syncs] == [0, 0], outputs
    assert not any("Errno" in err for _, err in outputs)
    assert os.listdir(spool_dir) == []
    with history.open_history(target) as conn:
        assert history.counts(conn)["runs"] == 12


def test_a_run_another_sync_claims_while_this_one_lists_is_no_error(tmp_path, monkeypatch):
    """CI saw it: a second sync listed the spool, the first claimed run-00, and reading
    run-00's time to order the list raised ENOENT: exit 2. The run the other took is now
    left to it; this sync stores the rest."""
    spool_dir = tmp_path / "spool"
    for key in ("run-a", "run-b"):
        _spool_a_run(spool_dir, key)
    real_getmtime = os.path.getmtime
    taken = []

    def another_sync_claims_run_a_first(path):
        if os.path.basename(path) == "run-a" and not taken:
            os.rename(path, os.path.join(os.path.dirname(path), ".claimed-1-run-a"))
            taken.append(path)
        return real_getmtime(path)

    monkeypatch.setattr(spool.os.path, "getmtime", another_sync_claims_run_a_first)
    assert spool.pending(str(spool_dir)) == [str(spool_dir / "run-b")]
    assert taken


def test_two_db_starts_at_once_on_a_fresh_folder_both_get_the_server(tmp_path):
    """They took turns at nothing: both failed (a vanished .initdb-pw, initdb's "not
    empty") and every later start failed on a missing perfscale-db.json. Now one sets the
    folder up while the other waits, and both print the same running server."""
    import tempfile
    missing = postgres_missing()
    if missing:
        pytest.skip(missing)
    parent = tempfile.mkdtemp(prefix="perfscale-pg2-")
    os.chmod(parent, 0o755)
    directory = os.path.join(parent, "cluster")
    command = [os.path.join(REPO_ROOT, "tools", "perfscale"), "db", "start", directory]
    try:
        starts = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True) for _ in range(2)]
        outputs = [s.communicate(timeout=300)[0] for s in starts]
        assert [s.returncode for s in starts] == [0, 0], outputs
        pids = {line.split("(pid ")[1].split(")")[0] for out in outputs
                for line in out.splitlines() if "(pid " in line}
        assert len(pids) == 1, outputs
        again = subprocess.run(command, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0 and pids.pop() in again.stdout, again.stdout + again.stderr
    finally:
        pid = db.stop(directory)
        assert pid is None or not alive(pid)
        shutil.rmtree(parent)


def test_a_cluster_without_its_state_file_is_named_with_what_to_do(tmp_path, cli):
    folder = tmp_path / "half"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "PG_VERSION").write_text("15\n")
    code, out, err = cli("db", "start", folder)
    assert code == 2 and "perfscale-db.json" in err and "move" in err, (out, err)


def test_a_server_that_stops_answering_mid_nightly_ends_in_the_spool(lab, tmp_path):
    """The server accepts the nightly's connection and then never answers its statements
    (here a lock another session never releases; a stopped backend looks the same from the
    client, and TCP keepalives see a live peer either way): the nightly cuts the
    connection after --history-timeout, spools the run as for a vanished server and exits
    2, instead of waiting forever."""
    import time
    import psycopg
    url = lab[db.WRITER]
    history.open_history(url).close()  # the schema exists before the lock
    env = dict(os.environ, PERFSCALE_BINARY=FAKE_RUN,
               PERFSCALE_COMPARE_PY=str(tmp_path / "none.py"))
    with psycopg.connect(lab[db.OWNER]) as holder:
        holder.execute("LOCK TABLE runs IN ACCESS EXCLUSIVE MODE")  # held until rollback
        started = time.monotonic()
        nightly = subprocess.run(
            [PYTHON, "-m", "perfscale.cli", "nightly", "--history", url, "--history-timeout",
             "3", "--report-dir", str(tmp_path / "n"), "--spool", str(tmp_path / "spool"),
             "--no-plots", "--config", "ci", "--", "--", "--fixture=base.json"],
            cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, env=env)
        took = time.monotonic() - started
        holder.rollback()
    assert nightly.returncode == 2, nightly.stdout + nightly.stderr
    assert "no answer within 3 s" in nightly.stderr, nightly.stderr
    assert len(spool.pending(str(tmp_path / "spool"))) == 1
    assert took < 60, took  # bounded: the fake run itself takes a second or two
    code = subprocess.run([PYTHON, "-m", "perfscale.cli", "history", "sync", "--history", url,
                           "--spool", str(tmp_path / "spool")], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120).returncode
    assert code == 0 and spool.pending(str(tmp_path / "spool")) == []
