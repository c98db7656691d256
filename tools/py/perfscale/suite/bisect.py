"""The first bad kernel of an ordered sequence, judged by the gate (`tools/perfscale bisect`).

One algorithm, two sources of candidates:
- a kernel git tree between a good and a bad revision (tree_sequence): the commits on the
  bad revision's first-parent line after the good one, oldest first, each booted as
  `tree:PATH@SHA` (perfscale.vm.kernel builds it in a checkout of its own). The user's
  tree is only read, with git's optional locks off (rev-list, log, show): nothing here
  checks out, writes a ref or refreshes the index, so it is as it was on every exit path.
- an ordered list of kernels, vmlinuz paths or `debian:` names (kernel_sequence).

Both ends are measured first with every benchmark the run options select, and the gate
(perfscale.gate.bisection) says what moved between them: a time slower or faster, an
attributed count up or down. Nothing moved beyond the ends' own noise: the bisection is
refused with the figures (Refused). Otherwise the benchmarks that moved are measured
again alone on both ends (where others were measured with them: a benchmark's neighbours
are part of what it measures), and each step measures those alone on the candidate
nearest the middle of the range left, judged by the gate against both ends: good or bad.
A candidate that does not build or boot, or where a benchmark that moved did not run, is
skipped with the reason (`git bisect skip`): the next nearest the middle is measured, and
where skipped ones leave the answer open every candidate it can be is named. The first
bad candidate and the one before it (its parent) are then measured once more: the answer
stands when that confirmation judges them bad and good again.

Every measurement is kept beside the state file (State): a bisection interrupted (Ctrl-C,
a crash, a reboot) and started again with the same command reuses every measurement it
had and measures nothing twice. measure(candidate, out_path, names) is the one seam to
the machine: vm_measure's boots the candidate's kernel in QEMU as `tools/perfscale vm`
does; the tests give a stand-in.
"""

import dataclasses
import hashlib
import json
import math
import os
import re
import subprocess
import time
from typing import List, Optional

from perfscale.gate import bisection, stats
from perfscale.plots import mail
from perfscale.results import io
from perfscale.results.names import display_name
from perfscale.suite import runner
from perfscale.vm import errors, kernel, qemu

