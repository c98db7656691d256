"""`tools/perfscale run`: build a family binary, run it, keep its JSON under results/.

    tools/perfscale run [--quick] [--profile] [--repetitions N] [--budget 10m] [--family NAME]
                        [--out FILE] [--plan [--cpus N]] [-- FLAGS...]

Builds //benchmarks:NAME (default: suite, every family) and runs it from this directory
(relative paths among FLAGS are yours), with --repetitions N interleaved, and writes the
JSON to --out or results/perfscale-HOST-UTCTIME.json. The binary prints the plan and its
progress on stderr and the console table on stdout, then run prints `results: FILE` (and
`profile: FILE` with --profile: each benchmark's top symbols). --quick: short runs, small
sizes. --budget caps the planned wall time (default 10m). --plan prints the plan only
(--cpus N: as on a machine with N CPUs). FLAGS go to the binary (see its --help).

The suite runner as code: nightly, calibrate and the gate's confirmation reruns call
run_suite() with Options of their own; `vm` runs it through its guest launcher (runner: a
command put before the binary) and names the default file after the guest (tag).
PERFSCALE_BINARY names a command that stands in for the family binary (the tests' fake
binary, dry runs): nothing is built, and it gets the binary's flags (--benchmark_out=FILE,
--benchmark_repetitions=N, ...).
"""

import contextlib
import dataclasses
import datetime
import functools
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
from typing import List, Optional, Sequence

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))))
MAX_REPETITIONS = 1000
STAND_IN_ENV = "PERFSCALE_BINARY"
# The binary's flags that say where run's results file goes: run sets them from --out.
RUN_OWNS = {"--benchmark_out": "run's --out FILE",
            "--benchmark_out_format": "run's --out FILE (always JSON)"}


class UsageError(Exception):
    """A bad `run` argument; the text is shown as is (exit 2)."""


class BuildError(Exception):
    """Setting up or building failed; .status is the exit status to return."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


@dataclasses.dataclass
class Options:
    family: str = "suite"
    quick: bool = False
    profile: bool = False
    repetitions: int = 0         # 0: Google Benchmark's single run, no aggregates
    budget: str = ""             # e.g. "10m"; empty: the binary's default
    out: str = ""                # empty: results/perfscale-HOST-UTCTIME.json
    plan: bool = False
    plan_cpus: str = ""          # only with plan
    flags: List[str] = dataclasses.field(default_factory=list)  # after --, to the binary


@dataclasses.dataclass
class Result:
    status: int
    out: Optional[str] = None      # the results file (None for a plan or a failed start)
    profile: Optional[str] = None  # the profile side file, with --profile


def parse_args(argv: Sequence[str]) -> Options:
    """Options from `run`'s arguments; raises UsageError. `-h` is the caller's to handle."""
    options = Options()
    argv = list(argv)
    needs = {"--repetitions": "a number", "--family": "a name", "--out": "a file",
             "--budget": "a duration, e.g. 10m", "--cpus": "a CPU count"}
    fields = {"--repetitions": "repetitions", "--family": "family", "--out": "out",
              "--budget": "budget", "--cpus": "plan_cpus"}
    repetitions = "0"
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if arg == "--quick":
            options.quick = True
        elif arg == "--profile":
            options.profile = True
        elif arg == "--plan":
            options.plan = True
        elif name in needs:
            if not eq:
                if i + 1 >= len(argv) or argv[i + 1] == "":
                    raise UsageError("perfscale run: %s needs %s" % (name, needs[name]))
                i += 1
                value = argv[i]
            if name == "--repetitions":
                repetitions = value
            else:
                setattr(options, fields[name], value)
        elif arg == "--":
            options.flags = argv[i + 1:]
            break
        else:
            raise UsageError("perfscale run: unknown option '%s' (benchmark flags go after --)"
                             % arg)
        i += 1
    if not re.fullmatch(r"[0-9]+", repetitions) or int(repetitions) > MAX_REPETITIONS:
        raise UsageError("perfscale run: --repetitions must be an integer in 0..%d, got '%s'"
                         % (MAX_REPETITIONS, repetitions))
    options.repetitions = int(repetitions)
    for flag in options.flags:
        # run sets these itself; the binary keeps the last one given, so a user's would
        # send the results elsewhere while run names a file that was never written.
        owned = next((own for own in RUN_OWNS if flag.partition("=")[0] == own), None)
        if owned and not options.plan:
            raise UsageError("perfscale run: %s is run's to set; use %s" % (owned,
                                                                           RUN_OWNS[owned]))
    if options.plan_cpus and not options.plan:
        raise UsageError("perfscale run: --cpus plans for another machine's size; it needs "
                         "--plan")
    return options


@functools.lru_cache(maxsize=None)
def families() -> List[str]:
    """The runnable families: the suite and the binaries perfscale_family tags
    (tools/bazel/perfscale.bzl), as bazel query finds them. Raises BuildError."""
    result = subprocess.run(
        ["bazel", "query", "--noshow_progress",
         r'attr(tags, "\bperfscale_family\b", //benchmarks/...)'],
        cwd=REPO_ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        raise BuildError("bazel query for the families failed:\n%s" % result.stderr[-2000:],
                         result.returncode)
    return ["suite"] + sorted(label.rsplit(":", 1)[-1] for label in result.stdout.split())


def check_family(family: str) -> None:
    if family == "suite":
        return  # always there: no need to ask Bazel
    known = families()
    if family not in known:
        raise UsageError("perfscale run: no family '%s' (one of: %s)"
                         % (family, ", ".join(known)))


def binary_path(family: str) -> str:
    """Where Bazel puts //benchmarks:FAMILY (inside the family's folder for an alias)."""
    path = os.path.join(REPO_ROOT, "bazel-bin", "benchmarks", family)
    return os.path.join(path, family) if os.path.isdir(path) else path


