"""A kernel series as a library (`tools/perfscale series`, whose options and documentation
are perfscale.commands.series'): the suite on every kernel of an ordered list, in guests
of one shape, each release judged against the one before it, every flagged step
profiled on both sides, looked up in both releases' sources and written up as a page.

The guests are `tools/perfscale vm`'s (the suite runner with qemu's launcher, as `bisect`
runs them). Each kernel's run is kept in the series' folder under a key of what made it
(the benchmark binary's digest, the vmlinuz's digest, the guest's shape, the run's
options and repetitions, and which measurement of that kernel it is: a kernel listed
twice is measured twice, an A/A), so a series started again measures only what it has
not (resume). Every run is recorded in the history, in a lineage of the series' own
(config `series: RUN ARGS`, never a nightly's), with its verdicts against the kernel
before it, so the dashboard draws the series against the kernel release.
"""

import contextlib
import dataclasses
import datetime
import hashlib
import json
import os
import re
import shlex
import statistics
import sys
import threading
import time
from typing import List, Optional

from perfscale.gate import stats, steps
from perfscale.history import store
from perfscale.labs import lava
from perfscale.plots import kernels, page, series_pages
from perfscale.results import io, profile
from perfscale.suite import runner
from perfscale.vm import debian, errors, kernel, qemu, sources

MANIFEST = "series.json"
DEFAULT_TIMEOUT_S = 3600  # one guest: a whole quick suite with its repetitions, on TCG
HEARTBEAT_S = 60.0
LOG_TAIL = 20             # lines of a failed guest's log said with its reason
# What a failed guest's log says when its kernel never reached /init: the kernel did
# not boot on this machine (vm's words; `vm guest` exits 77 for it where it can tell).
NOT_BOOTED = ("did not reach /init", "stopped before /init", "did not boot",
              "QEMU failed", "panicked")
DID_NOT_BOOT = 77


def release_lines(builds=None):
    """The release lines Debian's archive holds a cloud kernel of (perfscale.vm.debian
    finds them in every suite it reads), oldest first ('5.10', '6.1', ...); release
    candidates only where no release of their line exists yet."""
    builds = debian.archive_builds() if builds is None else builds
    cloud = [b for b in builds if b.flavour == "cloud"]
    released = {b.line for b in cloud if not b.rc}
    return sorted(released, key=kernels.release_key)


def default_kernels(builds=None):
    """Each release line's newest cloud kernel (the flavour every line has, and the
    quickest to boot): debian:LINE-cloud, oldest line first."""
    return ["debian:%s-cloud" % line for line in release_lines(builds)]


@dataclasses.dataclass(kw_only=True)
class Settings:
    """One series (`tools/perfscale series`' options, typed)."""
    kernels: List[str]
    run_args: List[str]            # `tools/perfscale run`'s options (and -- FLAGS)
    out: str                       # the series' folder
    history: str
    cpus: int = 1
    mem: int = 1024
    clock: str = "instructions"
    timeout: int = DEFAULT_TIMEOUT_S
    append: str = ""
    repetitions: int = 10
    gate: stats.Options = dataclasses.field(default_factory=stats.Options)
    profile: bool = True
    sources: bool = True

    def machine(self, kernel_spec):
        return qemu.Machine(kernel_spec, self.cpus, self.mem, self.timeout, self.append,
                            "single", self.clock)

    @property
    def config(self):
        """The history lineage's config: the series' own, never a nightly's."""
        return "series: %s" % (shlex.join(self.run_args) or "(suite)")

    def shape(self):
        return "%d vCPU%s, %d MiB, %s" % (
            self.cpus, "" if self.cpus == 1 else "s", self.mem,
            "instruction clock" if self.clock == "instructions" else "real time (TCG or KVM)")