# What a candidate's measurements are called in the state: `full` with every benchmark the
# run options select (the ends only), `focus` with the benchmarks that moved alone (the
# ends again, where `full` had others, and every step), `confirm` the first bad one and
# its parent once more, `profile` the two once more with --profile for the mail's profile
# difference (one repetition, not judged: profiling costs time of its own), where the run
# options did not profile every measurement already.
FULL, FOCUS, CONFIRM, PROFILE = "full", "focus", "confirm", "profile"
STATE_FILE = "bisect-state.json"
STATE_VERSION = 1
MAIL_FILE = "mail.txt"
DEFAULT_OUT = os.path.join(runner.REPO_ROOT, "results", "bisect")
# git reads the user's tree without taking its index lock or refreshing the index.
_READ_ONLY_GIT = dict(os.environ, GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
_FIGURES = 30  # lines of the gate's figures a refusal shows


class BisectError(Exception):
    """What stopped a bisection (exit 1); the measurements made are kept."""


class BisectUsageError(BisectError):
    """Bad input, or a bisection that cannot start (exit 2)."""


class Refused(BisectUsageError):
    """The ends do not differ beyond their own noise: nothing to bisect. .figures: the
    gate's lines for each benchmark."""

    def __init__(self, message, figures):
        super().__init__(message)
        self.figures = figures


class Skipped(Exception):
    """A candidate that cannot be judged (it does not build, does not boot, or a benchmark
    that moved did not run there): the bisection goes around it, as `git bisect skip`."""


@dataclasses.dataclass(frozen=True)
class Candidate:
    name: str    # what the state keys it by: a commit's SHA, or a --kernel value
    spec: str    # the --kernel it boots: tree:PATH@SHA, a path, debian:...
    title: str   # one line a person reads: 'abc123def456 perf: ...', or the spec
    file: str    # its measurements' file names start so


@dataclasses.dataclass
class Sequence:
    """What is bisected: candidates[0] the good end, candidates[-1] the bad end."""
    kind: str                  # "commit" (a tree) or "kernel" (a list)
    candidates: List[Candidate]
    label: str                 # the mail subject's [TREE]
    tree: str = ""             # the tree's top folder (kind "commit")
    good: str = ""             # the ends as the user named them
    bad: str = ""

    def key(self):
        return {"kind": self.kind, "tree": self.tree,
                "candidates": [c.name for c in self.candidates]}


@dataclasses.dataclass
class Settings:
    """How each candidate is measured and judged (`tools/perfscale bisect`'s options,
    typed): run_args as `tools/perfscale run` takes them (RUN OPTIONS [-- FLAGS], without
    --repetitions and --out, which are ours), the repetitions, the one counter to judge
    by ('' for the gate's choice of times and counts), the gate's options and the guest
    (a qemu.Machine whose kernel each candidate fills in)."""
    run_args: List[str] = dataclasses.field(default_factory=list)
    repetitions: int = 10
    counter: str = ""
    gate: stats.Options = stats.Options()
    machine: qemu.Machine = dataclasses.field(default_factory=lambda: qemu.Machine("", 2))

    def key(self):
        """What makes two bisections' measurements interchangeable (not the timeout)."""
        return {"run_args": list(self.run_args), "repetitions": self.repetitions,
                "counter": self.counter, "gate": dataclasses.asdict(self.gate),
                "cpus": self.machine.cpus, "mem": self.machine.mem,
                "append": self.machine.append, "tcg_threads": self.machine.tcg_threads,
                "clock": self.machine.clock}

    def run_args_for(self, names):
        """The run arguments measuring `names` alone (None: everything selected)."""
        return list(self.run_args) if names is None else mail.focused_run_args(
            self.run_args, names)

    def vm_command(self, spec, out, names):
        """The `tools/perfscale vm` command that makes one such measurement."""
        m = self.machine
        return (["tools/perfscale", "vm", "--kernel", spec, "--cpus", str(m.cpus), "--mem",
                 str(m.mem), "--timeout", str(m.timeout)]
                + (["--append", m.append] if m.append else [])
                + (["--clock", m.clock] if m.clock != "real" else [])
                + ["--", "run", "--repetitions", str(self.repetitions), "--out", out]
                + self.run_args_for(names))


# --- where the candidates come from ---------------------------------------------------

def _git(path, *args):
    done = subprocess.run(["git", "-C", path] + list(args), capture_output=True, text=True,
                          errors="replace", env=_READ_ONLY_GIT)
    return done.returncode, done.stdout, done.stderr.strip()


def _commit(path, revision, option):
    status, out, _err = _git(path, "rev-parse", "--verify", "--quiet",
                             revision + "^{commit}")
    if status != 0:
        raise BisectUsageError("%s %s: %s has no such commit" % (option, revision, path))
    return out.strip()


def tree_sequence(path, good, bad):
    """The commits to bisect in the tree at `path` from `good` to `bad` (any revisions git
    takes): good, then every commit on bad's first-parent line after it, oldest first.
    Only reads the tree. BisectUsageError for what cannot be bisected."""
    path = os.path.expanduser(path)
    if not os.path.isdir(path):
        raise BisectUsageError("--tree %s: no such folder" % path)
    status, top, _err = _git(path, "rev-parse", "--show-toplevel")
    if status != 0:
        raise BisectUsageError("--tree %s: not a git tree" % path)
    top = top.strip()
    good_sha, bad_sha = _commit(top, good, "--good"), _commit(top, bad, "--bad")
    if good_sha == bad_sha:
        raise BisectUsageError("--good %s and --bad %s are the same commit" % (good, bad))
    if _git(top, "merge-base", "--is-ancestor", good_sha, bad_sha)[0] != 0:
        raise BisectUsageError("--good %s is not an ancestor of --bad %s: name an older "
                               "good commit" % (good, bad))
    status, out, err = _git(top, "log", "--first-parent", "--reverse", "--format=%H %P%x09%s",
                            "%s..%s" % (good_sha, bad_sha))
    if status != 0:
        raise BisectUsageError("git log %s..%s in %s failed: %s" % (good, bad, top, err))
    rows = [line.split("\t", 1) for line in out.splitlines() if line]
    first_parent = rows[0][0].split()[1] if rows and len(rows[0][0].split()) > 1 else ""
    if first_parent != good_sha:
        raise BisectUsageError(
            "--good %s is not on --bad %s's first-parent line (it came in through a merge): "
            "name a commit on that line (git log --first-parent %s)" % (good, bad, bad))
    good_subject = _git(top, "log", "-1", "--format=%s", good_sha)[1].strip()
    candidates = [_tree_candidate(top, good_sha, good_subject)]
    candidates += [_tree_candidate(top, ids.split()[0], subject) for ids, subject in rows]
    label = os.path.basename(top)
    if not re.fullmatch(r"[0-9a-fA-F]{7,40}|HEAD.*", bad):
        label += ":" + bad
    return Sequence("commit", candidates, label, top, good, bad)


def _tree_candidate(top, sha, subject):
    return Candidate(sha, "tree:%s@%s" % (top, sha), "%s %s" % (sha[:12], subject), sha[:12])


def kernel_sequence(kernels, good, bad):
    """The kernels of an ordered list from `good` to `bad` (both members of it)."""
    if len(set(kernels)) != len(kernels):
        raise BisectUsageError("--kernels names a kernel twice")
    for option, value in (("--good", good), ("--bad", bad)):
        if value not in kernels:
            raise BisectUsageError("%s %s is not in --kernels" % (option, value))
    low, high = kernels.index(good), kernels.index(bad)
    if low >= high:
        raise BisectUsageError("--good must come before --bad in --kernels")
    candidates = [Candidate(k, k, k, "k%03d-%s" % (i, re.sub(r"[^A-Za-z0-9._-]+", "_",
                                                                 os.path.basename(k))[:40]))
                  for i, k in enumerate(kernels[low:high + 1])]
    return Sequence("kernel", candidates, "kernels", good=good, bad=bad)


# --- the state beside the results --------------------------------------------------------

def default_folder(sequence, settings, root=DEFAULT_OUT):
    """Where a bisection keeps its measurements, the same for the same command (so that
    running it again resumes) and another for other ends or settings."""
    digest = hashlib.sha256(json.dumps([sequence.key(), settings.key()], sort_keys=True)
                            .encode()).hexdigest()[:12]
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", "%s-%s-%s" % (
        sequence.label.split(":")[0], sequence.candidates[0].file,
        sequence.candidates[-1].file))
    return os.path.join(root, "%s-%s" % (name, digest))


