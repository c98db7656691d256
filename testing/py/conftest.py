"""Shared setup of the results-tooling tests: imports from tools/py, recorded data paths.

Run with perfscale's interpreter (tools/py/python: Debian's, it has scipy and matplotlib):
    tools/py/python -m pytest -q testing/py
"""

import os
import sys

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
