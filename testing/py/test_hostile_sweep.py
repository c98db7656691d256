"""What the hostile sweep of issue 33 found in the Python tools, one test each.

Each failed on the main of the day before its fix. Run:
    tools/py/python -m pytest -q testing/py/test_hostile_sweep.py
"""

import json
import os

import pytest

from conftest import FAKE_RUN, data

DROPPED = ("BM_BreakpointThread/breakpoints:4/parallelism:2/threads:20/real_time",
           "BM_BreakpointThread/breakpoints:4/parallelism:2/threads:5/real_time")


def _without(tmp_path, fixture, names, out="fewer.json"):
    """A copy of `fixture` without the rows of `names`: a run that lost benchmarks, as a
    run with breakpoint slots held elsewhere did."""
    with open(data(fixture), encoding="utf-8") as f:
        doc = json.load(f)
    doc["benchmarks"] = [b for b in doc["benchmarks"] if b["run_name"] not in names]
    path = tmp_path / out
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_compare_fails_closed_on_rows_that_vanished_from_the_new_run(cli, tmp_path):
    """Item 1: before, 'not compared: in the baseline only' and 'no regression', exit 0."""
    code, out, _ = cli("compare", data("base.json"), _without(tmp_path, "clean.json", DROPPED),
                       "--no-table")
    assert code == 2, out
    assert "no regression" not in out
    last = out.rstrip().splitlines()[-1]
    assert "cannot judge 2 benchmark(s) of the baseline that the new run lacks" in last
    for name in DROPPED:
        assert name in last


def test_compare_still_passes_rows_that_are_new(cli, tmp_path):
    """The other direction is no loss: a benchmark the baseline lacked is only shown."""
    code, out, _ = cli("compare", _without(tmp_path, "base.json", DROPPED), data("clean.json"),
                       "--no-table")
    assert code == 0, out
    assert "new benchmark, not in the baseline" in out


def test_nightly_fails_closed_on_rows_that_vanished_and_records_nothing(cli, tmp_path,
                                                                       monkeypatch):
    """Item 1 in nightly: before, 'no regression against run 1', exit 0, recorded as a
    baseline that lacks the rows."""
    monkeypatch.setenv("PERFSCALE_BINARY", FAKE_RUN)
    monkeypatch.setenv("PERFSCALE_COMPARE_PY", str(tmp_path / "no-compare.py"))
    fewer = _without(tmp_path, "clean.json", DROPPED)
    db, reports = tmp_path / "h.sqlite", tmp_path / "nightly"
    common = ("nightly", "--history", db, "--report-dir", reports, "--no-plots", "--config",
              "ci", "--", "--")
    assert cli(*common, "--fixture=base.json")[0] == 0
    # fake_run copies testing/py/data/NAME; a path outside it works the same (os.path.join)
    code, out, err = cli(*common, "--fixture=%s" % fewer)
    assert code == 2, out + err
    assert "no regression" not in out
    assert "the new run lacks" in err and DROPPED[0] in err
    import sqlite3
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1
    finally:
        conn.close()


# Items 2, 3, 4, 5, 14: the history and the report folder.

