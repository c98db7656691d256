"""`tools/perfscale bisect` (perfscale.suite.bisect, perfscale.gate.bisection) on a tree of
small commits made here and on a list of kernels, with a stand-in for the guests: each
measurement writes Google Benchmark JSON whose level depends on whether the candidate is
before or after the commit that made it slower. No kernel is built or booted here; the
bisection of a real kernel tree is a recorded demonstration (docs/vm.md).
"""

import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys

import pytest

from perfscale.commands import bisect as bisect_command
from perfscale.gate import bisection, stats
from perfscale.plots import mail
from perfscale.results import io
from perfscale.suite import bisect

SLOW = "BM_BreakpointEnable/passive:8/active:0/placement:other_cpus/real_time"
OTHER = "BM_EventOpen/strategy:cpu_major/events:10/real_time"
STILL = "BM_UprobeHit/threads:1/real_time"
BENCHMARKS = (SLOW, OTHER, STILL)
COMMITS = 16  # on top of the release, the good end
PLACES = ("kernel/events/hw_breakpoint.c", "kernel/trace/trace.c", "mm/memory.c")
_GIT = dict(os.environ, GIT_AUTHOR_NAME="A Developer", GIT_AUTHOR_EMAIL="dev@example.org",
            GIT_COMMITTER_NAME="A Developer", GIT_COMMITTER_EMAIL="dev@example.org",
            GIT_AUTHOR_DATE="2026-12-01T10:00:00Z", GIT_COMMITTER_DATE="2026-12-01T10:00:00Z",
            GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1", LC_ALL="C")


def subject(n):
    """The subject of commit n of the tree: 'kernel/trace: change 4'."""
    return "%s: change %d" % (PLACES[n % 3].rsplit("/", 1)[0], n)


def title(shas, n):
    return "%s %s" % (shas[n][:12], subject(n))


def git(path, *args):
    return subprocess.run(["git", "-C", str(path)] + list(args), check=True,
                          capture_output=True, text=True, env=_GIT).stdout.strip()


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A git tree: the release (tagged v1.0), then 16 commits touching kernel/events,
    kernel/trace and mm, on branch perf-series; a file changed and staged, another
    changed, one untracked, so that anything touching the index or the worktree shows."""
    root = tmp_path_factory.mktemp("trees") / "linux"
    root.mkdir()
    git(root, "init", "-q", "-b", "perf-series")
    for folder in ("kernel/events", "kernel/trace", "mm"):
        (root / folder).mkdir(parents=True)
    (root / "Makefile").write_text("VERSION = 1\n")
    (root / "kernel/events/hw_breakpoint.c").write_text("/* slots */\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Linux 1.0")
    git(root, "tag", "v1.0")
    shas = [git(root, "rev-parse", "HEAD")]
    for n in range(1, COMMITS + 1):
        path = root / PLACES[n % 3]
        path.write_text((path.read_text() if path.exists() else "") + "/* change %d */\n" % n)
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "%s\n\nWhy change %d was made." % (subject(n), n))
        shas.append(git(root, "rev-parse", "HEAD"))
    (root / "Makefile").write_text("VERSION = 1\nEXTRA = staged\n")
    git(root, "add", "Makefile")
    (root / "mm/memory.c").write_text("/* edited, not staged */\n")
    (root / "notes.txt").write_text("untracked\n")
    return root, shas


def snapshot(root):
    """Everything a bisection must leave as it was: HEAD, the branch, the index (its bytes
    and time) and the worktree's files."""
    index = root / ".git" / "index"
    files = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, root)] = f.read()
    refs = subprocess.run(["git", "-C", str(root), "for-each-ref"], capture_output=True,
                          text=True, env=dict(_GIT, GIT_OPTIONAL_LOCKS="0")).stdout
    return (git(root, "rev-parse", "HEAD"), git(root, "symbolic-ref", "HEAD"),
            index.read_bytes(), os.stat(index).st_mtime_ns, files, refs,
            sorted(os.listdir(root / ".git")))


