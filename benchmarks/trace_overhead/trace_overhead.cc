// Tracing overhead: what recording tracepoints costs a workload that hits them.
//
// Seed: the thread "[RFC GIT PULL] perf/trace/lock optimization/scalability improvements"
// (Frederic Weisbecker and Jens Axboe, 3 Feb 2010). `perf lock record perf sched pipe -l
// 100000` ran at 910 usecs/op before the patchset and 437 after; `perf lock record -g ls`
// wrote 137 MB, and callchains doubled the time. A kernel developer wants that overhead,
// as a number, on their own kernel.
//
// BM_PipePingPong is the workload of `perf bench sched pipe`: two tasks (processes, perf
// bench's default, or threads as -T) bounce a 4-byte token over two pipes. The benchmark
// thread is one side, the peer is created once per run; one iteration is one round trip
// (perf bench also times fork and exit, which is noise after 10^5 loops). The placement
// puts both on one CPU (two context switches per round trip there), one CPU each (two
// cross-CPU wakeups), or leaves them to the scheduler like perf bench. While it runs, a
// recorder records a set of tracepoints: none (the baseline), lock (every tracepoint of
// events/lock/ the kernel has: contention_begin/end, and lockdep's where it is built in;
// the run's context lists them as lock_tracepoints, so a compare between kernels names a
// list that changed), sched (sched_switch, sched_wakeup), syscalls
// (raw_syscalls:sys_enter/exit) or custom ones.
//   The ring recorder (trace_recorder.h) is `perf lock record` (perf record -R -c 1 -m 1024):
// sample_period 1, samples of ip, tid, time, id, cpu, period and the raw payload,
// frame-pointer callchains of depth 8 if asked (as perf lock adds them), one ring buffer
// per CPU (the CPU's other events redirected into it) drained by a reader thread that
// discards the bytes or writes them to an unlinked temp file (perf.data). Scope cpu is
// system-wide (`perf record -a`: the rest of the machine and the reader too); scope task
// the benchmark thread with inherit, the peer created afterwards (still one event per
// CPU: the kernel refuses to mmap an inherited cpu=-1 event, exactly what `perf record --
// cmd` does).
//   The BPF recorder aggregates the same named sets in the kernel instead, as `perf lock
// contention --use-bpf` does (benchmarks/trace_overhead/bpf_recorder.h): programs on the
// set's tracepoints pair each task's begin and end and keep counts and log2 wait
// histograms per key in maps read once, after the run. Needs kernel BTF and root (or
// CAP_BPF with CAP_PERFMON).
//   Counters: usecs/op (one round trip), samples/op, bytes/op (ring buffer bytes, or the
// maps read per round trip), lost (samples the kernel could not write, or waits dropped
// for a full map), the BPF side's pairs, waits and quantiles, the kernel-cost counters of
// bench_support.h (sys_us/op counts this process and the reaped peer), and overhead_pct =
// usecs/op over the set:none run of the same tasks and placement in this same process.
// overhead_pct is only there when that none run has already run in this process (it is
// registered first; a --benchmark_filter that drops it, or random interleaving, drops the
// counter).
//
// BM_TracedSyscall: the benchmark thread makes one syscall an iteration that passes user
// memory (write: a 64-byte buffer to /dev/null; openat: a path, refused with EBADF once
// copied in), recorded in task scope by the ring recorder with nothing (the baseline),
// raw_syscalls:sys_enter/exit, or the syscall's own syscalls:sys_enter_X/sys_exit_X,
// which newer kernels fill with the memory the arguments point to
// (benchmarks/trace_overhead/syscall_events.h). Counters as the ring rows above, plus
// user_fields (the copies the recorded events' formats hold); the label names them, and
// the run's context says what this kernel's enter events copy (syscall_user_fields).
//
// The parameters, their ranges and defaults: the table below, printed by --help.
// Real time throughout: the peer, the reader and the kernel's work on the other CPU are
// part of the cost. Privileges: root or CAP_PERFMON (raw tracepoint samples otherwise
// need kernel.perf_event_paranoid=-1, system-wide ones <= 0) and a readable tracefs
// for the tracepoint ids. What is not permitted or not there is skipped, with the
// reason naming the tracepoint and the permission. A ring size the user gives that
// exceeds the mlock limit (kernel.perf_event_mlock_kb per CPU + RLIMIT_MEMLOCK, unless
// CAP_IPC_LOCK) stops the binary (exit 2); the default size over the limit only makes
// the recorded runs skip.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "benchmark/benchmark.h"
#include "benchmarks/harness/bench_support.h"
#include "benchmarks/harness/family.h"
#include "benchmarks/harness/flags.h"
#include "benchmarks/harness/profile_support.h"
#include "benchmarks/harness/suite_plan.h"
#include "benchmarks/trace_overhead/bpf_recorder.h"
#include "benchmarks/trace_overhead/pipe_pingpong.h"
#include "benchmarks/trace_overhead/syscall_events.h"
#include "benchmarks/trace_overhead/trace_recorder.h"
#include "lib/capabilities.h"
#include "lib/cpu_set.h"
#include "lib/errno_status.h"
#include "lib/kernel_cost.h"
#include "lib/placement.h"
#include "lib/ring_buffer.h"
#include "lib/tracefs.h"