class State:
    """The state file (FOLDER/bisect-state.json) and the measurements beside it: for each
    candidate and kind, its results file (with the seconds it took) or why it was
    skipped. Written whole, by rename, after every measurement: a bisection stopped at
    any moment loses at most the measurement it was making."""

    def __init__(self, folder, sequence, settings):
        self.folder = os.path.abspath(folder)
        self.path = os.path.join(self.folder, STATE_FILE)
        self.key = {"sequence": sequence.key(), "settings": settings.key()}
        self.measurements = {}
        self.resumed = False
        try:
            with open(self.path, encoding="utf-8") as f:
                found = json.load(f)
        except FileNotFoundError:
            found = None
        except (OSError, ValueError) as err:
            raise BisectUsageError("%s: unreadable (%s): remove it to start again"
                                   % (self.path, err)) from None
        if found is not None:
            if not isinstance(found, dict) or found.get("version") != STATE_VERSION:
                raise BisectUsageError("%s: not a bisection state this perfscale writes: "
                                       "remove it to start again" % self.path)
            if found.get("key") != self.key:
                raise BisectUsageError(
                    "%s holds a bisection of other candidates or settings: give another "
                    "--out, or remove the folder to start again" % self.folder)
            self.measurements = found.get("measurements") or {}
            self.resumed = bool(self.measurements)
        try:
            os.makedirs(self.folder, exist_ok=True)
        except OSError as err:
            raise BisectUsageError("--out %s: cannot create it: %s"
                                   % (self.folder, err.strerror or err)) from None

    def get(self, candidate, kind):
        return self.measurements.get(candidate.name, {}).get(kind)

    def out_path(self, candidate, kind):
        return os.path.join(self.folder, "%s-%s.json" % (candidate.file, kind))

    def put(self, candidate, kind, record):
        self.measurements.setdefault(candidate.name, {})[kind] = record
        self._write()

    def drop(self, candidate, kind):
        self.measurements.get(candidate.name, {}).pop(kind, None)
        self._write()

    def _write(self):
        temporary = self.path + ".tmp"
        with open(temporary, "w", encoding="utf-8") as f:
            json.dump({"version": STATE_VERSION, "key": self.key,
                       "measurements": self.measurements}, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, self.path)

    def count(self):
        return sum(len(kinds) for kinds in self.measurements.values())

    def forget_skips(self):
        """Drops every skip recorded (a build that failed for a reason since fixed, a
        package installed): those candidates are tried again. Returns how many."""
        dropped = 0
        for kinds in self.measurements.values():
            for kind in [k for k, record in kinds.items() if "skipped" in record]:
                del kinds[kind]
                dropped += 1
        if dropped:
            self._write()
        return dropped