def measurement_key(binary, vmlinuz, settings, occurrence, purpose="measure", extra=()):
    """What makes a run the same run again: the binary's and kernel's digests, the
    guest's shape, the run's options and repetitions, and the how-manieth measurement
    of this kernel in the list (a kernel listed twice is measured twice)."""
    parts = {"binary": binary, "kernel": vmlinuz, "purpose": purpose,
             "shape": [settings.cpus, settings.mem, settings.clock, settings.append],
             "run": list(settings.run_args), "repetitions": settings.repetitions,
             "occurrence": occurrence, "extra": list(extra)}
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def binary_digest(options):
    """The digest of the benchmark binary the guests run: built once here, or the
    stand-in (PERFSCALE_BINARY, the tests' fake binary) as its command and files."""
    stand_in = os.environ.get(runner.STAND_IN_ENV)
    if stand_in:
        digest = hashlib.sha256(stand_in.encode())
        for word in shlex.split(stand_in):
            if os.path.isfile(word):
                digest.update(lava.sha256_file(word).encode())
        return "stand-in:" + digest.hexdigest()
    return lava.sha256_file(runner.build(options.family))


class Manifest:
    """The series' folder's record of what was measured, under each run's key: the
    resume."""

    def __init__(self, folder):
        self.path = os.path.join(folder, MANIFEST)
        self.data = {"measurements": {}}
        try:
            with open(self.path, encoding="utf-8") as f:
                loaded = json.load(f)
            if isinstance(loaded.get("measurements"), dict):
                self.data = loaded
        except (OSError, ValueError):
            pass

    def done(self, key, folder):
        """The record of key, when its results are still there and readable."""
        record = self.data["measurements"].get(key)
        if not record:
            return None
        try:
            io.load_results(os.path.join(folder, record["results"]))
        except (io.ResultsError, KeyError):
            return None
        return record

    def keep(self, key, record):
        self.data["measurements"][key] = record
        page.write_whole(self.path, json.dumps(self.data, indent=1, sort_keys=True) + "\n")