def bazel_bin(label: str) -> str:
    """Where Bazel puts the output of LABEL: //pkg/sub:name -> bazel-bin/pkg/sub/name."""
    package, _, name = label[len("//"):].partition(":")
    return os.path.join(REPO_ROOT, "bazel-bin", package, name or os.path.basename(package))


_built = set()


def build_target(label: str, setup: Optional[str] = None) -> str:
    """Installs what `tools/setup SETUP` wants (None: nothing), builds LABEL once per
    process; returns bazel_bin(LABEL). Raises BuildError."""
    if label not in _built:
        check_own_tree()
        sys.stdout.flush()
        status = subprocess.call([os.path.join(REPO_ROOT, "tools", "setup"), setup]) \
            if setup else 0
        if status != 0:
            raise BuildError("tools/setup %s failed with exit status %d" % (setup, status),
                             status)
        status = subprocess.call(["bazel", "build", "--noshow_progress", label],
                                 cwd=REPO_ROOT)
        if status != 0:
            raise BuildError("bazel build %s failed with exit status %d" % (label, status),
                             status)
        _built.add(label)
    return bazel_bin(label)


def check_own_tree() -> None:
    """Refuses to build in a checkout another user built and we cannot write: Bazel would
    fail on its symlinks ('Permission denied', exit 127 from deep inside), or, where the
    other user's outputs are readable, we would run their binary, maybe a stale one."""
    link = os.path.join(REPO_ROOT, "bazel-bin")
    try:
        owner = os.lstat(link).st_uid
    except FileNotFoundError:
        owner = os.geteuid()
    if not os.access(REPO_ROOT, os.W_OK):  # Bazel could not point bazel-bin at our build
        import pwd
        try:
            name = pwd.getpwuid(owner).pw_name
        except KeyError:
            name = "uid %d" % owner
        whose = "was built by %s and " % name if owner != os.geteuid() else ""
        raise BuildError("this checkout (%s) %syou cannot build in it: run as its owner, "
                         "or use a checkout of your own (git clone %s ~/perfscale)"
                         % (REPO_ROOT, whose, REPO_ROOT), 2)


def build(family: str, setup: Optional[str] = "run") -> str:
    """Installs what `tools/setup SETUP` wants (None: nothing), builds //benchmarks:FAMILY
    once per process; returns the binary's path. Raises BuildError."""
    build_target("//benchmarks:" + family, setup)
    return binary_path(family)