def results_document(levels, seed, context=None, repetitions=10):
    """Google Benchmark JSON: each benchmark {name: (time ns, xcalls/op, ipis_system/op)}
    with `repetitions` repetitions, times within 1% of their level."""
    rng = random.Random(seed)
    rows = []
    for family, (name, (time_ns, xcalls, ipis)) in enumerate(levels.items()):
        for repetition in range(repetitions):
            time = time_ns * (1 + rng.uniform(-0.01, 0.01))
            rows.append({"name": name, "run_name": name, "run_type": "iteration",
                         "family_index": family, "per_family_instance_index": 0,
                         "repetitions": repetitions, "repetition_index": repetition,
                         "threads": 1, "iterations": 100, "real_time": time,
                         "cpu_time": time / 2, "time_unit": "ns", "xcalls/op": xcalls,
                         "ipis_system/op": ipis * (1 + rng.uniform(-0.01, 0.01)),
                         "count_ops": 64})
    return {"context": dict({"host_name": "bisect-test", "num_cpus": 2,
                             "num_online_cpus": "2", "kernel_release": "1.0.0"},
                            **(context or {})), "benchmarks": rows}


class StandIn:
    """measure(candidate, out, names) for a sequence whose candidates from `first_bad` on
    are slower (SLOW +60% and its cross-CPU calls doubled; OTHER's system-wide IPIs up when
    `ipis` is set), `broken` ones do not build, and the `interrupt_at`-th measurement is
    interrupted (Ctrl-C). Records each measurement it completed as (candidate, kind)."""

    def __init__(self, order, first_bad, broken=(), interrupt_at=None, slower=True,
                 ipis=False, context=None, profile=False):
        self.order, self.first_bad, self.broken = order, first_bad, set(broken)
        self.interrupt_at, self.slower, self.ipis = interrupt_at, slower, ipis
        self.profile = profile
        self.context = context or {}
        self.started, self.done, self.names = 0, [], []

    def __call__(self, candidate, out, names, profile=False):
        self.started += 1
        if self.interrupt_at == self.started:
            raise KeyboardInterrupt
        index = self.order.index(candidate.name)
        kind = out.rsplit("-", 1)[1][:-len(".json")]
        if index in self.broken:
            raise bisect.Skipped("does not build: kernel/events/core.c:42: error: expected ';'")
        bad = index >= self.first_bad
        levels = {SLOW: (1600.0 if bad and self.slower else 1000.0,
                         4.0 if bad and self.slower else 2.0, 3.0),
                  OTHER: (5000.0, 1.0, 8.0 if bad and self.ipis else 2.0),
                  STILL: (700.0, 0.0, 1.0)}
        if names is not None:
            levels = {n: v for n, v in levels.items() if n in names}
        seed = int(hashlib.sha256(("%s/%s" % (candidate.name, kind)).encode()).hexdigest(), 16)
        context = dict(self.context, kernel_tree_commit=candidate.name)
        if self.profile or profile:  # as --profile writes it: each benchmark's symbols
            context["profile_file"] = out + ".profile.json"
            walk = 0.40 if bad else 0.02
            with open(context["profile_file"], "w", encoding="utf-8") as f:
                json.dump({"benchmarks": [{"name": name, "symbols": [
                    {"symbol": "toggle_bp_slot", "self": walk, "children": walk},
                    {"symbol": "clone3", "self": 0.30, "children": 0.9}]} for name in levels]},
                    f)
        with open(out, "w", encoding="utf-8") as f:
            json.dump(results_document(levels, seed, context), f)
        self.done.append((candidate.name, kind))
        self.names.append(names)
        return {"build_seconds": 1.5}


def settings(**changes):
    return bisect.Settings(**dict({"run_args": ["--", "--benchmark_filter=BM_"],
                                   "repetitions": 10}, **changes))


def bisect_tree(tree, tmp_path, stand_in, out="state", **changes):
    root, shas = tree
    sequence = bisect.tree_sequence(str(root), "v1.0", "perf-series")
    chosen = settings(**changes)
    state = bisect.State(str(tmp_path / out), sequence, chosen)
    lines = []
    return sequence, state, chosen, lines, lambda: bisect.first_bad(
        sequence, chosen, state, stand_in, lines.append)


# --- the tree's commits ------------------------------------------------------------------