# --- the bisection ------------------------------------------------------------------------

@dataclasses.dataclass
class Step:
    candidate: Candidate
    verdict: str     # good, bad or skipped
    lines: List[str]  # why
    seconds: float = 0.0  # the measurement's, as recorded when it was made
    build_seconds: Optional[float] = None


@dataclasses.dataclass
class Outcome:
    """What the bisection found. first_bad: the index of the first bad candidate;
    possible: every candidate it can be where skipped ones leave it open (else [first_bad]);
    confirmed: whether measuring it and its parent again said bad and good."""
    first_bad: int
    parent: int
    possible: List[int]
    ends: dict                # (name, metric) -> bisection.Move, between the ends
    names: List[str]          # the benchmarks that moved, measured alone at each step
    steps: List[Step]
    confirmed: bool = False
    confirmation: List[str] = dataclasses.field(default_factory=list)
    direct: dict = dataclasses.field(default_factory=dict)  # moves parent -> first bad
    base_runs: list = dataclasses.field(default_factory=list)  # parent's {name: Entry}s
    head_runs: list = dataclasses.field(default_factory=list)
    base_results: list = dataclasses.field(default_factory=list)  # their ResultSets
    head_results: list = dataclasses.field(default_factory=list)
    judging: Optional[bisection.Judging] = None
    profiles: list = dataclasses.field(default_factory=list)  # (parent's, first bad's) results
    profile_note: str = ""    # why the mail has no profile difference, if it has none


def minutes(seconds):
    return "%dm%02ds" % divmod(int(round(seconds)), 60)


def steps_left(count):
    """Measurements a range of `count` untested candidates takes at most: log2 rounded up."""
    return math.ceil(math.log2(count + 1)) if count > 0 else 0