@pytest.fixture
def nightly(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("PERFSCALE_BINARY", FAKE_RUN)
    monkeypatch.setenv("PERFSCALE_COMPARE_PY", str(tmp_path / "no-compare.py"))

    def run(db, *run_args, reports=None):
        return cli("nightly", "--history", db, "--report-dir", reports or tmp_path / "nightly",
                   "--no-plots", "--config", "ci", "--", "--", *run_args)
    return run


def _damage_the_end(path):
    """Overwrites the last pages, as a crash of the disk or a stray write does."""
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.seek(size - 2 * 4096)
        f.write(b"\xa5" * 2 * 4096)


def test_plot_and_nightly_name_a_damaged_history_without_a_traceback(cli, nightly, tmp_path):
    """Item 2 (and 14): before, plot died in a traceback (exit 1) and nightly ran the whole
    suite, then called the file 'cannot write'."""
    db = tmp_path / "h.sqlite"
    assert nightly(db, "--fixture=base.json")[0] == 0
    assert nightly(db, "--fixture=clean.json")[0] == 0
    _damage_the_end(db)
    code, _, err = cli("plot", "--history", db, "-o", tmp_path / "plots")
    assert code == 2, err
    assert "damaged" in err and "Traceback" not in err
    runs_before = sorted(os.listdir(tmp_path / "nightly"))
    code, _, err = nightly(db, "--fixture=clean.json")
    assert code == 2
    assert "damaged" in err and "cannot write" not in err
    # Refused before the suite ran: no new run folder.
    assert sorted(os.listdir(tmp_path / "nightly")) == runs_before


def _hold_write_lock(db):
    import subprocess
    import sys
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys\n"
         "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
         "c.execute('BEGIN IMMEDIATE'); print('locked', flush=True); sys.stdin.read()", str(db)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    return holder


def test_a_locked_history_is_read_and_its_writer_waited_for_not_thrown_away(
        cli, nightly, tmp_path, monkeypatch):
    """Item 3: before, plot took the write lock to read, and a writer timing out was told
    'not a usable history (database is locked); move it away to start a new one'."""
    from perfscale.history import sqlite_engine
    db = tmp_path / "h.sqlite"
    assert nightly(db, "--fixture=base.json")[0] == 0
    monkeypatch.setattr(sqlite_engine, "_LOCK_TIMEOUT_S", 1)
    holder = _hold_write_lock(db)
    try:
        code, out, err = cli("plot", "--history", db, "-o", tmp_path / "plots")
        assert code == 0, err
        code, _, err = nightly(db, "--fixture=clean.json")
        assert code == 2
        assert "locked by another writer" in err and "move it away" not in err
    finally:
        holder.communicate("", timeout=30)


def test_report_with_a_mistyped_history_creates_nothing(cli, tmp_path):
    """Item 4: before, an empty history was created at the mistyped path, exit 0."""
    typo = tmp_path / "histroy.sqlite"
    out_dir = tmp_path / "report"
    code, _, err = cli("report", data("base.json"), "-o", out_dir, "--no-plots",
                       "--history", typo)
    assert code == 2
    assert "no such history" in err
    assert not typo.exists() and not out_dir.exists()


def _in_tiny_tmpfs(tmp_path, size_kib, *argv):
    """Runs `tools/perfscale ARGV` in a private mount namespace where tmp_path/full is a
    tmpfs of size_kib (root only); the mount dies with the namespace."""
    import subprocess
    import sys
    if os.geteuid() != 0:
        pytest.skip("needs root for a tmpfs in a private mount namespace")
    full = tmp_path / "full"
    full.mkdir()
    env = dict(os.environ, PERFSCALE_BINARY=FAKE_RUN,
               PERFSCALE_COMPARE_PY=str(tmp_path / "no-compare.py"))
    tools_py = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "tools", "py")
    script = ("mount -t tmpfs -o size=%dk none %s && dd if=/dev/zero of=%s/filler bs=1k "
              "count=%d 2>/dev/null; ls -A %s > %s/../listing; exec \"$@\""
              % (size_kib, full, full, size_kib, full, full))
    code = ("import sys; sys.path.insert(0, %r)\nfrom perfscale import cli\n"
            "rc = cli.main(sys.argv[1:])\nimport os\n"
            "open(%r, 'w').write(' '.join(sorted(os.listdir(%r))))\nsys.exit(rc)"
            % (tools_py, str(tmp_path / "after"), str(full)))
    result = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                             script, "sh", sys.executable, "-c", code, *map(str, argv)],
                            capture_output=True, text=True, env=env, timeout=120)
    return result, (tmp_path / "after").read_text().split()


def test_nightly_on_a_full_history_filesystem_says_so_before_running(tmp_path):
    """Items 5 and 14: before, the suite ran first, then a bare '[Errno 28] No space left
    on device'."""
    result, left = _in_tiny_tmpfs(tmp_path, 256, "nightly", "--history",
                                  tmp_path / "full" / "h.sqlite", "--report-dir",
                                  tmp_path / "nightly", "--no-plots", "--", "--")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "filesystem is full" in result.stderr and "free space" in result.stderr
    assert "results: " not in result.stdout  # refused before the run
    assert not (tmp_path / "nightly").exists() or not os.listdir(tmp_path / "nightly")
    # No half-made history: at most the empty file SQLite opened, which the next nightly
    # takes as a new history (removing it could race another opener that just made it).
    assert set(left) <= {"filler", "h.sqlite"}, left