class Progress:
    """Lines on the terminal, also while a guest's output goes to its log: what runs,
    what is done, and the time left at the pace measured so far."""

    def __init__(self, total, out=None):
        self.total, self.durations = total, []
        # Its own copy of the terminal: a guest's output goes to its log meanwhile.
        self.owned = out is None
        self.out = out or os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)

    def line(self, text):
        print("series: " + text, file=self.out, flush=True)

    def eta(self, left, running_for=0.0):
        """Seconds left for `left` more guests (the current one running_for seconds in),
        at the mean of those measured; None before the first."""
        if left <= 0:
            return 0.0
        if not self.durations:
            return None
        mean = statistics.mean(self.durations)
        return max(0.0, mean - running_for) + mean * max(0, left - 1)

    def eta_text(self, left, running_for=0.0):
        if left <= 0:
            return "nothing left to measure"
        eta = self.eta(left, running_for)
        return "ETA unknown until one kernel is measured" if eta is None else \
            "ETA %s for %d more (at %s a kernel)" % (_duration(eta), left,
                                                    _duration(statistics.mean(self.durations)))

    @contextlib.contextmanager
    def heartbeat(self, what, left, every=HEARTBEAT_S):
        """A line every `every` seconds while the block runs (a guest, minutes long)."""
        stop, start = threading.Event(), time.monotonic()

        def beat():
            while not stop.wait(every):
                running = time.monotonic() - start
                self.line("%s: running for %s; %s" % (what, _duration(running),
                                                      self.eta_text(left, running)))
        thread = threading.Thread(target=beat, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def close(self):
        if self.owned:
            self.out.close()


def _duration(seconds):
    seconds = int(round(seconds))
    if seconds < 60:
        return "%ds" % seconds
    if seconds < 3600:
        return "%dm%02ds" % divmod(seconds, 60)
    return "%dh%02dm" % (seconds // 3600, seconds % 3600 // 60)


@dataclasses.dataclass
class Kernel:
    """One kernel of the series, as far as it got."""
    position: int
    spec: str
    occurrence: int = 0
    vmlinuz: str = ""
    key: str = ""
    results: Optional[io.ResultSet] = None
    state: str = "not measured"
    reason: str = ""
    seconds: dict = dataclasses.field(default_factory=dict)  # what: wall seconds
    run_id: Optional[int] = None

    @property
    def measured(self):
        return self.results is not None

    @property
    def release(self):
        return kernels.kernel_of(self.results) if self.results else self.spec


def run_options(settings, out, profile_names=None):
    """`run`'s options for one guest: the series' run arguments, its repetitions, this
    results file; with profile_names, profiled and filtered to those benchmarks."""
    options = dataclasses.replace(runner.parse_args(settings.run_args),
                                  repetitions=settings.repetitions, out=out)
    if profile_names is not None:
        flags = [f for f in options.flags if not f.startswith("--benchmark_filter=")]
        flags.append("--benchmark_filter=^(%s)$" % "|".join(
            re.escape(n) for n in sorted(profile_names)))
        options = dataclasses.replace(options, profile=True, flags=flags)
    return options


def guest_failure(log_path, status):
    """(state, reason) of a guest run that failed: `did not boot` with the console's last
    lines where its kernel never reached /init, else `failed` with the log's last lines."""
    try:
        with open(log_path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        lines = []
    said = [i for i, line in enumerate(lines) if line.startswith("perfscale vm:")
            and not re.match(r"perfscale vm: \S.* vCPUs, \d+ MiB, ", line)]
    tail = lines[said[-1]:][:LOG_TAIL] if said else lines[-LOG_TAIL:]
    text = "\n".join(tail) or "(the guest's log is empty)"
    booted = status != DID_NOT_BOOT and not any(
        marker in line for line in tail for marker in NOT_BOOTED)
    return ("failed (exit status %d)" % status if booted else "did not boot"), text


def measure(settings, options, spec, log_path, tag):
    """Runs `options` in a guest of `spec`; returns the exit status. Its output goes to
    log_path."""
    with runner.output_to(log_path):
        try:
            # Guarded: a series stopped (SIGTERM, a closed session) takes its guest along.
            return runner.run_suite(options, qemu.launcher(settings.machine(spec)), tag,
                                    guarded=True).status
        except (runner.UsageError, runner.BuildError) as err:
            print(err)
            return 2


def run(settings, progress=None):
    """The series; returns its exit status: 0 when every kernel was measured, 1 when one
    was skipped (not fetched, did not boot, failed: said with its reason), 2 when
    nothing could be judged or the history refused the runs."""
    out = os.path.abspath(settings.out)
    for folder in ("runs", "profiles", "steps", "plots"):
        os.makedirs(os.path.join(out, folder), exist_ok=True)
    progress = progress or Progress(len(settings.kernels))
    try:
        return _series(settings, out, progress)
    finally:
        progress.close()


def _series(settings, out, progress):
    timings = {"fetching kernels": 0.0, "measuring (guests)": 0.0, "profiling (guests)": 0.0,
               "sources (fetch and diff)": 0.0, "judging, history and pages": 0.0}
    started = time.monotonic()
    options = runner.parse_args(settings.run_args)
    binary = binary_digest(options)
    manifest = Manifest(out)
    progress.line("%d kernels, %s, run %s, %d repetitions; results in %s" % (
        len(settings.kernels), settings.shape(), shlex.join(settings.run_args) or "(suite)",
        settings.repetitions, out))
    series = [Kernel(i + 1, spec, settings.kernels[:i].count(spec))
              for i, spec in enumerate(settings.kernels)]
    conn = store.open_history(settings.history)  # refused now, not after hours of guests
    try:
        _fetch(series, binary, settings, progress, timings)
        previous = None
        series_steps = []
        for item in series:
            if not item.key:
                continue
            _measure_one(settings, out, manifest, progress, item, series, timings)
            if not item.measured:
                continue
            begin = time.monotonic()
            step = _judge_and_record(settings, conn, previous, item, len(series_steps) + 1)
            timings["judging, history and pages"] += time.monotonic() - begin
            if step is not None:
                series_steps.append(step)
                _say_step(progress, step)
            previous = item
        _profile(settings, out, manifest, progress, series, series_steps, timings)
        _explain(settings, progress, series_steps, timings)
        begin = time.monotonic()
        index = _write_pages(settings, out, binary, series, series_steps, timings,
                             time.monotonic() - started)
        timings["judging, history and pages"] += time.monotonic() - begin
    finally:
        conn.close()
    skipped = [item for item in series if not item.measured]
    progress.line("done in %s: %d of %d kernels measured, %d step(s) flagged; %s"
                  % (_duration(time.monotonic() - started), len(series) - len(skipped),
                     len(series), sum(1 for s in series_steps if s.flagged), index))
    for item in skipped:
        progress.line("skipped %s: %s: %s" % (item.spec, item.state,
                                              item.reason.splitlines()[0] if item.reason
                                              else ""))
    if len(series) - len(skipped) < 2:
        progress.line("fewer than two kernels measured: nothing judged")
        return 2
    return 1 if skipped else 0


def _fetch(series, binary, settings, progress, timings):
    """Every kernel fetched before the first guest: one the archive lacks is said now,
    not hours into the series; a name no kernel has is the command's usage error."""
    for item in series:
        begin = time.monotonic()
        try:
            item.vmlinuz = kernel.resolve_kernel(item.spec).vmlinuz
            item.key = measurement_key(binary, lava.sha256_file(item.vmlinuz), settings,
                                       item.occurrence)
        except errors.VmUsageError:
            raise
        except errors.VmError as err:
            item.state, item.reason = "not fetched", str(err)
            progress.line("[%d/%d] %s: skipped, not fetched: %s"
                          % (item.position, len(series), item.spec, err))
        item.seconds["fetch"] = time.monotonic() - begin
        timings["fetching kernels"] += item.seconds["fetch"]


def _measure_one(settings, out, manifest, progress, item, series, timings):
    total = len(series)
    left = sum(1 for k in series[item.position - 1:] if k.key)
    name = "[%d/%d] %s" % (item.position, total, item.spec)
    results_path = os.path.join(out, "runs", item.key + ".json")
    record = manifest.done(item.key, out)
    if record:
        item.results = io.load_results(os.path.join(out, record["results"]))
        item.state = "measured earlier (resumed)"
        item.seconds["measured earlier"] = float(record.get("seconds", 0.0))
        progress.line("%s (%s): measured earlier with the same binary, kernel, shape and "
                      "options; not again" % (name, item.release))
        return
    log_path = os.path.join(out, "runs", item.key + ".log")
    progress.line("%s: measuring (log: %s); %s" % (name, os.path.relpath(log_path, out),
                                                   progress.eta_text(left)))
    begin = time.monotonic()
    with progress.heartbeat(name, left):
        status = measure(settings, run_options(settings, results_path), item.spec, log_path,
                         "series-%s" % item.key)
    seconds = time.monotonic() - begin
    item.seconds["measure"] = seconds
    timings["measuring (guests)"] += seconds
    if status != 0:
        item.state, item.reason = guest_failure(log_path, status)
        progress.line("%s: skipped, %s after %s:\n%s" % (name, item.state, _duration(seconds),
                                                         _indent(item.reason)))
        return
    try:
        item.results = io.load_results(results_path)
    except io.ResultsError as err:
        item.state, item.reason = "failed", "unusable results: %s" % err
        progress.line("%s: skipped, %s" % (name, item.reason))
        return
    item.state = "measured"
    progress.durations.append(seconds)
    manifest.keep(item.key, {"kernel": item.spec, "vmlinuz": item.vmlinuz,
                             "release": item.release, "seconds": round(seconds, 1),
                             "results": os.path.relpath(results_path, out),
                             "measured_at": store.utc_now()})
    progress.line("%s (%s): measured in %s; %s" % (name, item.release, _duration(seconds),
                                                   progress.eta_text(left - 1)))


def _indent(text):
    return "\n".join("    " + line for line in text.splitlines())


def _judge_and_record(settings, conn, previous, item, number):
    """Judges `item` against `previous` (None: the first kernel, judged against nothing),
    records it in the history; returns the step (or None)."""
    results = item.results
    info = store.RunInfo.from_results(results, settings.config,
                                      settings.run_args, settings.repetitions)
    verdicts, how, step = [], "", None
    if previous is not None:
        floors = store.load_calibration(conn, results.host, results.cpus,
                                        shlex.join(settings.run_args), info.machine)
        try:
            verdicts, how = steps.judge_step(previous.results, results, settings.gate, floors)
        except steps.StepError as err:
            how = "not judged: %s" % err
        if floors:
            how += "; calibrated floors of `calibrate` (config %s)" % shlex.join(
                settings.run_args)
        step = series_pages.Step(
            number, series_pages.Side(previous.spec, previous.release, previous.results.source),
            series_pages.Side(item.spec, item.release, results.source), verdicts, how)
    info.run_key = store.derived_run_key({"series": item.key,
                                          "after": previous.key if previous else None})
    baseline = previous.run_id if previous is not None else None
    item.run_id = store.record_run(conn, info, results, verdicts, baseline, complete=True)
    return step


def _say_step(progress, step):
    flagged = step.flagged
    progress.line("step %d, %s -> %s: %s" % (
        step.number, step.old.release, step.new.release,
        "no step" if not flagged else "%d benchmark(s) moved: %s" % (
            len(flagged), "; ".join("%s %s %+.1f%%" % (v.name, v.verdict, 100 * v.change)
                                    if v.change == v.change else "%s %s" % (v.name, v.verdict)
                                    for v in flagged[:5]) + (" ..." if len(flagged) > 5
                                                              else ""))))


def _profile(settings, out, manifest, progress, series, series_steps, timings):
    """Profiles both sides of every flagged step: one guest per kernel, filtered to the
    benchmarks flagged in the steps beside it, kept under a key of its own."""
    by_spec = {}
    for step in series_steps:
        if not step.flagged:
            continue
        for side in (step.old, step.new):
            by_spec.setdefault(side.results, set()).update(v.name for v in step.flagged)
    if not settings.profile:
        for step in series_steps:
            step.old.profile_note = step.new.profile_note = "profiling was switched off " \
                "(--no-profile)"
        return
    documents, notes = {}, {}
    measured = [item for item in series if item.measured and item.results.source in by_spec]
    for number, item in enumerate(measured, 1):
        names = by_spec[item.results.source]
        key = measurement_key(binary=item.key, vmlinuz="", settings=settings,
                              occurrence=item.occurrence, purpose="profile",
                              extra=sorted(names))
        results_path = os.path.join(out, "profiles", key + ".json")
        what = "profile %d/%d %s" % (number, len(measured), item.spec)
        record = manifest.done(key, out)
        if record is not None:
            item.seconds["profiled earlier"] = float(record.get("seconds", 0.0))
        else:
            log_path = os.path.join(out, "profiles", key + ".log")
            progress.line("%s: %d benchmark(s) (log: %s)" % (what, len(names),
                                                             os.path.relpath(log_path, out)))
            begin = time.monotonic()
            with progress.heartbeat(what, len(measured) - number + 1):
                status = measure(settings, run_options(settings, results_path, names),
                                 item.spec, log_path, "series-profile-%s" % key)
            item.seconds["profile"] = time.monotonic() - begin
            timings["profiling (guests)"] += item.seconds["profile"]
            if status != 0:
                notes[item.results.source] = "the profiled run failed: %s" % (
                    guest_failure(log_path, status)[1].splitlines() or [""])[0]
                progress.line("%s: %s" % (what, notes[item.results.source]))
                continue
            manifest.keep(key, {"kernel": item.spec, "profile_of": item.key,
                                "results": os.path.relpath(results_path, out),
                                "seconds": round(item.seconds["profile"], 1)})
            progress.line("%s: done in %s" % (what, _duration(item.seconds["profile"])))
        # Beside the results, as run writes it (the context names the guest's own path).
        found = results_path + ".profile.json"
        if not os.path.isfile(found):
            notes[item.results.source] = ("the profiled run wrote no profile (%s says why)"
                                          % os.path.relpath(results_path[:-5] + ".log", out))
            continue
        try:
            documents[item.results.source] = profile.load_profile(found)
        except profile.ProfileError as err:
            notes[item.results.source] = str(err)
    for step in series_steps:
        for side in (step.old, step.new):
            side.profile = documents.get(side.results)
            side.profile_note = notes.get(side.results, "")


def _explain(settings, progress, series_steps, timings):
    """Looks the moved functions of every flagged step up in both releases' sources."""
    for step in series_steps:
        if not step.flagged:
            continue
        symbols = series_pages.moved_symbols(step)
        if not settings.sources:
            step.sources = "looking up the sources was switched off (--no-sources)"
            continue
        if not symbols:
            step.sources = "no kernel function's share moved enough to look it up"
            continue
        begin = time.monotonic()
        try:
            trees = []
            for side in (step.old, step.new):
                release = sources.release_of(io.load_results(side.results).context)
                if release is None:
                    raise sources.SourceError(
                        "%s names no Debian version (its uname -v): its sources are not "
                        "known" % side.label)
                trees.append(sources.tree_for(release, lambda line: progress.line(line)))
            step.changes = sources.diff_functions(trees[0], trees[1], symbols)
            behind = sorted({path for c in step.changes if c.changed
                             for path in c.old_files + c.new_files})
            step.files = sources.file_changes(trees[0], trees[1], behind)
            step.sources = "%s against %s" % (trees[0].origin, trees[1].origin)
        except (sources.SourceError, errors.VmError, io.ResultsError) as err:
            step.sources = str(err)
        timings["sources (fetch and diff)"] += time.monotonic() - begin
        state, why = series_pages.explanation(step)
        progress.line("step %d: %s: %s" % (step.number, state, why))


def _write_pages(settings, out, binary, series, series_steps, timings, elapsed):
    measured = [item for item in series if item.measured]
    runs = [item.results for item in measured]
    labels = kernels.column_labels(runs)
    judged = {}
    for step in series_steps:
        index = next(i for i, item in enumerate(measured) if item.results.source ==
                     step.new.results)
        judged[index] = ({v.name: v for v in step.verdicts}, step.how)
    plots = []
    if len(runs) >= 2:
        try:
            plots = kernels.release_plots({settings.shape(): runs},
                                               {settings.shape(): judged},
                                               os.path.join(out, "plots"))
        except (OSError, ValueError) as err:
            print("series: plots not drawn: %s" % err, file=sys.stderr)
    for step in series_steps:
        if step.flagged:
            series_pages.write_step(step, os.path.join(out, "steps"))
    # This invocation's, and beside it what the guests it reused took when they ran.
    earlier = {"measuring (guests)": sum(i.seconds.get("measured earlier", 0) for i in series),
               "profiling (guests)": sum(i.seconds.get("profiled earlier", 0) for i in series)}
    total = sum(timings.values()) or 1.0
    timing_rows = [[what, "%.0f" % seconds, "%.0f%%" % (100 * seconds / total),
                    "%.0f" % earlier[what] if earlier.get(what) else "-"]
                   for what, seconds in timings.items()]
    timing_rows.append(["whole series (this invocation)", "%.0f" % elapsed, "",
                        "%.0f" % sum(earlier.values()) if any(earlier.values()) else "-"])
    kernel_rows = [[item.position, item.spec, item.release if item.measured else "-",
                    item.state + (": " + item.reason.splitlines()[0] if item.reason else ""),
                    os.path.relpath(item.results.source, out) if item.measured else "-",
                    _duration(item.seconds.get("measure", item.seconds.get("measured earlier",
                                                                           0)))
                    if item.measured else "-"]
                   for item in series]
    settings_rows = [["kernels", ", ".join(settings.kernels)],
                     ["guest", settings.shape()],
                     ["run", shlex.join(settings.run_args) or "(suite)"],
                     ["repetitions", settings.repetitions],
                     ["gate", "alpha %g, threshold %g%%, between-run floor %g%% where not "
                              "calibrated" % (settings.gate.alpha, settings.gate.threshold_pct,
                                              settings.gate.between_runs_floor_pct)],
                     ["history", "%s, config '%s'" % (store.describe(settings.history),
                                                      settings.config)],
                     ["benchmark binary", binary],
                     ["perfscale revision", runner.revision()],
                     ["written", datetime.datetime.now(datetime.timezone.utc).isoformat(
                         timespec="seconds")]]
    title = "Kernel series: %s" % (" -> ".join(item.release for item in measured)
                                   or "nothing measured")
    index = series_pages.index_page(title, settings_rows, kernel_rows, series_steps,
                                    kernels.release_rows(runs, judged, labels), timing_rows,
                                    plots, out, os.path.join(out, "steps"))
    written = index.write(os.path.join(out, "index"))
    page.write_whole(os.path.join(out, "steps.json"), json.dumps({
        "kernels": [{"kernel": item.spec, "release": item.release, "state": item.state,
                     "reason": item.reason, "key": item.key, "seconds": item.seconds,
                     "run_id": item.run_id} for item in series],
        "steps": [{"number": s.number, "old": s.old.release, "new": s.new.release,
                   "how": s.how, "explanation": list(series_pages.explanation(s)),
                   "page": s.stem + ".md" if s.flagged else None,
                   "flagged": [{"name": v.name, "verdict": v.verdict,
                                "change": v.change if v.change == v.change else None}
                               for v in s.flagged]} for s in series_steps],
        "timings": timings}, indent=1) + "\n")
    return written[0]
