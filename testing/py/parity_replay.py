"""Records a `tools/perfscale parity FAMILY` session (every command it runs, with what the
command printed) and replays it, so the parity code is tested on real outputs of perf
bench and of our binaries without perf, a build or the kernel.

A session file (testing/py/data/parity/FAMILY.json) holds the parity arguments, the
machine facts the cases depend on (online CPUs, the first CPU this process may use), each
call of subprocess.run in order, and the exit code, table and JSON rows the run gave.
Our binary's path is written as BINARY. Recording: testing/py/data/parity/record.py.
"""

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SESSIONS = os.path.join(HERE, "data", "parity")
BINARY = "BINARY"
# What `tools/perfscale parity FAMILY ARGS` is recorded with: two rounds (the least the
# parity commands take), cases of a few seconds each.
ARGS = {
    "breakpoint": ["--rounds", "2"],
    "event_open": ["--rounds", "2", "--only", "n=100 "],
    "synthesize": ["--rounds", "2"],
    "trace_overhead": ["--rounds", "2", "--loops", "20000"],
}


def _module(family, command=False):
    """The family's parity (perfscale.parity.<family>), or its command's module."""
    import importlib
    return importlib.import_module(("perfscale.commands.parity." if command else
                                    "perfscale.parity.") + family)


def _normal(cmd, binary):
    return [BINARY if part == binary else part for part in cmd]


def _same(cmd, recorded):
    """perf's command exactly; ours by what it runs (the placement prefix and the
    --benchmark_filter), so that renamed family flags keep the recordings valid."""
    if BINARY not in recorded:
        return list(cmd) == recorded

    def key(command):
        where = command.index(BINARY) if BINARY in command else None
        return (command[:where], [a for a in command if a.startswith("--benchmark_filter=")])
    return key(list(cmd)) == key(recorded)


def _stdout_file(kwargs):
    target = kwargs.get("stdout")
    return target if hasattr(target, "write") else None


@contextlib.contextmanager
def _patched(obj, name, value):
    old = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, old)


def _run_main(family, argv, run, binary, facts):
    """Runs the family's main(argv) with subprocess.run, the build and the machine facts
    replaced; returns (exit code, printed table, JSON rows)."""
    from perfscale.parity import common as pc
    module = _module(family)
    out = io.StringIO()
    folder = tempfile.mkdtemp(prefix="perfscale-parity-")
    json_path = os.path.join(folder, "rows.json")
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, folder, True)
        stack.enter_context(_patched(shutil, "which", lambda name: "/usr/bin/" + name))
        stack.enter_context(_patched(subprocess, "run", run))
        stack.enter_context(_patched(pc, "require_perf", lambda: "perf"))
        stack.enter_context(_patched(pc, "build_binary", lambda target: binary))
        stack.enter_context(_patched(os, "sched_getaffinity", lambda pid: {facts["cpu"]}))
        if hasattr(module, "online_cpus"):
            stack.enter_context(_patched(module, "online_cpus", lambda: facts["cpus"]))
        stack.enter_context(contextlib.redirect_stdout(out))
        code = _module(family, command=True).main(list(argv) + ["--json", json_path])
        rows = None
        if os.path.exists(json_path):
            with open(json_path) as f:
                rows = json.load(f)["rows"]
    return code, out.getvalue(), rows


def record(family, binary):
    """Runs the family's parity for real (perf, our built binary) and returns its session."""
    real_run = subprocess.run
    calls = []

    def recording_run(cmd, **kwargs):
        result = real_run(cmd, **kwargs)
        stdout = result.stdout
        target = _stdout_file(kwargs)
        if target is not None:
            target.flush()
            with open(target.name) as f:
                stdout = f.read()
        calls.append({"cmd": _normal(cmd, binary), "returncode": result.returncode,
                      "stdout": stdout, "stderr": result.stderr or ""})
        return result

    from perfscale.parity import event_open
    facts = {"cpus": event_open.online_cpus(), "cpu": min(os.sched_getaffinity(0))}
    code, table, rows = _run_main(family, ARGS[family], recording_run, binary, facts)
    return {"family": family, "argv": ARGS[family], "facts": facts, "calls": calls,
            "exit_code": code, "table": table, "rows": rows}


def load(family):
    with open(os.path.join(SESSIONS, family + ".json")) as f:
        return json.load(f)


def replay(session, argv=None, edit=None):
    """Runs the session's parity again on its recorded outputs; returns (exit code, table,
    rows). edit(cmd, stdout) -> stdout may change what a command printed. A command the
    recording does not have next fails the run with an AssertionError."""
    calls = list(session["calls"])

    def replaying_run(cmd, **kwargs):
        assert calls, "ran %s, which the recording does not have" % cmd
        call = calls.pop(0)
        assert _same(cmd, call["cmd"]), "ran %s, the recording ran %s" % (cmd, call["cmd"])
        stdout = edit(cmd, call["stdout"]) if edit else call["stdout"]
        target = _stdout_file(kwargs)
        if target is not None:
            target.write(stdout)
            stdout = None
        return subprocess.CompletedProcess(cmd, call["returncode"], stdout, call["stderr"])

    result = _run_main(session["family"], session["argv"] if argv is None else argv,
                       replaying_run, BINARY, session["facts"])
    return result


if __name__ == "__main__":
    sys.exit("use testing/py/data/parity/record.py")