def test_the_candidates_are_the_commits_from_good_to_bad_oldest_first(tree):
    root, shas = tree
    before = snapshot(root)
    sequence = bisect.tree_sequence(str(root), "v1.0", "perf-series")
    assert [c.name for c in sequence.candidates] == shas
    assert sequence.candidates[0].spec == "tree:%s@%s" % (root, shas[0])
    assert sequence.candidates[5].title == title(shas, 5)
    assert sequence.label == "linux:perf-series" and sequence.kind == "commit"
    assert snapshot(root) == before


@pytest.mark.parametrize("good,bad,message", [
    ("v1.0", "v1.0", "are the same commit"),
    ("HEAD", "v1.0", "is not an ancestor of --bad v1.0"),
    ("nosuch", "HEAD", "--good nosuch: .* has no such commit")])
def test_a_range_that_cannot_be_bisected_is_a_usage_error(tree, good, bad, message):
    with pytest.raises(bisect.BisectUsageError, match=message):
        bisect.tree_sequence(str(tree[0]), good, bad)


@pytest.mark.parametrize("first_bad", [1, 7, 12, COMMITS])
def test_bisect_names_the_first_bad_commit_and_confirms_it(tree, tmp_path, first_bad):
    root, shas = tree
    before = snapshot(root)
    stand_in = StandIn(shas, first_bad)
    sequence, state, chosen, lines, run = bisect_tree(tree, tmp_path, stand_in)
    outcome = run()
    assert (outcome.first_bad, outcome.parent, outcome.confirmed) == (first_bad, first_bad - 1,
                                                                      True)
    assert {(m.name, m.metric, m.direction) for m in outcome.ends.values()} == {
        (SLOW, stats.REAL_TIME, 1), (SLOW, "xcalls/op", 1)}
    # The ends with every benchmark, then again with the one that moved alone; each step
    # and the confirmation measure that one alone.
    steps = [d for d in stand_in.done if d[1] == bisect.FOCUS and d[0] not in (
        shas[0], shas[-1])]
    assert stand_in.done[:4] == [(shas[0], "full"), (shas[-1], "full"),
                                 (shas[0], "focus"), (shas[-1], "focus")]
    assert stand_in.names[:2] == [None, None] and set(map(tuple, stand_in.names[2:])) == {
        (SLOW,)}
    assert len(steps) <= bisect.steps_left(COMMITS - 1) == 4
    # Then the two once more, profiled, for the mail (the run options did not profile).
    assert stand_in.done[-4:] == [(shas[first_bad - 1], "confirm"), (shas[first_bad], "confirm"),
                                  (shas[first_bad - 1], "profile"), (shas[first_bad], "profile")]
    assert stand_in.names[-2:] == [[SLOW], [SLOW]]
    assert len(stand_in.done) == len(set(stand_in.done))
    assert "bisect: 15 commit(s) left to test, about 4 step(s); now " in "\n".join(lines)
    assert snapshot(root) == before


def test_commits_that_do_not_build_are_skipped_with_the_reason(tree, tmp_path):
    root, shas = tree
    stand_in = StandIn(shas, 11, broken={8, 9})
    _sequence, _state, _chosen, lines, run = bisect_tree(tree, tmp_path, stand_in)
    outcome = run()
    assert (outcome.first_bad, outcome.confirmed) == (11, True)
    skipped = [s for s in outcome.steps if s.verdict == "skipped"]
    # 8 and 9 lie where the range narrows: each is tried and skipped; 10 then decides.
    assert [s.candidate.name for s in skipped] == [shas[8], shas[9]]
    assert "bisect: %s: skipped: does not build: kernel/events/core.c:42: error: expected " \
        "';'" % title(shas, 8) in lines


def test_skips_are_kept_and_tried_again_when_asked(tree, tmp_path, capsys, monkeypatch):
    root, shas = tree
    argv = ["--tree", str(root), "--good", "v1.0", "--bad", "perf-series", "--out",
            str(tmp_path / "retried"), "--", "--", "--benchmark_filter=BM_"]
    broken = StandIn(shas, 11, broken={8})
    monkeypatch.setattr(bisect, "vm_measure", lambda chosen, log=None: broken)
    assert bisect_command.main(argv) == 0 and (shas[8], "focus") not in broken.done
    again = StandIn(shas, 11)  # fixed: builds now
    monkeypatch.setattr(bisect, "vm_measure", lambda chosen, log=None: again)
    assert bisect_command.main(argv) == 0 and again.done == []  # the skip is kept
    assert bisect_command.main(argv[:-3] + ["--retry-skipped"] + argv[-3:]) == 0
    assert "bisect: 1 skip(s) forgotten: those are tried again" in capsys.readouterr().out
    # 8 is measured now (good), which sends the steps another way; nothing measured before
    # is measured again.
    assert again.done[0] == (shas[8], "focus") and not set(again.done) & set(broken.done)