def first_bad(sequence, settings, state, measure, log=lambda line: None):
    """Bisects `sequence`; returns an Outcome. `measure(candidate, out_path, names)`
    writes a results file at out_path for `names` alone (None: everything the run options
    select), returns {"build_seconds": ...} or None, and raises Skipped for a candidate
    that cannot be measured (BisectError stops the bisection). Measurements already in
    `state` are reused. Raises Refused when the ends do not differ, BisectError when an
    end cannot be measured or judged."""
    candidates = sequence.candidates
    last = len(candidates) - 1
    loaded = {}
    kind_word = sequence.kind

    def measured(index, kind, names, kept_only=False):
        """The results of a measurement, made unless the state has it (kept_only: None
        then). Raises Skipped for a candidate recorded as skipped."""
        candidate = candidates[index]
        record = state.get(candidate, kind)
        if kept_only and (record is None or "results" not in record or not os.path.isfile(
                os.path.join(state.folder, record["results"]))):
            return None
        if record is not None and "results" in record:
            path = os.path.join(state.folder, record["results"])
            if not os.path.isfile(path):
                log("bisect: %s's %s measurement %s is gone: measuring it again"
                    % (candidate.title, kind, path))
                state.drop(candidate, kind)
                record = None
        if record is None:
            out = state.out_path(candidate, kind)
            log("bisect: measuring %s %s (%s)" % (kind_word, candidate.title, kind))
            start = time.monotonic()
            try:
                facts = (measure(candidate, out, names, profile=True) if kind == PROFILE
                         else measure(candidate, out, names)) or {}
            except Skipped as why:
                record = {"skipped": str(why), "seconds": round(time.monotonic() - start, 1)}
            else:
                record = dict(facts, results=os.path.basename(out),
                              seconds=round(time.monotonic() - start, 1))
            state.put(candidate, kind, record)
            log("bisect:   %s in %s%s" % ("skipped" if "skipped" in record else "measured",
                                          minutes(record["seconds"]), "" if record.get(
                                              "build_seconds") is None else
                                          " (its kernel ready in %s)"
                                          % minutes(record["build_seconds"])))
        if "skipped" in record:
            raise Skipped(record["skipped"])
        path = os.path.join(state.folder, record["results"])
        if path not in loaded:
            try:
                loaded[path] = io.load_results(path)
            except io.ResultsError as err:
                state.drop(candidate, kind)  # the same command measures it again
                raise BisectError("%s: %s" % (candidate.title, err)) from None
        return loaded[path]

    def end(index, kind, names, which):
        try:
            return measured(index, kind, names)
        except Skipped as why:
            raise BisectError("the %s %s %s cannot be measured: %s" % (
                which, kind_word, candidates[index].title, why)) from None

    log("bisect: %d %s(s) between good %s and bad %s; about %d step(s) after measuring "
        "both ends"
        % (last - 1, kind_word, candidates[0].title, candidates[last].title,
           steps_left(last - 1)))
    good_full, bad_full = end(0, FULL, None, "good"), end(last, FULL, None, "bad")
    try:
        times, why = bisection.timings_comparable([good_full.context, bad_full.context])
    except bisection.NotJudged as err:
        raise BisectError(str(err)) from None
    judging = bisection.Judging(settings.gate, times, settings.counter)
    if not times:
        log("bisect: timings not judged (%s): the counted kernel events only" % why)
    try:
        ends = bisection.moves(good_full.entries, bad_full.entries, judging)
    except bisection.NotJudged as err:
        raise BisectUsageError("the good and bad ends cannot be judged against each other: %s"
                               % err) from None
    if not ends:
        raise Refused("the good and bad ends do not differ beyond their own noise: nothing to "
                      "bisect", figures(good_full.entries, bad_full.entries, judging))
    names = sorted({m.name for m in ends.values()})
    good_ref, bad_ref = good_full, bad_full
    focus_needed = set(names) != set(good_full.entries) & set(bad_full.entries)
    for line in _moved_lines(ends, "between the ends"):
        log(line)
    if focus_needed:
        good_ref, bad_ref = end(0, FOCUS, names, "good"), end(last, FOCUS, names, "bad")
        try:
            ends = bisection.moves(good_ref.entries, bad_ref.entries, judging)
        except bisection.NotJudged as err:
            raise BisectError("the ends measured again with the benchmarks that moved "
                              "alone cannot be judged: %s" % err) from None
        if not ends:
            raise Refused("the ends differed measured with every benchmark, not with the "
                          "ones that moved alone: nothing the bisection could follow",
                          figures(good_ref.entries, bad_ref.entries, judging))
        for line in _moved_lines(ends, "alone"):
            log(line)

    low, high, skipped, steps = 0, last, {}, []
    while True:
        untried = [i for i in range(low + 1, high) if i not in skipped]
        if not untried:
            break
        middle = min(untried, key=lambda i: (abs(i - (low + high) / 2), i))
        log("bisect: %d %s(s) left to test, about %d step(s); now %s"
            % (len(untried), kind_word, steps_left(len(untried)), candidates[middle].title))
        try:
            results = measured(middle, FOCUS, names)
            verdict = bisection.judge(ends, good_ref.entries, bad_ref.entries, results.entries,
                                      judging)
        except (Skipped, bisection.NotJudged) as why:
            skipped[middle] = str(why)
            steps.append(_step(state, candidates[middle], "skipped", [str(why)]))
            log("bisect: %s: skipped: %s" % (candidates[middle].title, why))
            continue
        steps.append(_step(state, candidates[middle], verdict.verdict, verdict.lines))
        log("bisect: %s is %s" % (candidates[middle].title, verdict.verdict))
        for line in verdict.lines:
            log("    " + line)
        if verdict.verdict == bisection.BAD:
            high = middle
        else:
            low = middle
    possible = [i for i in range(low + 1, high + 1)]
    outcome = Outcome(high, low, possible, ends, names, steps, judging=judging)
    if len(possible) > 1:
        return outcome
    _confirm(outcome, candidates, measured, good_ref, bad_ref, focus_needed, log)
    if outcome.confirmed:
        _profile_both(outcome, candidates, measured, settings, log)
    return outcome


def _profile_both(outcome, candidates, measured, settings, log):
    """The first bad candidate and its parent measured once more with --profile, for the
    mail's profile difference; a failure here costs the mail that part, not the finding."""
    if runs_profiled(settings.run_args):
        return  # every measurement has its profile already
    log("bisect: profiling %s and its parent for the mail"
        % candidates[outcome.first_bad].title)
    from perfscale.results import profile
    try:
        outcome.profiles = [measured(index, PROFILE, outcome.names)
                            for index in (outcome.parent, outcome.first_bad)]
        for results in outcome.profiles:
            found = profile.find_profile(results)
            if not found:
                raise profile.ProfileError("%s names no profile file" % results.source)
            profile.load_profile(found)
    except (Skipped, BisectError, profile.ProfileError, OSError) as why:
        outcome.profiles = []
        outcome.profile_note = "not profiled: %s" % why
        log("bisect: %s" % outcome.profile_note)