def test_nightly_with_a_full_report_folder_leaves_no_empty_page(tmp_path):
    """Item 5: before, an empty nightly.md was left behind and the message was bare."""
    result, left = _in_tiny_tmpfs(tmp_path, 256, "nightly", "--history",
                                  tmp_path / "h.sqlite", "--report-dir", tmp_path / "full",
                                  "--no-plots", "--", "--")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "full" in result.stderr and "--report-dir" in result.stderr
    assert left == ["filler"], left  # no run folder, no empty page


# Item 8: `run` when the binary dies, when it is interrupted, when its build fails.

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _perfscale(*argv, env=None, **kwargs):
    import subprocess
    return subprocess.Popen([os.path.join(REPO, "tools", "perfscale"), *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, **(env or {})), **kwargs)


@pytest.mark.parametrize("signame, status, words", [
    ("KILL", 137, "killed by SIGKILL: killed outright, most often by the kernel's OOM killer"),
    ("PIPE", 141, "killed by SIGPIPE: its output's reader went away"),
])
def test_run_says_what_killed_the_binary(tmp_path, signame, status, words):
    """Before: exit 247 / 243 (256 - signal), no message."""
    proc = _perfscale("run", "--out", str(tmp_path / "r.json"),
                      env={"PERFSCALE_BINARY": "sh -c 'kill -%s $$'" % signame})
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == status, err
    assert words in err and "no results file was written" in err
    assert not (tmp_path / "r.json").exists()


def test_ctrl_c_of_run_is_one_line_and_exit_130(tmp_path):
    """Before: a 25-line KeyboardInterrupt traceback (the cleanup was right)."""
    import signal
    import time
    from conftest import alive, wait_for
    pidfile = tmp_path / "pid"
    # Ctrl-C's default action, as a terminal's shell leaves it: a job started in the
    # background by a script (CI run under nohup ... &) inherits SIGINT ignored, and
    # neither Python nor sleep would then see it.
    proc = _perfscale("run", "--out", str(tmp_path / "r.json"),
                      env={"PERFSCALE_BINARY": "sh -c 'echo $$ > %s; exec sleep 60'" % pidfile},
                      start_new_session=True,
                      preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), 60)
    time.sleep(0.2)
    child = int(pidfile.read_text())
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends: the whole group
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "perfscale run: interrupted" in err
    assert wait_for(lambda: not alive(child), 10)


def test_a_failed_build_says_why(tmp_path):
    """Before: BuildError's message was dropped (and bazel missing was a traceback)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "bazel").write_text("#!/bin/sh\necho 'ERROR: simulated' >&2\nexit 1\n")
    (bin_dir / "bazel").chmod(0o755)
    proc = _perfscale("run", "--family", "breakpoint", "--out", str(tmp_path / "r.json"),
                      env={"PATH": "%s:%s" % (bin_dir, os.environ["PATH"])})
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert "perfscale run: bazel query for the families failed" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("kernel", ["/nonexistent/vmlinuz", "debian:4.19"])
def test_vm_with_a_kernel_that_does_not_exist_is_a_usage_error(tmp_path, kernel):
    """Item 9: before, exit 1 (usage errors are 2 everywhere else), and only after
    tools/setup vm had run."""
    proc = _perfscale("vm", "--kernel", kernel, "--cpus", "1", "--", "run", "--quick",
                      env={"TMPDIR": str(tmp_path)})
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err
    assert "--kernel: " in err and kernel in err
    assert os.listdir(tmp_path) == []


def test_a_tmpdir_that_does_not_exist_is_said_before_bazel(tmp_path):
    """Item 10: before, the BPF skeleton genrule failed inside Bazel with mktemp's error,
    exit 1."""
    missing = tmp_path / "no-such-dir"
    proc = _perfscale("run", "--quick", env={"TMPDIR": str(missing)})
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert "TMPDIR=%s is not a folder you can write" % missing in err
    assert not missing.exists()


def _fake_apt(tmp_path):
    """dpkg-query says nothing is installed; apt-get records its arguments and where its
    output goes, and takes a second (two at once then overlap). Not a package manager: it
    stands in for the one this machine must not change under a test."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "dpkg-query").write_text("#!/bin/sh\nexit 1\n")
    (bin_dir / "apt-get").write_text(
        "#!/bin/sh\necho \"$$ $(readlink /proc/$$/fd/1) $*\" >> %s\nsleep 1\n"
        % (tmp_path / "calls"))
    for tool in ("dpkg-query", "apt-get"):
        (bin_dir / tool).chmod(0o755)
    return {"PATH": "%s:%s" % (bin_dir, os.environ["PATH"]), "TMPDIR": str(tmp_path)}


