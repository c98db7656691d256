"""Schema 6: samples packed into their benchmark's row, and machine digests without the
mitigations; a version-5 history migrated on both engines with nothing lost."""

import hashlib
import json
import math

import pytest

from conftest import as_schema_5, pg_history, postgres_missing
from perfscale.history import alerts, cluster, packed, store as history, triage, views
from perfscale.machine import identity
from perfscale.results import io as results_io, names as results_names

NAME = "BM_X/threads:2/real_time"
OTHER = "BM_Y/real_time"
MITIGATIONS = ({"spectre_v2": "Mitigation: Retpolines; IBPB: conditional"},   # 6.12's words
               {"spectre_v2": "Mitigation: Full AMD retpoline, IBPB: conditional"})  # 5.10's


def _context(kernel, mitigations):
    return {"host_name": "lab-1", "num_online_cpus": "2", "kernel_release": kernel,
            "machine_cpu_model": "EPYC", "machine_microcode": "0xf0",
            "machine_mitigations": json.dumps(mitigations, sort_keys=True)}


def _digest_of_schema_5(context):
    """identity.digest as schema 5 took it: every machine_* field, the mitigations too."""
    found = identity.fields(context)
    text = json.dumps(found, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _record(conn, night, kernel, mitigations):
    """A night of two benchmarks: one with CPU times (one of them missing), one without."""
    context = _context(kernel, mitigations)
    real = [1000.0 + 7.25 * night + r for r in range(5)]
    cpu = [900.5, math.nan, 901.0, 902.0, 903.0]
    entries = {NAME: results_io.Entry(NAME, results_names.parse_name(NAME), "us", real, cpu),
               OTHER: results_io.Entry(OTHER, results_names.parse_name(OTHER), "ns",
                                       [5.0, 4.0, 6.0], [math.nan] * 3)}
    info = history.RunInfo("lab-1", 2, "ci", ["--quick"], 5, context,
                           recorded_at="2026-12-0%dT00:00:00+00:00" % (night + 1))
    return history.record_run(conn, info, results_io.ResultSet("", context, entries), [],
                              None, complete=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "history.sqlite")
    if postgres_missing():
        pytest.skip(postgres_missing())
    return pg_history(request.getfixturevalue("pg_server"),
                      "t_packed_%d" % (abs(hash(request.node.name)) % 10**8))[cluster.OWNER]


def test_a_benchmark_row_holds_its_repetitions_and_reads_back_exactly(target):
    with history.open_history(target) as conn:
        run_id = _record(conn, 0, "6.12.118", MITIGATIONS[0])
        entries = history.load_entries(conn, run_id)
        assert entries[NAME].real_ns == [1000.0, 1001.0, 1002.0, 1003.0, 1004.0]
        assert entries[NAME].cpu_ns[0] == 900.5 and math.isnan(entries[NAME].cpu_ns[1])
        assert all(math.isnan(c) for c in entries[OTHER].cpu_ns)
        row = views.one(conn, "SELECT real_ns, cpu_ns FROM benchmarks WHERE name = ?",
                        (OTHER,))
        assert len(packed.unpack(row["real_ns"])) == 3 and row["cpu_ns"] is None
        assert history.counts(conn)["samples"] == 8
        machine = history.get_run(conn, run_id)["machine"]
        [(got_id, _, values)] = history.series(conn, "lab-1", machine, 2, "ci", NAME)
        assert got_id == run_id and values == entries[NAME].real_ns
        document = history.as_results_document(conn, run_id)
        rebuilt = results_io.parse_results(results_io.dumps(document))
        assert rebuilt.entries[NAME].real_ns == pytest.approx(entries[NAME].real_ns)  # us
        assert [b["repetition_index"] for b in document["benchmarks"]
                if b["name"] == NAME] == [0, 1, 2, 3, 4]


def test_a_version_5_history_is_migrated_with_every_sample_and_one_lineage(target):
    with history.open_history(target) as conn:
        ids = [_record(conn, n, k, m) for n, (k, m) in enumerate(
            [("6.12.118", MITIGATIONS[0]), ("6.12.118", MITIGATIONS[0]),
             ("5.10.0-46", MITIGATIONS[1])])]
        expected = {i: history.load_entries(conn, i) for i in ids}
        machine = history.get_run(conn, ids[0])["machine"]
        history.store_calibration(conn, "lab-1", 2, "ci", [
            history.Calibration(NAME, "real_time", 0.05, 0.08, 0.02, 4)], machine)
        triage.set_state(conn, triage.Item("regression", "lab-1", machine, 2, "ci", NAME,
                                           ids[2]), "acknowledged", "alice", "5.10")
        alert_id, _ = alerts.open_or_join(
            conn, "regression", alerts.Change("6.12.118", "5.10.0-46"),
            alerts.Member("lab-1", machine, 2, "ci", NAME, ids[1], 0.17), ids[2])
        as_schema_5(conn, _digest_of_schema_5)
    with history.open_history(target) as conn:
        runs = history.all_runs(conn)
        # Two digests at schema 5 (the mitigations' words moved with the kernel), one now.
        assert len({_digest_of_schema_5(json.loads(r["context"])) for r in runs}) == 2
        assert {r["machine"] for r in runs} == {machine}
        for run_id, entries in expected.items():
            got = history.load_entries(conn, run_id)
            assert {n: e.real_ns for n, e in got.items()} == \
                {n: e.real_ns for n, e in entries.items()}
            assert {n: [c for c in e.cpu_ns if not math.isnan(c)] for n, e in got.items()} \
                == {n: [c for c in e.cpu_ns if not math.isnan(c)] for n, e in entries.items()}
        assert history.counts(conn)["samples"] == 3 * 8
        assert "samples" not in conn.engine.tables()
        indexes = conn.engine.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index'" if conn.engine.name ==
            "sqlite" else "SELECT indexname AS name FROM pg_indexes")
        assert "benchmarks_by_name" not in {r["name"] for r in indexes}  # the key serves
        assert history.load_calibration(conn, "lab-1", 2, "ci", machine)[
            (NAME, "real_time")].mdc == 0.08
        assert history.find_baselines(conn, "lab-1", 2, "ci", 8, machine)[0]["id"] == ids[2]
        assert list(triage.states(conn, "lab-1", machine, 2, "ci").values())[0]["state"] == \
            "acknowledged"
        [member] = alerts.members(conn, alert_id)
        assert member["machine"] == machine