namespace perfscale {
namespace {

absl::StatusOr<std::vector<std::string>> ParseTracepointList(absl::string_view text) {
  std::vector<std::string> names;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    absl::StatusOr<TracepointName> name = ParseTracepointName(item);
    if (!name.ok()) return name.status();
    std::string full = absl::StrCat(name->subsystem, ":", name->event);
    if (std::find(names.begin(), names.end(), full) == names.end()) names.push_back(full);
  }
  return names;
}

enum class Recorder { kRing, kBpf };

// BM_TracedSyscall's syscalls: each passes user memory the syscall trace events may copy.
enum class TracedSyscall { kWrite, kOpenat };
const char* TracedSyscallName(TracedSyscall syscall) {
  return syscall == TracedSyscall::kWrite ? "write" : "openat";
}
constexpr TracedSyscall kTracedSyscalls[] = {TracedSyscall::kWrite, TracedSyscall::kOpenat};

// What BM_TracedSyscall records around its syscall.
enum class SyscallEvents { kNone, kRaw, kPerSyscall };
const char* SyscallEventsName(SyscallEvents events) {
  switch (events) {
    case SyscallEvents::kNone:
      return "none";
    case SyscallEvents::kRaw:
      return "raw_syscalls";
    case SyscallEvents::kPerSyscall:
      return "syscalls";
  }
  return "?";
}

struct Flags {
  std::vector<Choice<std::string>> sets;
  std::vector<std::string> tracepoints;
  std::vector<Choice<bool>> callchains;
  std::vector<Choice<TraceScope>> scopes;
  std::vector<Choice<PipePingPong::Peer>> tasks;
  std::vector<Choice<std::string>> placements;
  std::vector<Choice<Recorder>> recorders;
  int64_t ring_pages = 0;
  std::vector<Choice<TraceSink>> sinks;
  std::vector<Choice<TracedSyscall>> syscalls;
  std::vector<Choice<SyscallEvents>> syscall_events;
};

const FlagList<Flags> flags(
    "trace_overhead",
    {
        ChoiceListFlag(&Flags::sets, "trace_overhead_sets",
                       ChoicesOf({"none", "lock", "sched", "syscalls"}),
                       "tracepoint sets recorded during the pipe ping-pong (set custom is added "
                       "by --trace_overhead_tracepoints)")
            .Default("none,lock,sched,syscalls")
            .Quick("none,sched"),
        ParsedFlag<Flags, std::vector<std::string>>(
            &Flags::tracepoints, "trace_overhead_tracepoints",
            "comma-separated subsystem:event names", ParseTracepointList,
            "the tracepoints of an extra set custom, e.g. irq:irq_handler_entry")
            .DefaultMeans("(none)"),
        ChoiceListFlag(&Flags::callchains, "trace_overhead_callchains",
                       ChoiceTable<bool>{{"off", false}, {"on", true}},
                       "record callchains (frame pointer, depth 8)")
            .Default("off,on")
            .Quick("off"),
        ChoiceListFlag(&Flags::scopes, "trace_overhead_scope",
                       ChoiceTable<TraceScope>{{"cpu", TraceScope::kSystemWide},
                                               {"task", TraceScope::kTask}},
                       "what is recorded: cpu (system-wide, perf record -a) or task (the "
                       "ping-pong tasks, inherited, perf record -- cmd)")
            .Default("cpu,task")
            .Quick("cpu"),
        ChoiceListFlag(&Flags::tasks, "trace_overhead_tasks",
                       ChoiceTable<PipePingPong::Peer>{{"processes", PipePingPong::Peer::kProcess},
                                                       {"threads", PipePingPong::Peer::kThread}},
                       "the ping-pong peer: processes (fork, perf bench's default) or threads "
                       "(perf bench -T)")
            .Default("processes"),
        // Unpinned is perf bench's way, and its figure swings with where the scheduler
        // puts the two tasks (one CPU or two: on a VM, 8 us or 70 us a round trip);
        // same_cpu is the stable figure an overhead is best read from, so both run.
        ChoiceListFlag(&Flags::placements, "trace_overhead_placement", ChoicesOf(PlacementNames()),
                       "where the ping-pong tasks run: unpinned (perf bench), same_cpu (both on "
                       "one CPU), other_cpus (one CPU each)")
            .Default("unpinned,same_cpu")
            .Quick("same_cpu"),
        ChoiceListFlag(&Flags::recorders, "trace_overhead_recorder",
                       ChoiceTable<Recorder>{{"ring", Recorder::kRing}, {"bpf", Recorder::kBpf}},
                       "how the sets are recorded: ring (perf record's ring buffers, drained by "
                       "a thread) or bpf (BPF programs aggregating in kernel maps, perf lock "
                       "contention --use-bpf)")
            .Default("ring,bpf"),
        IntFlag(&Flags::ring_pages, "trace_overhead_ring_pages", 1,
                static_cast<int64_t>(kMaxRingPages),
                "data pages per CPU ring buffer, a power of two (perf lock record -m 1024: 4 "
                "MiB)")
            .Values(absl::StrCat("a power of two 1..", kMaxRingPages))
            .Default("1024"),
        ChoiceListFlag(&Flags::sinks, "trace_overhead_sink",
                       ChoiceTable<TraceSink>{{"discard", TraceSink::kDiscard},
                                              {"file", TraceSink::kFile}},
                       "what the reader does with the records: discard, or file (an unlinked "
                       "temp file in $TMPDIR, like perf.data)")
            .Default("discard"),
        ChoiceListFlag(&Flags::syscalls, "trace_overhead_syscalls",
                       ChoicesOf({TracedSyscall::kWrite, TracedSyscall::kOpenat},
                                 TracedSyscallName),
                       "the syscall BM_TracedSyscall makes, each passing user memory: write (64 "
                       "bytes to /dev/null), openat (a path, refused with EBADF after the kernel "
                       "copied it)")
            .Default("write,openat")
            .Quick("openat"),
        ChoiceListFlag(&Flags::syscall_events, "trace_overhead_syscall_tracepoints",
                       ChoicesOf({SyscallEvents::kNone, SyscallEvents::kRaw,
                                  SyscallEvents::kPerSyscall},
                                 SyscallEventsName),
                       "what BM_TracedSyscall records: none (the baseline), raw_syscalls "
                       "(sys_enter/exit: the argument registers only), syscalls (the syscall's "
                       "own sys_enter_X/sys_exit_X, which newer kernels fill with the user "
                       "memory its arguments point to)")
            .Default("none,raw_syscalls,syscalls")
            .Quick("none,syscalls"),
    });

struct Params {
  std::string set;
  bool bpf = false;                      // recorder:bpf rather than the ring recorder
  std::vector<std::string> tracepoints;  // set custom
  bool callchains = false;
  TraceScope scope = TraceScope::kSystemWide;
  PipePingPong::Peer peer = PipePingPong::Peer::kProcess;
  std::string placement;
  uint64_t ring_pages = 1024;
  TraceSink sink = TraceSink::kDiscard;
  absl::Status budget;  // not ok: the default ring buffers exceed the mlock limit