def revision() -> str:
    """The checkout's commit, with -dirty when tracked files changed; else unknown."""
    try:
        rev = subprocess.run(["git", "-C", REPO_ROOT, "rev-parse", "HEAD"], check=True,
                             capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    status = subprocess.run(["git", "-C", REPO_ROOT, "status", "--porcelain",
                             "--untracked-files=no"], capture_output=True, text=True)
    return rev + "-dirty" if status.returncode == 0 and status.stdout.strip() else rev


def default_out(tag: str = "") -> str:
    host = tag or socket.gethostname().split(".")[0]
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return os.path.join(REPO_ROOT, "results", "perfscale-%s-%s.json" % (host, stamp))


WARMUP_S = 0.02  # per benchmark, before its first repetition


def binary_flags(options: Options, out: Optional[str]) -> List[str]:
    """The family binary's flags for these options (out None: the plan only)."""
    flags = []
    if out is not None:
        flags += ["--benchmark_out=" + out, "--benchmark_out_format=json"]
    if options.quick:
        flags += ["--benchmark_min_time=0.01s", "--quick=true"]
    if out is not None and options.profile:
        # Top kernel and user symbols of each benchmark, beside the results (docs/user-guide.md).
        flags += ["--profile", "--profile_out=%s.profile.json" % out]
    if options.repetitions > 0:
        flags += ["--benchmark_repetitions=%d" % options.repetitions]
        if out is not None:
            # Interleaved, so that drift in the machine spreads over every benchmark alike;
            # warmed up, so that a cold first pass (page faults, caches, lazy setup) is
            # not one of the repetitions compared.
            flags += ["--benchmark_enable_random_interleaving=true",
                      "--benchmark_display_aggregates_only=true",
                      "--benchmark_min_warmup_time=%g" % WARMUP_S]
    if options.budget:
        flags.append("--budget=" + options.budget)
    if options.plan_cpus:
        flags.append("--plan_cpus=" + options.plan_cpus)
    if out is None:
        flags.append("--plan=true")
    return flags + list(options.flags)


def run_suite(options: Options, runner: Sequence[str] = (), tag: str = "",
              guarded: bool = False) -> Result:
    """Builds and runs the family of `options`; the binary's output goes to ours.

    runner: a command the binary runs under (vm's guest launcher); tag: names the default
    results file instead of the host; guarded: the binary dies with this process
    (perfscale.suite.guard), for the nightly's runs. Raises UsageError, BuildError."""
    check_family(options.family)
    stand_in = os.environ.get(STAND_IN_ENV)
    binary = shlex.split(stand_in) if stand_in else [build(options.family)]
    out = None
    if not options.plan:
        out = os.path.abspath(options.out) if options.out else default_out(tag)
        try:
            os.makedirs(os.path.dirname(out), exist_ok=True)
        except OSError as err:
            raise UsageError("perfscale run: --out %s: cannot create its folder: %s"
                             % (out, err.strerror or err)) from None
    command = list(runner) + binary + binary_flags(options, out)
    env = dict(os.environ, PERFSCALE_REVISION=revision())
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        if guarded:
            from perfscale.suite import guard  # only the nightly's runs need it
            status = guard.popen(command, env=env).wait()
        else:
            status = subprocess.call(command, env=env)
    except OSError as err:
        print("perfscale run: cannot start %s: %s" % (command[0], err.strerror or err),
              file=sys.stderr)
        return Result(127)
    if status < 0:
        print("perfscale run: %s" % killed_reason(-status, command[0]), file=sys.stderr)
        return Result(128 - status)  # the shell's convention, not 256 - signal
    if status != 0 or out is None:
        return Result(status)
    if not runner:
        # This machine ran it: what the binary left out of its identity (the kernel
        # config's digest, needing zlib and sha256) is added here; never for a guest's
        # run, whose identity is not ours (docs/fleet-history.md).
        from perfscale.machine import identity
        try:
            identity.stamp(out)
        except (OSError, ValueError) as err:
            print("perfscale run: cannot add the machine identity to %s: %s" % (out, err),
                  file=sys.stderr)
    print("results: %s" % out)
    profile = out + ".profile.json" if options.profile else None
    if profile:
        print("profile: %s" % profile)
    sys.stdout.flush()
    return Result(0, out, profile)


def killed_reason(signum, program):
    """What a signal that killed the binary means: a closed pipe is the reader's doing;
    SIGKILL is most often the OOM killer."""
    name = signal.Signals(signum).name if signum in set(signal.Signals) else str(signum)
    why = {signal.SIGPIPE: "its output's reader went away (a pipe such as `| head` closed "
                           "early); send the output to a file instead",
           signal.SIGKILL: "killed outright, most often by the kernel's OOM killer "
                           "(`journalctl -k | grep -i oom`) or a job limit; give it more "
                           "memory or run fewer benchmarks (--benchmark_filter)",
           signal.SIGINT: "interrupted", signal.SIGTERM: "asked to stop (SIGTERM)"}
    return "%s was killed by %s: %s; no results file was written" % (
        os.path.basename(program), name, why.get(signum, "see its output above"))


@contextlib.contextmanager
def output_to(path):
    """Everything written to stdout and stderr, by us or the processes we start, goes to
    `path` (trials and bisect: the benchmark binary's tables would bury their lines)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(path, "w", encoding="utf-8") as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                yield
                sys.stdout.flush()
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