def test_a_migration_that_would_leave_samples_behind_changes_nothing(tmp_path):
    path = str(tmp_path / "h.sqlite")
    with history.open_history(path) as conn:
        _record(conn, 0, "6.12.118", MITIGATIONS[0])
        as_schema_5(conn, _digest_of_schema_5)
        # A sample of no stored benchmark (no transaction(): schema 5 has no change stamp).
        conn.engine.execute("INSERT INTO samples VALUES (1, 'BM_Gone', 0, 1.0, NULL)")
    with pytest.raises(history.HistoryError, match="would keep 8 of 9"):
        history.open_history(path).close()
    import sqlite3
    untouched = sqlite3.connect(path)
    assert untouched.execute("PRAGMA user_version").fetchone()[0] == 5
    assert untouched.execute("SELECT COUNT(*) FROM samples").fetchone()[0] == 9
    untouched.close()


def test_a_damaged_packed_value_is_named_not_a_traceback(tmp_path):
    path = str(tmp_path / "h.sqlite")
    with history.open_history(path) as conn:
        run_id = _record(conn, 0, "6.12.118", MITIGATIONS[0])
        with conn.engine.transaction():
            conn.engine.execute("UPDATE benchmarks SET real_ns = ? WHERE name = ?",
                                (b"\x00" * 13, NAME))
        with pytest.raises(history.HistoryError, match="damaged.*13 bytes"):
            history.load_entries(conn, run_id)


def test_packing_keeps_every_bit():
    values = [0.0, -0.0, 1e-300, 123456789.123456789, math.inf, 5e-324]
    assert packed.unpack(packed.pack(values)) == values
    assert packed.pack([]) is None and packed.pack([None, math.nan]) is None
    assert math.isnan(packed.unpack(packed.pack([1.0, None]))[1])
    with pytest.raises(packed.Damaged):
        packed.unpack(b"\x00" * 9)
