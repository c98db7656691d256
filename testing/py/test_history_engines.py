"""The history's engine is chosen from the target's text alone (perfscale.history.targets):
an SQLite history works on a machine without psycopg, and a server target there fails in
one line that names the missing driver.

Each test runs perfscale in a child Python whose path starts with a `psycopg` that raises
ImportError on import: the driver is unimportable whether or not this machine has it.
"""

import os
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO_ROOT, data

PY_ROOT = os.path.join(REPO_ROOT, "tools", "py")


@pytest.fixture
def no_psycopg(tmp_path):
    """run(*args) -> CompletedProcess of `python ARGS` with psycopg unimportable."""
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "psycopg.py").write_text('raise ImportError("psycopg hidden by the test")\n')
    env = dict(os.environ, PYTHONPATH="%s:%s" % (shadow, PY_ROOT), MPLBACKEND="Agg")
    env.pop("PERFSCALE_CWD", None)

    def run(*args):
        return subprocess.run([sys.executable, *map(str, args)], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
    return run


def test_the_test_really_hides_psycopg(no_psycopg):
    done = no_psycopg("-c", "import psycopg")
    assert done.returncode != 0 and "hidden by the test" in done.stderr


def test_an_sqlite_history_needs_no_postgresql_driver(no_psycopg, tmp_path):
    history = tmp_path / "history.sqlite"
    # Written through a command: a loose result file imported as a run.
    done = no_psycopg("-m", "perfscale.cli", "history", "import", "--create", "--history",
                      history, data("base.json"))
    assert done.returncode == 0, done.stderr
    assert "added as run 1" in done.stdout
    # Read back and written again through the library, and the driver never loaded.
    done = no_psycopg("-c", textwrap.dedent("""
        import sys
        from perfscale.history import store
        with store.open_history(sys.argv[1], read_only=True) as conn:
            runs = store.all_runs(conn)
            document = store.as_results_document(conn, runs[0]["id"])
        print(len(runs), len(document["benchmarks"]) > 0)
        with store.open_history(sys.argv[1]) as conn:
            info = store.get_run(conn, runs[0]["id"])
        print(info is not None, store.redact("postgresql://w:s3cr3t@h/db", sys.argv[1]))
        print("psycopg" in sys.modules, "perfscale.history.postgres_engine" in sys.modules)
        """), history)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["1 True", "True postgresql://w:***@h/db",
                                           "False False"]
    # A second SQLite history takes the first one's runs: both opened without the driver.
    done = no_psycopg("-m", "perfscale.cli", "history", "import", "--create", "--history",
                      tmp_path / "copy.sqlite", history)
    assert done.returncode == 0, done.stderr
    assert "1 run(s) added" in done.stdout
    # A reader of the history lists its trends.
    done = no_psycopg("-m", "perfscale.cli", "plot", "--history", tmp_path / "copy.sqlite",
                      "-o", tmp_path / "plots")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() and all(os.path.isfile(line.split()[0])
                                       for line in done.stdout.splitlines())


def test_a_server_history_without_the_driver_fails_in_one_line(no_psycopg, tmp_path):
    done = no_psycopg("-m", "perfscale.cli", "history", "sync", "--history",
                      "postgresql://writer:s3cr3t@lab/perf", "--spool", tmp_path / "spool")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert "needs psycopg 3" in done.stderr and "python3-psycopg" in done.stderr
    assert "s3cr3t" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("target, engine", [
    ("results/history.sqlite", "sqlite"), ("postgresql://w@lab/perf", "postgresql"),
    ("postgres://lab/perf", "postgresql"), ("service=perfscale", "postgresql"),
    ("host=lab dbname=perf", "postgresql"), ("/tmp/a=b.sqlite", "sqlite")])
def test_the_engine_comes_from_the_target_text(target, engine):
    from perfscale.history import targets
    assert targets.engine_of(target) == engine