def test_skipped_commits_that_leave_it_open_are_all_named(tree, tmp_path):
    root, shas = tree
    stand_in = StandIn(shas, 6, broken={4, 5})
    sequence, state, chosen, lines, _run = bisect_tree(tree, tmp_path, stand_in)
    assert bisect.run(sequence, chosen, state, stand_in, ["bisect"], lines.append) == 1
    text = "\n".join(lines)
    assert "the first bad commit is one of:" in text
    for n in (4, 5):
        assert "  %s (skipped: does not build" % title(shas, n) in text
    assert "  %s (bad)" % title(shas, 6) in text
    assert not os.path.exists(os.path.join(state.folder, bisect.MAIL_FILE))


def test_ends_within_their_noise_are_refused_with_the_figures(tree, tmp_path, capsys,
                                                             monkeypatch):
    root, shas = tree
    before = snapshot(root)
    stand_in = StandIn(shas, 5, slower=False)
    monkeypatch.setattr(bisect, "vm_measure", lambda chosen, log=None: stand_in)
    code = bisect_command.main(["--tree", str(root), "--good", "v1.0", "--bad", "perf-series",
                                "--out", str(tmp_path / "refused"), "--", "--",
                                "--benchmark_filter=BM_"])
    err = capsys.readouterr().err
    assert code == 2
    assert "the good and bad ends do not differ beyond their own noise: nothing to bisect" in err
    assert "  %s: no significant change (" % SLOW in err  # the gate's line for each
    assert stand_in.done == [(shas[0], "full"), (shas[-1], "full")]
    assert snapshot(root) == before


def test_an_interrupted_bisection_resumes_measuring_nothing_twice(tree, tmp_path, capsys,
                                                                 monkeypatch):
    root, shas = tree
    before = snapshot(root)
    argv = ["--tree", str(root), "--good", "v1.0", "--bad", "perf-series", "--out",
            str(tmp_path / "resumed"), "--", "--", "--benchmark_filter=BM_"]
    first = StandIn(shas, 9, interrupt_at=6)
    monkeypatch.setattr(bisect, "vm_measure", lambda chosen, log=None: first)
    assert bisect_command.main(argv) == 130
    err = capsys.readouterr().err
    assert "interrupted; 5 measurement(s) kept in %s; the same command resumes" % (
        tmp_path / "resumed") in err
    assert snapshot(root) == before
    with open(tmp_path / "resumed" / bisect.STATE_FILE, encoding="utf-8") as f:
        kept = json.load(f)["measurements"]
    assert sum(len(kinds) for kinds in kept.values()) == len(first.done) == 5

    second = StandIn(shas, 9)
    monkeypatch.setattr(bisect, "vm_measure", lambda chosen, log=None: second)
    assert bisect_command.main(argv) == 0
    out = capsys.readouterr().out
    assert "resuming from %s: 5 measurement(s) kept are reused" % (
        tmp_path / "resumed" / bisect.STATE_FILE) in out
    assert "first bad commit: %s" % title(shas, 9) in out
    assert not set(first.done) & set(second.done)
    assert snapshot(root) == before

    # Once more: everything is kept, nothing is measured.
    third = StandIn(shas, 9)
    monkeypatch.setattr(bisect, "vm_measure", lambda chosen, log=None: third)
    assert bisect_command.main(argv) == 0 and third.done == []


_CRASHING = """
import os, signal, sys
sys.path[:0] = sys.argv[1:3]
import test_bisect
from perfscale.commands import bisect as command
from perfscale.suite import bisect

class Crashing(test_bisect.StandIn):
    def __call__(self, candidate, out, names, profile=False):
        if len(self.done) == 5:  # in the middle of the sixth: the power goes
            os.kill(os.getpid(), signal.SIGKILL)
        return super().__call__(candidate, out, names, profile)

bisect.vm_measure = lambda settings, log=None: Crashing(sys.argv[4].split(","), 9)
command.main(["--tree", sys.argv[3], "--good", "v1.0", "--bad", "perf-series", "--out",
              sys.argv[5], "--", "--", "--benchmark_filter=BM_"])
"""