  // What the baseline shares with a recorded run.
  std::string Layout() const {
    return absl::StrCat(peer == PipePingPong::Peer::kProcess ? "processes" : "threads", "/",
                        placement);
  }
};

// The set:none figure of each layout, as measured in this process. Google Benchmark
// calls a benchmark several times while it sizes the run; only the calls with the most
// iterations count, and repetitions of that size are averaged. Benchmarks run on the
// main thread one after another, so no lock is needed.
struct Baseline {
  int64_t iterations = 0;
  double sum_usecs = 0;
  int runs = 0;
};

std::map<std::string, Baseline>& Baselines() {
  static auto* baselines = new std::map<std::string, Baseline>;
  return *baselines;
}

void RecordBaseline(const std::string& layout, int64_t iterations, double usecs_per_op) {
  Baseline& baseline = Baselines()[layout];
  if (iterations < baseline.iterations) return;
  if (iterations > baseline.iterations) baseline = Baseline{iterations, 0, 0};
  baseline.sum_usecs += usecs_per_op;
  ++baseline.runs;
}

// usecs/op; a set:none run becomes its layout's baseline, a recorded one gets overhead_pct
// against that baseline when it has run in this process.
void ReportTimes(benchmark::State& state, const std::string& layout, bool recorded,
                 double usecs_per_op) {
  state.counters["usecs/op"] = usecs_per_op;
  if (!recorded) {
    RecordBaseline(layout, static_cast<int64_t>(state.iterations()), usecs_per_op);
    return;
  }
  auto baseline = Baselines().find(layout);
  if (baseline != Baselines().end() && baseline->second.runs > 0) {
    double none_usecs = baseline->second.sum_usecs / baseline->second.runs;
    state.counters["overhead_pct"] = (usecs_per_op - none_usecs) / none_usecs * 100.0;
  }
}

// ReportTimes, and what the ring recorder saw of a recorded run.
void ReportRingRun(benchmark::State& state, const std::string& layout, bool recorded,
                   const TraceStats& stats, double ops, double usecs_per_op) {
  if (recorded) {
    state.counters["samples/op"] = static_cast<double>(stats.samples) / ops;
    state.counters["bytes/op"] = static_cast<double>(stats.bytes) / ops;
    state.counters["lost"] = static_cast<double>(stats.lost);
  }
  ReportTimes(state, layout, recorded, usecs_per_op);
}

// The tracepoints of a run's set, as its skip messages name them.
std::string DescribeSet(const Params& params) {
  if (params.set == "custom") return absl::StrJoin(params.tracepoints, ",");
  if (params.set == "lock") return "the lock tracepoints";
  absl::StatusOr<std::vector<std::string>> names = TracepointSet(params.set);
  return names.ok() ? absl::StrJoin(*names, ",") : params.set;
}

// What recording in `scope` needs of this process and machine: perf events, system-wide
// events for kSystemWide, tracefs (mounted here if it may be). Errors begin "recording
// WHAT: ".
absl::Status CheckRecordingAllowed(TraceScope scope, const std::string& what) {
  Capabilities caps = ProbeCapabilities();
  absl::Status allowed = caps.RequirePerfEvents();
  if (allowed.ok() && scope == TraceScope::kSystemWide) allowed = caps.RequireSystemWide();
  if (allowed.ok()) allowed = caps.RequireTracefs();
  if (allowed.ok()) return allowed;
  return absl::Status(allowed.code(), absl::StrCat("recording ", what, ": ", allowed.message()));
}

// The tracepoints a ring-recorded run of `params` records.
absl::StatusOr<std::vector<std::string>> RecordedTracepoints(const Params& params) {
  if (params.set == "custom") return params.tracepoints;
  return TracepointSet(params.set);
}

absl::StatusOr<std::unique_ptr<TraceRecorder>> OpenRecorder(const Params& params,
                                                            std::string* label) {
  if (absl::Status allowed = CheckRecordingAllowed(params.scope, DescribeSet(params));
      !allowed.ok()) {
    return allowed;
  }
  TraceRecorderOptions options;
  absl::StatusOr<std::vector<std::string>> names = RecordedTracepoints(params);
  if (!names.ok()) return names.status();
  options.tracepoints = *std::move(names);
  options.callchains = params.callchains;
  options.scope = params.scope;
  options.task = 0;  // the benchmark thread; the peer, created later, inherits
  options.ring_pages = params.ring_pages;
  options.sink = params.sink;
  *label = absl::StrJoin(options.tracepoints, ",");
  return TraceRecorder::Open(options);
}

absl::StatusOr<std::unique_ptr<BpfRecorder>> OpenBpfRecorder(const Params& params) {
  BpfRecorderOptions options;
  options.set = params.set;
  options.task_scope = params.scope == TraceScope::kTask;
  absl::StatusOr<std::unique_ptr<BpfRecorder>> recorder = BpfRecorder::Open(options);
  if (!recorder.ok()) {
    return absl::Status(recorder.status().code(),
                        absl::StrCat("recording ", DescribeSet(params),
                                     " with BPF: ", recorder.status().message()));
  }
  return recorder;
}

// What the BPF side aggregated, as counters and a label.
void ReportBpfStats(benchmark::State& state, const Params& params, const BpfStats& stats,
                    double ops) {
  state.counters["samples/op"] = static_cast<double>(stats.events) / ops;
  state.counters["bytes/op"] = static_cast<double>(stats.map_bytes) / ops;
  state.counters["lost"] = static_cast<double>(stats.dropped);
  state.counters["bpf_pairs/op"] = static_cast<double>(stats.pairs) / ops;
  state.counters["bpf_wait_us/op"] = static_cast<double>(stats.total_ns) / 1e3 / ops;
  state.counters["bpf_keys"] = static_cast<double>(stats.keys.size());
  state.counters["bpf_unpaired"] = static_cast<double>(stats.unpaired);
  state.counters["bpf_wait_p50_us"] = static_cast<double>(stats.QuantileNs(0.5)) / 1e3;
  state.counters["bpf_wait_p99_us"] = static_cast<double>(stats.QuantileNs(0.99)) / 1e3;
  state.counters["bpf_wait_max_us"] = static_cast<double>(stats.max_ns) / 1e3;
  std::string label = absl::StrCat("bpf ", params.set, ": ", stats.keys.size(), " keys");
  if (!stats.keys.empty()) {
    const BpfKeyStats& top = stats.keys.front();
    std::string what = params.set == "lock"
                           ? absl::StrCat("lock in ", top.caller.empty() ? "?" : top.caller)
                       : params.set == "sched" ? absl::StrCat("tgid ", top.object, " off-CPU")
                                               : absl::StrCat("syscall ", top.object);
    absl::StrAppend(&label, "; longest total wait: ", what, ", ", top.count, " x ",
                    static_cast<double>(top.total_ns) / 1e3 / static_cast<double>(top.count),
                    " us");
  }
  state.SetLabel(label);
}

void BM_PipePingPong(benchmark::State& state, Params params) {
  absl::StatusOr<Placement> placement = ResolvePlacement(params.placement);
  if (SkipIfError(state, placement.status())) return;
  PassOptions options;
  options.include_children = true;  // the peer's system time
  options.count_iterations = 1000;
  if (!params.bpf && params.set != "none" && params.budget.ok()) {
    // Not closed with the recorder on each call: their grace periods were most of the row.
    absl::StatusOr<std::vector<std::string>> recorded = RecordedTracepoints(params);
    if (recorded.ok()) KeepTracepointsForRow(state, *recorded);
  }
  RunPasses(state, options, [&](BenchmarkPass& pass) {
    // Opened before the benchmark thread is pinned and before the peer exists: the
    // reader thread keeps the original affinity, and the peer inherits the events. The
    // counting pass records too: it counts what the timed pass's work caused.
    std::unique_ptr<TraceRecorder> recorder;
    std::unique_ptr<BpfRecorder> bpf;
    if (params.bpf) {
      absl::StatusOr<std::unique_ptr<BpfRecorder>> opened = OpenBpfRecorder(params);
      if (pass.SkipIfError(opened.status())) return;
      bpf = *std::move(opened);
    } else if (params.set != "none") {
      if (pass.SkipIfError(params.budget)) return;
      std::string label;
      absl::StatusOr<std::unique_ptr<TraceRecorder>> opened = OpenRecorder(params, &label);
      if (pass.SkipIfError(opened.status())) return;
      recorder = *std::move(opened);
      if (pass.timed()) state.SetLabel(label);
    }
    // After the recorder, so that its reader thread (the measuring tool, absent from the
    // set:none baseline) is not counted; before the peer, so that the peer is.
    pass.OpenCounters();
    // Restores the thread's affinity on every return path.
    absl::StatusOr<std::unique_ptr<ScopedAffinity>> pinned = PinDriver(*placement);
    if (pass.SkipIfError(pinned.status())) return;
    // The one peer needs one CPU: the first of the others.
    std::vector<int> peer_cpus;
    if (!placement->others.empty()) peer_cpus = {placement->others[0]};
    absl::StatusOr<std::unique_ptr<PipePingPong>> pingpong =
        PipePingPong::Start(params.peer, peer_cpus);
    if (pass.SkipIfError(pingpong.status())) return;
    // One untimed round trip: the peer is up and the pipes are warm.
    if (pass.SkipIfError((*pingpong)->RoundTrip())) return;
    if (recorder != nullptr && pass.SkipIfError(recorder->Enable())) return;
    if (bpf != nullptr && pass.SkipIfError(bpf->Enable())) return;

    if (!pass.Start()) return;
    auto start = std::chrono::steady_clock::now();
    for (auto _ : pass) {
      if (absl::Status trip = (*pingpong)->RoundTrip(); !trip.ok()) {
        pass.SkipIfError(trip);
        break;
      }
    }
    double elapsed_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    PauseProfile();               // stopping the recorder and reaping the peer are not timed
    if (state.skipped()) return;  // the destructors stop, reap and close

    TraceStats stats;
    if (recorder != nullptr) {
      absl::StatusOr<TraceStats> recorded = recorder->Stop();
      if (pass.SkipIfError(recorded.status())) return;
      stats = *recorded;
    }
    BpfStats aggregated;
    if (bpf != nullptr) {
      absl::StatusOr<BpfStats> read = bpf->Stop();
      if (pass.SkipIfError(read.status())) return;
      aggregated = *std::move(read);
    }
    // Reaped before the window ends, so the peer's CPU time is counted.
    if (pass.SkipIfError((*pingpong)->Stop())) return;
    if (!pass.Stop()) return;
    pinned->reset();  // the thread's own affinity back before the counters are reported

    double ops = static_cast<double>(pass.iterations());
    pass.SetOps(ops);
    if (pass.counting()) return;
    double usecs_per_op = elapsed_us / ops;
    if (bpf != nullptr) {
      ReportBpfStats(state, params, aggregated, ops);
      ReportTimes(state, params.Layout(), /*recorded=*/true, usecs_per_op);
    } else {
      ReportRingRun(state, params.Layout(), recorder != nullptr, stats, ops, usecs_per_op);
    }
  });
}

// One call of BM_TracedSyscall's syscall, with the user memory it passes. write: 64
// printable bytes to /dev/null (what a newer kernel's sys_enter_write copies). openat: a
// relative path against dirfd -1, which the kernel copies in (getname) and then refuses
// with EBADF: the path's cost without a file to open and close.
class SyscallCaller {
 public:
  static absl::StatusOr<std::unique_ptr<SyscallCaller>> Open(TracedSyscall syscall) {
    std::unique_ptr<SyscallCaller> caller(new SyscallCaller(syscall));
    if (syscall == TracedSyscall::kWrite) {
      caller->devnull_ = open("/dev/null", O_WRONLY | O_CLOEXEC);
      if (caller->devnull_ < 0) return ErrnoStatus(errno, "open /dev/null");
    }
    return caller;
  }
  SyscallCaller(const SyscallCaller&) = delete;
  SyscallCaller& operator=(const SyscallCaller&) = delete;
  ~SyscallCaller() {
    if (devnull_ >= 0) close(devnull_);
  }

