"""A user's relative paths mean what they meant where the user typed them: every
`tools/perfscale` subcommand that takes a path, run from a directory that is not the
repository root, reads and writes there (the script itself works from the root)."""

import os
import shutil
import subprocess
import sys

import pytest

from conftest import FAKE_RUN, REPO_ROOT, data

PERFSCALE = os.path.join(REPO_ROOT, "tools", "perfscale")


@pytest.fixture
def elsewhere(tmp_path):
    """A working directory outside the repository, holding two result files."""
    shutil.copy(data("base.json"), tmp_path / "x.json")
    shutil.copy(data("clean.json"), tmp_path / "y.json")
    return tmp_path


def perfscale(cwd, *args, **env):
    environment = dict(os.environ, **env)
    return subprocess.run([PERFSCALE, *args], cwd=cwd, capture_output=True, text=True,
                          env=environment, timeout=600)


def test_compare(elsewhere):
    result = perfscale(elsewhere, "compare", "x.json", "y.json")
    assert "cannot read" not in result.stderr, result.stderr
    assert result.returncode in (0, 1), result.stdout + result.stderr


def test_report(elsewhere):
    result = perfscale(elsewhere, "report", "x.json", "-o", "page")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (elsewhere / "page").is_dir()


def test_plot(elsewhere):
    result = perfscale(elsewhere, "plot", "x.json", "-o", "plots")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (elsewhere / "plots").is_dir()


def test_nightly(elsewhere):
    result = perfscale(elsewhere, "nightly", "--history", "h.sqlite", "--report-dir", "reports",
                       "--no-plots", PERFSCALE_BINARY=FAKE_RUN,
                       PERFSCALE_COMPARE_PY=str(elsewhere / "no-compare.py"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert (elsewhere / "h.sqlite").is_file()
    assert (elsewhere / "reports").is_dir()


def test_vm_kernel_path(elsewhere, monkeypatch, capsys):
    # `vm --kernel PATH` resolves PATH in the Python front end, started from the root.
    from perfscale import cli
    (elsewhere / "vmlinuz-test").write_bytes(b"not really a kernel")
    monkeypatch.chdir(REPO_ROOT)
    monkeypatch.setenv("PERFSCALE_CWD", str(elsewhere))
    assert cli.main(["vm", "kernel", "vmlinuz-test"]) == 0
    assert capsys.readouterr().out.strip() == str(elsewhere / "vmlinuz-test")


@pytest.mark.skipif(shutil.which("bazel") is None, reason="needs bazel to build the binary")
def test_run_out_and_benchmark_flags(elsewhere):
    result = perfscale(elsewhere, "run", "--family", "breakpoint", "--out", "mine.json", "--",
                       "--benchmark_filter=BM_BreakpointEnable/passive:0/active:1/"
                       "placement:unpinned", "--benchmark_min_time=0.001s")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert (elsewhere / "mine.json").is_file()
    assert "results: %s" % (elsewhere / "mine.json") in result.stdout


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