def test_a_crashed_bisection_resumes_from_its_state_file(tree, tmp_path, monkeypatch):
    root, shas = tree
    before = snapshot(root)
    out = tmp_path / "crashed"
    here = os.path.dirname(os.path.abspath(__file__))
    crashed = subprocess.run([sys.executable, "-c", _CRASHING, here,
                              os.path.join(os.path.dirname(os.path.dirname(here)), "tools", "py"),
                              str(root), ",".join(shas), str(out)], capture_output=True, text=True)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    with open(out / bisect.STATE_FILE, encoding="utf-8") as f:
        kept = {(name, kind) for name, kinds in json.load(f)["measurements"].items()
                for kind in kinds}
    assert len(kept) == 5 and not os.path.exists(out / (bisect.STATE_FILE + ".tmp"))
    assert snapshot(root) == before
    resumed = StandIn(shas, 9)
    monkeypatch.setattr(bisect, "vm_measure", lambda chosen, log=None: resumed)
    assert bisect_command.main(["--tree", str(root), "--good", "v1.0", "--bad", "perf-series",
                                "--out", str(out), "--", "--", "--benchmark_filter=BM_"]) == 0
    assert resumed.done and not kept & set(resumed.done)
    assert snapshot(root) == before


def test_a_bisection_that_stops_leaves_the_tree_and_keeps_its_measurements(tree, tmp_path,
                                                                           capsys, monkeypatch):
    root, shas = tree
    before = snapshot(root)
    stand_in = StandIn(shas, 9)

    def failing(candidate, out, names):
        if stand_in.started == 4:
            raise bisect.BisectError("the run on %s failed (exit status 1)" % candidate.title)
        return stand_in(candidate, out, names)
    monkeypatch.setattr(bisect, "vm_measure", lambda chosen, log=None: failing)
    code = bisect_command.main(["--tree", str(root), "--good", "v1.0", "--bad", "perf-series",
                                "--out", str(tmp_path / "stopped"), "--", "--",
                                "--benchmark_filter=BM_"])
    err = capsys.readouterr().err
    assert code == 1 and "failed (exit status 1)" in err
    assert "4 measurement(s) kept" in err
    assert snapshot(root) == before


def test_a_state_of_other_settings_is_not_reused(tree, tmp_path):
    root, shas = tree
    sequence = bisect.tree_sequence(str(root), "v1.0", "perf-series")
    state = bisect.State(str(tmp_path / "s"), sequence, settings())
    state.put(sequence.candidates[0], bisect.FULL, {"skipped": "x"})
    with pytest.raises(bisect.BisectUsageError, match="other candidates or settings"):
        bisect.State(str(tmp_path / "s"), sequence, settings(repetitions=12))
    assert bisect.State(str(tmp_path / "s"), sequence, settings()).resumed
    # The default folder is the same for the same command, another for other settings.
    assert bisect.default_folder(sequence, settings()) == bisect.default_folder(
        sequence, settings())
    assert bisect.default_folder(sequence, settings()) != bisect.default_folder(
        sequence, settings(counter="xcalls/op"))


@pytest.mark.parametrize("argv,message", [
    (["--tree", "/nonexistent", "--good", "a", "--bad", "b"], "--tree /nonexistent: no such"),
    (["--kernels", "a,b", "--good", "x", "--bad", "b"], "--good x is not in --kernels"),
    (["--kernels", "a,b", "--good", "b", "--bad", "a"], "--good must come before --bad"),
    (["--kernels", "a,b", "--good", "a", "--bad", "b", "--", "--repetitions", "3"],
     "after --: --repetitions is set by tools/perfscale bisect itself"),
    (["--kernels", "a,b", "--good", "a", "--bad", "b", "--", "--breakpoint_passive=8"],
     "unknown option '--breakpoint_passive=8' \\(benchmark flags go after --\\)"),
    (["--kernels", "a,b", "--good", "a", "--bad", "b", "--clock", "sundial"], "--clock must")])
def test_usage_errors_are_one_line_and_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        bisect_command.main(argv)
    assert exit_info.value.code == 2
    assert re.search(message, capsys.readouterr().err)