  absl::Status Call() {
    if (syscall_ == TracedSyscall::kWrite) {
      ssize_t written = write(devnull_, kBuffer, kBufferBytes);
      if (written == static_cast<ssize_t>(kBufferBytes)) return absl::OkStatus();
      return written < 0 ? ErrnoStatus(errno, "write to /dev/null")
                         : absl::InternalError(absl::StrCat("write to /dev/null wrote ", written,
                                                            " of ", kBufferBytes, " bytes"));
    }
    int fd = openat(-1, kPath, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      close(fd);
      return absl::InternalError(absl::StrCat("openat(-1, \"", kPath, "\") opened a file"));
    }
    if (errno == EBADF) return absl::OkStatus();
    return ErrnoStatus(errno, absl::StrCat("openat(-1, \"", kPath, "\")"));
  }

 private:
  static constexpr char kBuffer[] =
      "perfscale BM_TracedSyscall writes these 64 bytes to /dev/null...";
  static constexpr size_t kBufferBytes = sizeof(kBuffer) - 1;
  static_assert(kBufferBytes == 64);
  static constexpr char kPath[] = "perfscale/BM_TracedSyscall/openat";

  explicit SyscallCaller(TracedSyscall syscall) : syscall_(syscall) {}
  const TracedSyscall syscall_;
  int devnull_ = -1;
};

struct SyscallParams {
  TracedSyscall syscall = TracedSyscall::kWrite;
  SyscallEvents events = SyscallEvents::kNone;
  uint64_t ring_pages = 1024;
  absl::Status budget;  // as Params::budget