def runs_profiled(run_args):
    """Whether run's options (before any `--`) ask for --profile."""
    options = run_args[:run_args.index("--")] if "--" in run_args else run_args
    return "--profile" in options


def _step(state, candidate, verdict, lines):
    record = state.get(candidate, FOCUS) or {}
    return Step(candidate, verdict, lines, record.get("seconds", 0.0),
                record.get("build_seconds"))


def _moved_lines(ends, how):
    return ["bisect: moved %s: %s" % (how, line) for line in bisection.lines(ends)]


def _confirm(outcome, candidates, measured, good_ref, bad_ref, focus_needed, log):
    """Measures the first bad candidate and its parent once more: confirmed when the
    gate judges them bad and good against the ends again."""
    judging, names = outcome.judging, outcome.names
    parent, culprit = outcome.parent, outcome.first_bad
    log("bisect: confirming: %s and its parent %s measured again"
        % (candidates[culprit].title, candidates[parent].title))
    said = {}
    for index, expected in ((parent, bisection.GOOD), (culprit, bisection.BAD)):
        try:
            results = measured(index, CONFIRM, names)
            verdict = bisection.judge(outcome.ends, good_ref.entries, bad_ref.entries,
                                      results.entries, judging)
        except (Skipped, bisection.NotJudged) as why:
            outcome.confirmation.append("%s: not judged again: %s"
                                        % (candidates[index].title, why))
            said[index] = None
            continue
        said[index] = verdict.verdict
        outcome.confirmation.append("%s: %s again (%s expected)" % (
            candidates[index].title, verdict.verdict, expected))
        outcome.confirmation += ["    " + line for line in verdict.lines]
    outcome.confirmed = said.get(parent) == bisection.GOOD and said.get(culprit) == bisection.BAD
    # The mail's figures: every measurement of each that ran the same benchmarks (the
    # ends' first, with every benchmark selected, only where those were the ones that moved).
    kinds = (FOCUS, CONFIRM) if focus_needed else (FULL, FOCUS, CONFIRM)
    for index, runs, results in ((parent, outcome.base_runs, outcome.base_results),
                                 (culprit, outcome.head_runs, outcome.head_results)):
        for kind in kinds:
            try:
                found = measured(index, kind, None, kept_only=True)
            except Skipped:
                continue
            if found is None:
                continue
            results.append(found)
            runs.append({n: e for n, e in found.entries.items() if n in names})
    if outcome.confirmed:
        try:
            outcome.direct = bisection.moves(outcome.base_runs[-1], outcome.head_runs[-1],
                                             judging)
        except bisection.NotJudged:
            outcome.direct = {}
    for line in outcome.confirmation:
        log("bisect: " + line)


def figures(base, new, judging):
    """The gate's lines for the two ends: what a refusal shows (the first _FIGURES)."""
    common = [n for n in new if n in base]
    lines = []
    if judging.times and not judging.counter:
        lines = [v.line() for v in stats.compare_runs([{n: base[n] for n in common}],
                                                      [{n: new[n] for n in common}],
                                                      judging.gate)]
    else:
        for name in common:
            for counter in sorted(set(base[name].counters) & set(new[name].counters)):
                if counter == judging.counter or (not judging.counter and stats.counter_kind(
                        counter) in stats.GATED_COUNTS):
                    test = stats.count_test(name, counter, base[name], new[name], {})
                    if test is not None:
                        lines.append("%s: %s %.4g -> %.4g %s" % (
                            display_name(name), counter, test.base, test.new, test.text()))
    if len(lines) > _FIGURES:
        lines = lines[:_FIGURES] + ["(and %d more)" % (len(lines) - _FIGURES)]
    return lines or ["(no benchmark ran at both ends)"]


# --- the machine ----------------------------------------------------------------------------