# --- a list of kernels: the same algorithm ------------------------------------------------------

def test_a_list_of_kernels_is_bisected_the_same_way(tmp_path):
    kernels = ["debian:6.1.0-%d" % n for n in range(20, 29)]
    stand_in = StandIn(kernels, 6, broken={4})
    sequence = bisect.kernel_sequence(kernels, kernels[0], kernels[-1])
    state = bisect.State(str(tmp_path / "k"), sequence, settings())
    lines = []
    outcome = bisect.first_bad(sequence, settings(), state, stand_in, lines.append)
    assert kernels[outcome.first_bad] == "debian:6.1.0-26" and outcome.confirmed
    assert "bisect: debian:6.1.0-24: skipped: does not build: kernel/events/core.c:42: " \
        "error: expected ';'" in lines
    assert sequence.candidates[3].file == "k003-debian_6.1.0-23"


def test_a_counter_the_gate_does_not_gate_judges_when_named(tmp_path):
    # Before Linux 6.4 the system-wide IPI count is the only one: named, it is the judge.
    kernels = ["k%d" % n for n in range(8)]
    stand_in = StandIn(kernels, 3, slower=False, ipis=True)
    sequence = bisect.kernel_sequence(kernels, "k0", "k7")
    chosen = settings(counter="ipis_system/op")
    outcome = bisect.first_bad(sequence, chosen, bisect.State(str(tmp_path / "c"), sequence,
                                                              chosen), stand_in)
    assert kernels[outcome.first_bad] == "k3" and outcome.confirmed
    assert list(outcome.ends) == [(OTHER, "ipis_system/op")]
    # Unnamed, the gate does not judge it: nothing moved.
    with pytest.raises(bisect.Refused):
        bisect.first_bad(sequence, settings(), bisect.State(str(tmp_path / "d"), sequence,
                                                            settings()), stand_in)


# --- the gate's judgement ----------------------------------------------------------------------

def entries(levels, seed, context=None, repetitions=10):
    return io.parse_results(json.dumps(results_document(levels, seed, context, repetitions))
                            ).entries


def test_under_tcg_only_the_counts_judge():
    tcg = {"vm_clock": "real", "timings_comparable": "no",
           "timings_note": "emulated by QEMU TCG, not run on the CPU"}
    times, why = bisection.timings_comparable([tcg, tcg])
    assert (times, why) == (False, "emulated by QEMU TCG, not run on the CPU")
    good = entries({SLOW: (1000.0, 2.0, 1.0)}, 1)
    slower_only = entries({SLOW: (1600.0, 2.0, 1.0)}, 2)
    judging = bisection.Judging(times=False)
    assert bisection.moves(good, slower_only, judging) == {}
    more_calls = entries({SLOW: (1000.0, 4.0, 1.0)}, 3)
    assert list(bisection.moves(good, more_calls, judging)) == [(SLOW, "xcalls/op")]
    # The reversed comparison finds a count that went down.
    [down] = bisection.moves(more_calls, good, judging).values()
    assert (down.direction, down.before, down.after) == (-1, 4.0, 2.0)
    with pytest.raises(bisection.NotJudged, match="instruction clock"):
        bisection.timings_comparable([tcg, {"vm_clock": "instructions"}])


def test_a_step_between_is_judged_by_the_nearer_end_and_says_so():
    good = entries({SLOW: (1000.0, 2.0, 1.0)}, 1)
    bad = entries({SLOW: (1600.0, 2.0, 1.0)}, 2)
    judging = bisection.Judging()
    ends = bisection.moves(good, bad, judging)
    # +35% from good and -16% from bad: the gate (25% between-run floor) tells it from the
    # good end only: bad.
    verdict = bisection.judge(ends, good, bad, entries({SLOW: (1350.0, 2.0, 1.0)}, 3), judging)
    assert verdict.verdict == "bad" and "the gate tells it from the good end" in verdict.lines[0]
    # +25% from good, -22% from bad: neither told apart (within the floor); nearer good.
    verdict = bisection.judge(ends, good, bad, entries({SLOW: (1250.0, 2.0, 1.0)}, 4), judging)
    assert verdict.verdict == "good" and "the nearer median decides" in verdict.lines[0]
    with pytest.raises(bisection.NotJudged, match="did not run there"):
        bisection.judge(ends, good, bad, entries({STILL: (1.0, 1.0, 1.0)}, 5), judging)
    with pytest.raises(bisection.NotJudged, match="too few repetitions"):
        bisection.moves(good, entries({SLOW: (1600.0, 2.0, 1.0)}, 6, repetitions=3), judging)


