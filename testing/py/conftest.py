"""Shared setup of the results-tooling tests: imports from tools/py, recorded data paths.

Run with perfscale's interpreter (tools/py/python: Debian's, it has scipy and matplotlib):
    tools/py/python -m pytest -q testing/py
"""

import os
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO_ROOT, "tools", "py"))

DATA = os.path.join(HERE, "data")
# PERFSCALE_BINARY: stands in for the family binary, the rest of `run` is the real one.
FAKE_RUN = "%s %s" % (sys.executable, os.path.join(HERE, "fake_run.py"))


def data(name):
    return os.path.join(DATA, name)


@pytest.fixture
def cli(capsys):
    """Runs `tools/perfscale COMMAND ARGS` in-process; returns (exit code, stdout, stderr)."""
    from perfscale import cli as dispatcher

    def run(*argv):
        code = dispatcher.main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return code, out, err
    return run


def alive(pid):
    """True while `pid` exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid, encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone before the open, or the read
        return False


def wait_for(predicate, seconds):
    """True once predicate() is, polling for at most `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()