  // What the baseline shares with a recorded run.
  std::string Layout() const { return absl::StrCat("syscall:", TracedSyscallName(syscall)); }
  std::vector<std::string> Tracepoints() const {
    if (events == SyscallEvents::kRaw) return *TracepointSet("syscalls");
    if (events == SyscallEvents::kPerSyscall) return SyscallTracepoints(TracedSyscallName(syscall));
    return {};
  }
};

// The user-memory fields of the recorded events' formats ("syscalls:sys_enter_openat
// copies __filename_val"), for the label; their count for the counter.
absl::StatusOr<std::vector<std::string>> CopiedUserMemory(const std::vector<std::string>& events) {
  std::vector<std::string> copies;
  for (const std::string& event : events) {
    if (!absl::StartsWith(event, "syscalls:")) continue;  // raw_syscalls copy nothing
    absl::StatusOr<std::vector<std::string>> fields = UserMemoryFields(event);
    if (!fields.ok()) return fields.status();
    for (const std::string& field : *fields) copies.push_back(absl::StrCat(event, ":", field));
  }
  return copies;
}

void BM_TracedSyscall(benchmark::State& state, SyscallParams params) {
  const std::vector<std::string> tracepoints = params.Tracepoints();
  const std::string events = absl::StrJoin(tracepoints, ",");
  PassOptions options;
  options.count_iterations = 1000;
  // Not closed with the recorder on each call (their grace periods).
  if (!tracepoints.empty() && params.budget.ok()) KeepTracepointsForRow(state, tracepoints);
  RunPasses(state, options, [&](BenchmarkPass& pass) {
    // Task scope: this thread's syscalls only, recorded by a reader thread started before
    // the events, so that its own syscalls are not.
    std::unique_ptr<TraceRecorder> recorder;
    std::vector<std::string> copies;
    if (!tracepoints.empty()) {
      if (pass.SkipIfError(params.budget)) return;
      if (pass.SkipIfError(CheckRecordingAllowed(TraceScope::kTask, events))) return;
      absl::StatusOr<std::vector<std::string>> copied = CopiedUserMemory(tracepoints);
      if (pass.SkipIfError(copied.status())) return;
      copies = *std::move(copied);
      TraceRecorderOptions recording;
      recording.tracepoints = tracepoints;
      recording.scope = TraceScope::kTask;
      recording.ring_pages = params.ring_pages;
      absl::StatusOr<std::unique_ptr<TraceRecorder>> opened = TraceRecorder::Open(recording);
      if (pass.SkipIfError(opened.status())) return;
      recorder = *std::move(opened);
    }
    absl::StatusOr<std::unique_ptr<SyscallCaller>> caller = SyscallCaller::Open(params.syscall);
    if (pass.SkipIfError(caller.status())) return;
    // After the recorder, so that its reader thread (the measuring tool) is not counted.
    pass.OpenCounters();
    if (recorder != nullptr && pass.SkipIfError(recorder->Enable())) return;

    if (!pass.Start()) return;
    auto start = std::chrono::steady_clock::now();
    for (auto _ : pass) {
      if (absl::Status called = (*caller)->Call(); !called.ok()) {
        pass.SkipIfError(called);
        break;
      }
    }
    double elapsed_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    PauseProfile();  // stopping the recorder is not timed
    if (state.skipped()) return;
    TraceStats stats;
    if (recorder != nullptr) {
      absl::StatusOr<TraceStats> recorded = recorder->Stop();
      if (pass.SkipIfError(recorded.status())) return;
      stats = *recorded;
    }
    if (!pass.Stop()) return;
    const double ops = static_cast<double>(pass.iterations());
    pass.SetOps(ops);
    if (pass.counting()) return;
    ReportRingRun(state, params.Layout(), recorder != nullptr, stats, ops, elapsed_us / ops);
    if (recorder == nullptr) return;
    state.counters["user_fields"] = static_cast<double>(copies.size());
    state.SetLabel(absl::StrCat(events, copies.empty()
                                            ? "; no user memory copied"
                                            : "; copied: " + absl::StrJoin(copies, ",")));
  });
}

// One syscall, slower when recorded; the setup opens an event and a ring buffer per CPU
// (the tracepoints stay registered for the row: no grace period per call).
CostModel SyscallCost(const SyscallParams& params) {
  const bool recorded = params.events != SyscallEvents::kNone;
  const int cpus = PlannedCpuCount();
  return [recorded, cpus](const UnitCosts& u) {
    double setup = recorded ? cpus * (2 * u.event_fd + 0.5e-3) : 0;
    // A syscall is about a tenth of a pipe round trip (two writes, two reads, two wakeups).
    return Cost{setup, (recorded ? 0.3 : 0.1) * u.round_trip, 0};
  };
}

// The run's context for a compare between kernels: which lock tracepoints the lock set
// records here (lock_tracepoints), and which user memory the syscall events copy
// (syscall_user_fields, "none" when they copy nothing). A kernel that gained a lock
// tracepoint, or started copying, moves those rows for that alone, and `compare` says so.
void AddKernelListsContext(bool lock_rows, bool syscall_rows) {
  if (PlanOnly() || (!lock_rows && !syscall_rows)) return;
  auto listed = [](const absl::StatusOr<std::vector<std::string>>& names) {
    if (!names.ok()) return absl::StrCat("unavailable: ", names.status().message());
    return names->empty() ? std::string("none") : absl::StrJoin(*names, ",");
  };
  absl::Status tracefs = ProbeCapabilities().RequireTracefs();
  if (lock_rows) {
    absl::StatusOr<std::vector<std::string>> names =
        tracefs.ok() ? TracepointSet("lock") : absl::StatusOr<std::vector<std::string>>(tracefs);
    benchmark::AddCustomContext("lock_tracepoints", listed(names));
  }
  if (syscall_rows) {
    std::vector<std::string> enters;
    for (TracedSyscall syscall : kTracedSyscalls) {
      enters.push_back(SyscallTracepoints(TracedSyscallName(syscall)).front());
    }
    absl::StatusOr<std::vector<std::string>> copies =
        tracefs.ok() ? CopiedUserMemory(enters) : absl::StatusOr<std::vector<std::string>>(tracefs);
    benchmark::AddCustomContext("syscall_user_fields", listed(copies));
  }
}

// A round trip, slower when recorded (more with callchains); the setup forks the peer
// and, when recording, opens a ring buffer per CPU (its tracepoints stay registered for
// the row), or loads and attaches the BPF programs and finally detaches them (an RCU
// grace period).
CostModel PingPongCost(const Params& params) {
  const bool recorded = params.set != "none";
  const bool bpf = params.bpf;
  const double factor = !recorded ? 1 : bpf ? 1.5 : params.callchains ? 4 : 2;
  const int cpus = PlannedCpuCount();
  return [recorded, bpf, factor, cpus](const UnitCosts& u) {
    double setup = u.process;
    if (recorded && !bpf) setup += cpus * (2 * u.event_fd + 0.5e-3);
    if (bpf) setup += u.tracepoint_teardown + 0.05;
    return Cost{setup, factor * u.round_trip, 0};
  };
}

absl::Status RegisterTraceOverheadFamily() {
  absl::StatusOr<Flags> f = flags.Resolve(FamilyFlagEnv());
  if (!f.ok()) return f.status();
  std::vector<Choice<std::string>> sets = f->sets;
  if (!f->tracepoints.empty()) sets.push_back({"custom", "custom"});
  bool ring = false, bpf = false;
  for (const Choice<Recorder>& recorder : f->recorders) {
    ring |= recorder.value == Recorder::kRing;
    bpf |= recorder.value == Recorder::kBpf;
  }
  const uint64_t pages = static_cast<uint64_t>(f->ring_pages);
  if (absl::Status valid = ValidateRingPages(pages); !valid.ok()) {
    return flags.Reject(&Flags::ring_pages, absl::StrCat(pages), valid.message());
  }
  bool records = false;
  for (const Choice<std::string>& set : sets) records |= ring && set.name != "none";
  // BM_TracedSyscall always records with the ring recorder.
  for (const Choice<SyscallEvents>& events : f->syscall_events) {
    records |= !f->syscalls.empty() && events.value != SyscallEvents::kNone;
  }
  absl::Status budget;
  if (records) {
    // One buffer per online CPU, whatever the scope.
    MlockLimits limits = ProbeMlockLimits();
    budget = CheckRingBufferBudget(limits, pages, static_cast<uint64_t>(limits.online_cpus));
    // A size the user asked for stops the binary; the default only makes the recorded
    // runs skip, so that `all` still runs the other families for an unprivileged user.
    if (!budget.ok() && flags.Given(&Flags::ring_pages)) {
      return flags.Reject(&Flags::ring_pages, absl::StrCat(pages), budget.message());
    }
    if (!budget.ok()) {
      budget = absl::ResourceExhaustedError(absl::StrCat(
          "the default ", flags.Name(&Flags::ring_pages), "=", pages, ": ", budget.message()));
    }
  }

  bool lock_rows = false, syscall_rows = false;
  for (const Choice<PipePingPong::Peer>& task : f->tasks) {
    for (const Choice<std::string>& placement : f->placements) {
      // The baseline first, so that the recorded runs after it can report overhead_pct.
      if (std::find(sets.begin(), sets.end(), Choice<std::string>{"none", "none"}) != sets.end()) {
        Params base;
        base.set = "none";
        base.peer = task.value;
        base.placement = placement.value;
        std::string name = absl::StrCat("BM_PipePingPong/set:none/tasks:", task.name,
                                        "/placement:", placement.name);
        RegisterPlanned(name, TimeMode::kReal, PingPongCost(base), BM_PipePingPong, base)
            ->Unit(benchmark::kMicrosecond);
      }
      for (const Choice<std::string>& set : sets) {
        if (set.name == "none") continue;
        // BPF programs exist for the named sets only.
        for (const Choice<TraceScope>& scope : f->scopes) {
          if (!bpf || set.name == "custom") break;
          Params params;
          params.set = set.name;
          params.bpf = true;
          params.scope = scope.value;
          params.peer = task.value;
          params.placement = placement.value;
          std::string name =
              absl::StrCat("BM_PipePingPong/set:", set.name, "/recorder:bpf/scope:", scope.name,
                           "/tasks:", task.name, "/placement:", placement.name);
          RegisterPlanned(name, TimeMode::kReal, PingPongCost(params), BM_PipePingPong, params)
              ->Unit(benchmark::kMicrosecond);
        }
        if (!ring) continue;
        for (const Choice<bool>& callchain : f->callchains) {
          for (const Choice<TraceScope>& scope : f->scopes) {
            for (const Choice<TraceSink>& sink : f->sinks) {
              Params params;
              params.set = set.name;
              params.tracepoints = f->tracepoints;
              params.callchains = callchain.value;
              params.scope = scope.value;
              params.peer = task.value;
              params.placement = placement.value;
              params.ring_pages = pages;
              params.sink = sink.value;
              params.budget = budget;
              std::string name =
                  absl::StrCat("BM_PipePingPong/set:", set.name, "/callchains:", callchain.name,
                               "/scope:", scope.name, "/tasks:", task.name,
                               "/placement:", placement.name, "/sink:", sink.name);
              RegisterPlanned(name, TimeMode::kReal, PingPongCost(params), BM_PipePingPong, params)
                  ->Unit(benchmark::kMicrosecond);
              lock_rows |= set.name == "lock" && WillRun(name);
            }
          }
        }
      }
    }
  }
  for (const Choice<TracedSyscall>& syscall : f->syscalls) {
    // The baseline first, as for the ping-pong (overhead_pct).
    std::vector<Choice<SyscallEvents>> events = f->syscall_events;
    std::stable_partition(events.begin(), events.end(), [](const Choice<SyscallEvents>& e) {
      return e.value == SyscallEvents::kNone;
    });
    for (const Choice<SyscallEvents>& recorded : events) {
      SyscallParams params;
      params.syscall = syscall.value;
      params.events = recorded.value;
      params.ring_pages = pages;
      params.budget = budget;
      std::string name =
          absl::StrCat("BM_TracedSyscall/syscall:", syscall.name, "/tracepoints:", recorded.name);
      RegisterPlanned(name, TimeMode::kReal, SyscallCost(params), BM_TracedSyscall, params)
          ->Unit(benchmark::kMicrosecond);
      syscall_rows |= recorded.value == SyscallEvents::kPerSyscall && WillRun(name);
    }
  }
  AddKernelListsContext(lock_rows, syscall_rows);
  return absl::OkStatus();
}

}  // namespace

PERFSCALE_FAMILY(trace_overhead, RegisterTraceOverheadFamily);

}  // namespace perfscale