# --- the mail --------------------------------------------------------------------------------------

def test_the_mail_names_the_commit_its_files_what_moved_and_how_to_reproduce(
        tree, tmp_path, capsys, monkeypatch):
    root, shas = tree
    stand_in = StandIn(shas, 9, context={"kernel_tree": str(root),
                                           "kernel_config_sha256": "c0ffee",
                                           "vm_accelerator": "tcg",
                                           "vm_kernel": "tree:linux"}, profile=True)
    monkeypatch.setattr(bisect, "vm_measure", lambda chosen, log=None: stand_in)
    argv = ["--tree", str(root), "--good", "v1.0", "--bad", "perf-series", "--cpus", "4",
            "--clock", "instructions", "--out", str(tmp_path / "mailed"), "--", "--",
            "--benchmark_filter=BM_"]
    assert bisect_command.main(argv) == 0
    out = capsys.readouterr().out
    assert "bisect: mail: %s" % (tmp_path / "mailed" / "mail.txt") in out
    text = (tmp_path / "mailed" / "mail.txt").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0].startswith("Subject: [linux:perf-series] %s: %s.real_time_ns +"
                               % (shas[9][:12], SLOW))
    assert lines[0].endswith("% regression")
    change = float(lines[0].split(" +")[1].split("%")[0])
    assert 55 < change < 65
    assert "commit: %s (\"%s\")" % (shas[9], subject(9)) in lines
    assert "range:  tree %s, first-parent line: good v1.0 .. bad perf-series: 15 commits " \
        "between" % root in text
    # git show --stat: the commit, its message and its files.
    assert "commit %s" % shas[9] in lines and "    Why change 9 was made." in lines
    assert any(l.startswith(" kernel/events/hw_breakpoint.c | 1 +") for l in lines)
    assert "base: %s (the commit before it)" % title(shas, 8) in lines
    assert "head: %s (the first bad commit)" % title(shas, 9) in lines
    for head in mail.TABLE_HEAD:
        assert head in lines
    rows = [l for l in lines if l.endswith((SLOW + ".real_time_ns", SLOW + ".xcalls/op"))]
    assert len(rows) == 2 and all("\u00b1" in r for r in rows)
    assert "+100.0%" in rows[1] and rows[1].split()[0] == "2"
    assert not any(l.endswith(OTHER + ".real_time_ns") for l in lines)  # it did not move
    assert any(l.startswith("  %s: slower (" % SLOW) for l in lines)
    # The profile difference of the parent's and the commit's profiled measurements.
    profile = lines.index("profile (perf cpu-clock, self share of each benchmark's samples):")
    assert lines[profile + 3].split() == ["2.00%", "+38.00", "40.00%", "toggle_bp_slot"]
    assert "  kernel_config_sha256: c0ffee" in lines and \
        "  kernel_tree_commit: %s" % shas[9] in lines
    assert "on test machine: QEMU guest: 4 vCPUs, 1024 MiB, TCG, instruction clock" in lines
    steps = lines[lines.index("bisection (each commit judged by the gate against the good and "
                              "the bad end):") + 1:]
    assert steps[0] == "  good     %s" % title(shas, 8)  # the middle of 1..15, then 12...
    reproduce = lines[lines.index("To reproduce:") + 2:]
    assert reproduce[0] == ("        tools/perfscale vm --kernel tree:%s@%s --cpus 4 --mem 1024 "
                            "--timeout 900 --clock instructions -- run --repetitions 10 --out "
                            "base.json -- '--benchmark_filter=^(%s)$'"
                            % (root, shas[8], re.escape(SLOW)))
    assert reproduce[1].startswith("        tools/perfscale vm --kernel tree:%s@%s "
                                   % (root, shas[9]))
    assert reproduce[2] == "        tools/perfscale compare base.json head.json"
    assert reproduce[3].startswith("        tools/perfscale bisect --tree %s --good v1.0" % root)