def test_two_first_time_setups_wait_for_dpkgs_lock_and_keep_their_own_logs(tmp_path):
    """Item 12: before, the second install failed at once on dpkg's lock, and both wrote
    /tmp/perfscale-apt.log."""
    if os.geteuid() != 0:
        pytest.skip("tools/setup installs only as root")
    env = _fake_apt(tmp_path)
    setups = [_perfscale_tool("setup", "tools", env=env) for _ in range(2)]
    for proc in setups:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    calls = (tmp_path / "calls").read_text().splitlines()
    assert len(calls) == 2 and all("-o DPkg::Lock::Timeout=" in c for c in calls)
    logs = {c.split()[1] for c in calls}
    assert len(logs) == 2 and all(l.startswith(str(tmp_path)) for l in logs), logs
    assert [p for p in os.listdir(tmp_path) if p.endswith(".log")] == []  # removed on success


def test_compare_asks_only_for_the_result_tools(tmp_path):
    """Item 12: before, `report` and `compare` installed the test set (QEMU, clang)."""
    if os.geteuid() != 0:
        pytest.skip("tools/setup installs only as root")
    env = _fake_apt(tmp_path)
    proc = _perfscale("compare", data("base.json"), data("base.json"), "--no-table", env=env)
    proc.communicate(timeout=120)
    installs = [c for c in (tmp_path / "calls").read_text().splitlines() if " install " in c]
    assert installs, "no install asked for"
    for call in installs:
        assert "python3-scipy" in call
        for heavy in ("qemu-system-x86", "clang", "bazel-bootstrap"):
            assert heavy not in call.split(), call


def _perfscale_tool(name, *argv, env):
    import subprocess
    return subprocess.Popen([os.path.join(REPO, "tools", name), *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ, **env))


def test_a_kvm_probe_that_fails_fast_says_why_and_is_tried_again(tmp_path):
    """Item 13: before, 'did not reach /init in 15 s' after 2-7 s, kept until reboot."""
    from perfscale.vm import initramfs, qemu as vm
    import time
    if not os.access("/dev/kvm", os.R_OK | os.W_OK) or not os.path.isfile(initramfs.BUSYBOX):
        pytest.skip("needs /dev/kvm and busybox-static")
    bogus = tmp_path / "vmlinuz-bogus"
    bogus.write_bytes(b"\0" * 4096)  # QEMU refuses it at once
    start = time.monotonic()
    accel, why = vm.choose_accelerator(str(bogus), cache=str(tmp_path / "cache"))
    assert time.monotonic() - start < vm.KVM_PROBE_TIMEOUT_S
    assert accel == "tcg"
    assert "failed after" in why and "did not reach /init" not in why
    assert "QEMU" in why or "qemu" in why
    assert not (tmp_path / "cache" / "accel").exists() or \
        os.listdir(tmp_path / "cache" / "accel") == []


def test_run_as_another_user_in_roots_checkout_says_whose_it_is(tmp_path):
    """Item 11: before, exit 127 'Permission denied' on root's bazel-bin, or root's
    (maybe stale) binary run silently where it was readable."""
    import subprocess
    if os.geteuid() != 0 or not os.path.lexists(os.path.join(REPO, "bazel-bin")):
        pytest.skip("needs root and a checkout root has built")
    result = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "env",
         "HOME=%s" % tmp_path, os.path.join(REPO, "tools", "perfscale"), "run", "--quick"],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert "was built by root and you cannot build in it" in result.stderr
    assert "results: " not in result.stdout