def vm_measure(settings, log_to=None):
    """measure(candidate, out, names) that boots the candidate's kernel in QEMU as
    `tools/perfscale vm` does (its tree built, or its Debian package fetched, first: the
    time that takes is the step's build_seconds) and runs the suite inside. Each
    measurement's output goes to OUT.log beside its results, quiet unless it fails."""
    ready = []

    def measure(candidate, out, names, profile=False):
        if not ready:  # QEMU and busybox, as `vm` installs them, before the first guest
            status = subprocess.call([os.path.join(runner.REPO_ROOT, "tools", "setup"), "vm"])
            if status != 0:
                raise BisectError("tools/setup vm failed (exit %d): the guests need its "
                                  "packages" % status)
            ready.append(True)
        log_path = out[:-len(".json")] + ".log"
        parsed = runner.parse_args(settings.run_args_for(names))
        options = dataclasses.replace(parsed, repetitions=1 if profile else settings.repetitions,
                                      out=out, profile=parsed.profile or profile)
        if log_to:
            log_to("bisect:   log: %s" % log_path)
        with runner.output_to(log_path):
            start = time.monotonic()
            try:
                resolved = kernel.resolve_kernel(candidate.spec)  # built or fetched, kept
            except errors.VmUsageError as err:
                print("perfscale bisect: %s" % err)
                usage = str(err)
            except errors.VmError as err:
                print("perfscale bisect: %s" % err)
                raise Skipped("%s: %s" % ("does not build" if candidate.spec.startswith(
                    "tree:") else "cannot be had", str(err).splitlines()[0])) from None
            else:
                usage = None
                # The guest boots what was resolved here: a tree is not resolved again.
                machine = dataclasses.replace(settings.machine, kernel=candidate.spec,
                                              vmlinuz=resolved.vmlinuz)
            built = time.monotonic() - start
            if usage is None:
                try:
                    status = runner.run_suite(options, qemu.launcher(machine),
                                              "bisect-cpus%d" % machine.cpus).status
                except (runner.UsageError, runner.BuildError) as err:
                    print(err)
                    status = 2
        if usage is not None:
            raise BisectUsageError(usage)
        if status == errors.DID_NOT_BOOT_STATUS:
            raise Skipped("does not boot: %s" % _said(log_path, "the kernel did not boot"))
        if status != 0:
            raise BisectError("the run on %s failed (exit status %d); its log: %s\n%s"
                              % (candidate.title, status, log_path,
                                 "\n".join(_tail(log_path))))
        return {"build_seconds": round(built, 1)}
    return measure


def _tail(path, lines=10):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().splitlines()[-lines:]
    except OSError:
        return []


def _said(path, start):
    """The log's line that begins with `start` (after 'perfscale vm: '), else `start`."""
    for line in _tail(path, 200):
        text = line.split("perfscale vm: ", 1)[-1]
        if text.startswith(start):
            return text
    return start


# --- the mail -----------------------------------------------------------------------------

def commit_text(sequence, candidate):
    """`git show --stat` of a tree's commit: its header, message and files ('' for a
    kernel of a list)."""
    if sequence.kind != "commit":
        return ""
    status, out, err = _git(sequence.tree, "show", "--stat", "--no-color", "--format=medium",
                            candidate.name)
    return out.rstrip() if status == 0 else "(git show %s failed: %s)" % (candidate.name, err)