class ProfileFails(StandIn):
    def __call__(self, candidate, out, names, profile=False):
        if profile:
            raise bisect.Skipped("does not boot: the guest ran out of memory")
        return super().__call__(candidate, out, names)


@pytest.mark.parametrize("run_args,profiled", [
    (["--", "--benchmark_filter=BM_"], True),            # profiled once more for the mail
    (["--profile", "--", "--benchmark_filter=BM_"], False),  # every measurement has one
])
def test_the_mail_has_the_profile_difference_whether_the_runs_profiled_or_not(
        tree, tmp_path, run_args, profiled):
    root, shas = tree
    stand_in = StandIn(shas, 9, profile=not profiled)
    sequence, state, chosen, lines, run = bisect_tree(tree, tmp_path, stand_in,
                                                      run_args=run_args)
    outcome = run()
    assert outcome.confirmed
    assert any(kind == "profile" for _name, kind in stand_in.done) == profiled
    text = bisect.mail_text(sequence, chosen, outcome, ["tools/perfscale", "bisect"])
    assert "profile (perf cpu-clock, self share of each benchmark's samples):" in text
    assert "toggle_bp_slot" in text
    assert runs_profiled_said(lines) == profiled


def runs_profiled_said(lines):
    return any(line.startswith("bisect: profiling ") for line in lines)


def test_a_profile_that_cannot_be_had_costs_the_mail_its_profile_not_the_finding(tree, tmp_path):
    root, shas = tree
    stand_in = ProfileFails(shas, 9)
    sequence, state, chosen, lines, run = bisect_tree(tree, tmp_path, stand_in)
    outcome = run()
    assert outcome.confirmed and outcome.first_bad == 9
    text = bisect.mail_text(sequence, chosen, outcome, ["tools/perfscale", "bisect"])
    assert "profile: not profiled: does not boot: the guest ran out of memory" in text
    assert "bisect: not profiled: does not boot: the guest ran out of memory" in lines


def test_the_mail_text_from_recorded_results():
    base = [entries({SLOW: (1000.0, 2.0, 1.0)}, 1), entries({SLOW: (1000.0, 2.0, 1.0)}, 2)]
    head = [entries({SLOW: (1500.0, 4.0, 1.0)}, 3), entries({SLOW: (1500.0, 4.0, 1.0)}, 4)]
    finding = mail.BisectFinding(
        tree="linux", culprit="a" * 40, what="commit",
        headline=(SLOW + ".real_time_ns", 0.5, 1), title="aaaaaaaaaaaa perf: walk every task",
        parent_title="bbbbbbbbbbbb perf: before", show="commit " + "a" * 40,
        range_line="good v1 .. bad v2", machine=["QEMU guest"], parameters=["run: --quick"],
        base_runs=base, head_runs=head, rows=[(SLOW, ["xcalls/op"])], verdicts=["a line"],
        steps=["bad      aaaaaaaaaaaa perf: walk every task"], config=["kernel_x: y"],
        reproduce=[["tools/perfscale", "compare", "base.json", "head.json"]])
    text = mail.bisect_mail(finding)
    assert text.startswith("Subject: [linux] aaaaaaaaaaaa: %s.real_time_ns +50.0%% regression\n"
                           "\nHello,\n\nperfscale bisected a +50.0%% regression of "
                           "%s.real_time_ns to:\n\ncommit: %s (\"perf: walk every task\")\n"
                           % (SLOW, SLOW, "a" * 40))
    time_row = next(l for l in text.splitlines() if l.endswith(".real_time_ns"))
    base_mean, _sd, _percent, change = time_row.split()[:4]
    assert 995 < float(base_mean) < 1005 and 49 < float(change.strip("+%")) < 51
    assert "        tools/perfscale compare base.json head.json" in text
    assert "profile" not in text  # none recorded
    improvement = mail.BisectFinding(**dict(finding.__dict__,
                                            headline=("BM_X.xcalls/op", -0.25, -1)))
    assert mail.bisect_subject(improvement) == \
        "[linux] aaaaaaaaaaaa: BM_X.xcalls/op -25.0% improvement"
    assert "\nhead: aaaaaaaaaaaa perf: walk every task (the first commit with the change)\n" \
        in mail.bisect_mail(improvement)