def test_nightly_on_a_read_only_history_says_so_before_running(tmp_path, cli, nightly):
    """Item 14: before, a read-only history was found out only when the run was recorded,
    after the whole suite."""
    import subprocess
    import sys
    if os.geteuid() != 0:
        pytest.skip("needs root for a read-only bind mount in a private namespace")
    store = tmp_path / "store"
    store.mkdir()
    assert nightly(store / "h.sqlite", "--fixture=base.json")[0] == 0
    tools_py = os.path.join(REPO, "tools", "py")
    code = ("import sys; sys.path.insert(0, %r)\nfrom perfscale import cli\n"
            "sys.exit(cli.main(sys.argv[1:]))" % tools_py)
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
    env = dict(os.environ, PERFSCALE_BINARY=FAKE_RUN,
               PERFSCALE_COMPARE_PY=str(tmp_path / "no-compare.py"))
    result = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, str(store),
         sys.executable, "-c", code, "nightly", "--history", str(store / "h.sqlite"),
         "--report-dir", str(tmp_path / "reports"), "--no-plots", "--config", "ci", "--", "--"],
        capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "read-only" in result.stderr and "results: " not in result.stdout
    assert not (tmp_path / "reports").exists()


# The sweep of 2026-12-02 (docs/measurements/2026-12-02-hostile-sweep.md): the cases it
# found failing, one test each.

def test_sweep_negative_timings_are_not_a_speedup(cli, tmp_path):
    """Before: real_time -5 read as 'faster (-133%)' and 'no regression', exit 0."""
    with open(data("base.json"), encoding="utf-8") as f:
        doc = json.load(f)
    for bench in doc["benchmarks"]:
        if "real_time" in bench:
            bench["real_time"] = -5.0
    path = tmp_path / "negative.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    code, out, _ = cli("compare", data("base.json"), path, "--no-table")
    assert code == 2 and "faster" not in out and "no valid timings in the new run" in out


def test_sweep_an_infinite_threshold_is_a_usage_error(cli):
    """Before: --threshold inf passed a 20% slowdown, exit 0."""
    with pytest.raises(SystemExit) as exit_info:
        cli("compare", data("base.json"), data("slow.json"), "--threshold", "inf")
    assert exit_info.value.code == 2


def test_sweep_plot_into_a_file_is_a_message_not_a_traceback(cli, tmp_path):
    """Before: FileExistsError traceback, exit 1."""
    target = tmp_path / "afile"
    target.write_text("")
    code, _, err = cli("plot", data("base.json"), "-o", target)
    assert code == 2 and "cannot write the plots in -o" in err


@pytest.mark.parametrize("history", ["/dev/null", "DIR"])
def test_sweep_a_history_that_is_not_a_file(cli, tmp_path, history):
    """Before: /dev/null was 'damaged ... (cannot rollback - no transaction is active)'
    with advice to recover it; a folder was 'no such history'."""
    path = str(tmp_path) if history == "DIR" else history
    code, _, err = cli("plot", "--history", path, "-o", tmp_path / "p")
    assert code == 2 and "not a regular file" in err


def test_sweep_run_refuses_a_benchmark_out_that_would_lose_its_results(cli, tmp_path,
                                                                        monkeypatch):
    """Before: `run --out A -- --benchmark_out=B` wrote B and said 'results: A', exit 0."""
    monkeypatch.setenv("PERFSCALE_BINARY", FAKE_RUN)
    code, out, err = cli("run", "--out", tmp_path / "a.json", "--",
                         "--benchmark_out=%s" % (tmp_path / "b.json"))
    assert code == 2 and "--benchmark_out is run's to set; use run's --out FILE" in err
    assert "results: " not in out and os.listdir(tmp_path) == []


def test_sweep_run_with_stdout_closed(tmp_path):
    """Before: AttributeError traceback ('NoneType' object has no attribute 'flush'), exit 1."""
    import subprocess
    result = subprocess.run(
        ["sh", "-c", '"$0" run --out "$1" >&-', os.path.join(REPO, "tools", "perfscale"),
         str(tmp_path / "r.json")], capture_output=True, text=True, timeout=120,
        env=dict(os.environ, PERFSCALE_BINARY=FAKE_RUN))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "r.json").exists()


def test_sweep_vm_with_an_unwritable_home_says_so_before_downloading(tmp_path):
    """Before: FileNotFoundError traceback after the download, exit 1."""
    import subprocess
    import sys
    result = subprocess.run([sys.executable, "-m", "perfscale.cli", "vm", "kernel", "debian:6.1"],
                            capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, HOME="/proc", TMPDIR=str(tmp_path),
                                     PYTHONPATH=os.path.join(REPO, "tools", "py")))
    assert result.returncode == 1, result.stderr
    assert "set HOME (or PERFSCALE_CACHE) to a folder you can write" in result.stderr
    assert "Traceback" not in result.stderr and "fetching" not in result.stderr