def mail_text(sequence, settings, outcome, command):
    """The mail a first bad commit's author reads (perfscale.plots.mail.bisect_mail), from
    a confirmed Outcome. command: the bisect command line, as a list."""
    candidates = sequence.candidates
    culprit, parent = candidates[outcome.first_bad], candidates[outcome.parent]
    headline = bisection.worst(outcome.direct) or bisection.worst(outcome.ends)
    moved = {}
    for move in list(outcome.ends.values()) + list(outcome.direct.values()):
        moved.setdefault(move.name, set())
        if move.metric != stats.REAL_TIME:
            moved[move.name].add(move.metric)
    context = outcome.head_results[-1].context if outcome.head_results else {}
    is_tree = sequence.kind == "commit"
    measured = sum(1 for s in outcome.steps if s.verdict != "skipped")
    parameters = ["run: %s" % (" ".join(settings.run_args) or "(every family)"),
                  "repetitions: %d" % settings.repetitions,
                  "judged by: %s" % ("the counter %s" % settings.counter if settings.counter
                                     else "the gate (%s)" % ("times and attributed counts"
                                                             if outcome.judging.times else
                                                             "attributed counts; timings not "
                                                             "comparable here"))]
    machine = settings.machine
    names = outcome.names
    reproduce = [
        settings.vm_command(parent.spec, "base.json", names),
        settings.vm_command(culprit.spec, "head.json", names),
        ["tools/perfscale", "compare", "base.json", "head.json"],
        command]
    return mail.bisect_mail(mail.BisectFinding(
        tree=sequence.label, culprit=culprit.name, what=sequence.kind,
        headline=(headline.label, headline.change, headline.direction),
        title=culprit.title, parent_title=parent.title, show=commit_text(sequence, culprit),
        range_line="%s%s: good %s .. bad %s: %d %ss between, %d measured, %d skipped" % (
            "tree %s, " % sequence.tree if is_tree else "", "first-parent line"
            if is_tree else "kernels", sequence.good, sequence.bad, len(candidates) - 2,
            sequence.kind, measured, len(outcome.steps) - measured),
        machine=["QEMU guest: %d vCPU%s, %d MiB, %s, %s" % (
            machine.cpus, "" if machine.cpus == 1 else "s", machine.mem,
            context.get("vm_accelerator", "?").upper(),
            "instruction clock" if machine.clock == "instructions" else "real time")]
        + (["timings: %s" % context["timings_note"]] if context.get("timings_note") else []),
        parameters=parameters, base_runs=outcome.base_runs, head_runs=outcome.head_runs,
        rows=[(name, sorted(moved[name])) for name in names if name in moved],
        verdicts=bisection.lines(outcome.direct),
        steps=["%-8s %s%s" % (s.verdict, s.candidate.title, "" if s.verdict != "skipped"
                              else ": " + s.lines[0]) for s in outcome.steps],
        config=["%s: %s" % (k, context[k]) for k in sorted(context)
                if k.startswith(("kernel_", "vm_kernel"))],
        reproduce=reproduce,
        base_profile=_profile(outcome.profiles[:1] + outcome.base_results[::-1]),
        head_profile=_profile(outcome.profiles[1:] + outcome.head_results[::-1]),
        profile_note=outcome.profile_note))


def _profile(results_list):
    """The --profile document of the first measurement that has one (None without)."""
    from perfscale.results import profile
    for results in results_list:
        try:
            found = profile.find_profile(results)
            if found:
                return profile.load_profile(found)
        except (profile.ProfileError, OSError, TypeError):
            continue
    return None


def write_mail(state, text):
    path = os.path.join(state.folder, MAIL_FILE)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def run(sequence, settings, state, measure, command, log=print) -> int:
    """A whole bisection as the command runs it: the outcome said, the mail written when
    confirmed. Returns the exit status: 0 found and confirmed, 1 not confirmed or left
    open by skipped candidates (or stopped: BisectError), 2 refused."""
    if state.resumed:
        log("bisect: resuming from %s: %d measurement(s) kept are reused"
            % (state.path, state.count()))
    outcome = first_bad(sequence, settings, state, measure, log)
    candidates = sequence.candidates
    if len(outcome.possible) > 1:
        log("bisect: skipped %ss leave it open: the first bad %s is one of:" % (
            sequence.kind, sequence.kind))
        skipped = {s.candidate.name: s.lines[0] for s in outcome.steps if s.verdict == "skipped"}
        for index in outcome.possible:
            c = candidates[index]
            log("  %s%s" % (c.title, " (skipped: %s)" % skipped[c.name] if c.name in skipped
                            else " (bad)"))
        return 1
    culprit = candidates[outcome.first_bad]
    if not outcome.confirmed:
        log("bisect: %s was judged the first bad %s, but measuring it and its parent again "
            "did not confirm it (above); the measurements are kept in %s: run again with "
            "more --repetitions" % (culprit.title, sequence.kind, state.folder))
        return 1
    text = mail_text(sequence, settings, outcome, command)
    path = write_mail(state, text)
    log("bisect: first bad %s: %s" % (sequence.kind, culprit.title))
    if sequence.kind == "commit" and _is_merge(sequence.tree, culprit.name):
        log("bisect: it is a merge: the change came in with its branch; bisect that with "
            "--good $(git merge-base %s^1 %s^2) --bad %s^2" % ((culprit.name[:12],) * 3))
    log("bisect: mail: %s" % path)
    return 0


def _is_merge(tree, sha):
    status, out, _err = _git(tree, "rev-list", "--parents", "-n", "1", sha)
    return status == 0 and len(out.split()) > 2
