// Uprobe families: what a user-space probe costs each hit as more threads hit it, and
// what attaching one costs as more processes map the probed binary.
//
// Seed: Andrii Nakryiko's 2024 series ("uprobes: perform lockless SRCU-protected
// uprobes_tree lookup", "uprobes: protected uprobe lifetime with SRCU", then the
// lockless VMA-to-uprobe resolution) removed the global uprobes_treelock and the
// refcount bouncing from the hit path (handle_swbp). Its baseline table (BPF selftests'
// uprobe-nop, 80-core Xeon Gold 6138): 3.03 M hits/s on 1 CPU, 3.45 on 2, 3.66 on 4,
// 3.72 on 8, 3.34 on 16, 2.29 on 32, 3.21 on 64: no scaling with CPUs. Debian ships
// kernels on both sides (6.1 before, 6.12 after), which `tools/perfscale vm` boots.
//
// BM_UprobeHit: T threads (created before timing, unpinned) each call a noinline
// function of this binary --uprobe_calls times per iteration; the function carries a
// counting uprobe (the `uprobe` PMU, uprobe_pmu.h), or a uretprobe, or nothing (the
// baseline row). The probe is a per-task event inherited by the threads: one consumer,
// as one BPF uprobe is. Manual time: from releasing the threads to the last one done.
// usecs/hit is that time over the calls of one thread (what one caller waits per call;
// flat when hits scale), hits/s the machine's rate (all threads' hits over the same
// time). The probe must count (a wrong file offset counts 0: an error, not a figure);
// a count above or below the calls (a call counted twice, a hit lost) is reported in
// the label and counted/hit. Kernel-cost counters per hit
// (bench_support.h; from the counting pass): lock_contended, lock_wait_us, xcalls, ...
//
// BM_UprobeSite: the benchmark thread calls a function of this binary --uprobe_calls
// times per iteration; the function starts with one kind of instruction the kernel's x86
// uprobe code treats its own way, written in assembly so the bytes under the probe are
// known (probe_sites.h says which kinds, and which kernels do what with each): mov
// (single-stepped out of line), push (emulated), nop1, nop5, nop9, nop10 (the nop lengths
// kernels emulate, single-step, refuse or rewrite into a call differently: nop5 and nop10
// are what USDT probes and the optimized-uprobe series use), and return (a uretprobe). One
// counting probe on this thread (pid 0, no inherit). Manual time: the calls. The probe's
// attach (the open), its first hit (where an optimizing kernel rewrites the site) and its
// detach (the close, after both passes) are timed apart: attach_usecs, first_hit_usecs,
// detach_usecs, one of each per run of the row. `optimized` is 1 where the site's bytes,
// read back after the hits, are no longer the int3 a plain uprobe writes (the label shows
// them); a kernel that refuses the site (nop10 before its optimization) skips the row.
//
// BM_UprobeAttach: P child processes (forked before timing: they map this binary and
// wait) and one iteration opens N system-wide uprobes on N distinct functions of the
// binary, then closes them. uprobe_register walks every mapping of the inode and writes
// the breakpoint into each process (and uprobe_unregister takes it out again), so
// usecs/probe grows with P. Manual time: the opens and closes; open_usecs/probe and
// close_usecs/probe apart (newer kernels wait for grace periods in the close, which
// can hide what the processes add).
//
// The parameters, their ranges and defaults: the table below, printed by --help.
// Privileges: the uprobe PMU wants CAP_PERFMON or CAP_SYS_ADMIN at any
// perf_event_paranoid (root does); a locked-down kernel may refuse it to root too. The
// probe rows skip with the reason; the baseline row needs nothing.
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "benchmark/benchmark.h"
#include "benchmarks/harness/bench_support.h"
#include "benchmarks/harness/family.h"
#include "benchmarks/harness/flags.h"
#include "benchmarks/harness/profile_support.h"
#include "benchmarks/harness/suite_plan.h"
#include "benchmarks/uprobe/elf_offset.h"
#include "benchmarks/uprobe/probe_sites.h"
#include "benchmarks/uprobe/uprobe_pmu.h"
#include "lib/capabilities.h"
#include "lib/child_process.h"
#include "lib/cpu_set.h"
#include "lib/errno_status.h"
#include "lib/perf_event.h"

// The probed function of BM_UprobeHit: not inlined, not folded into another, and its
// calls not removed (the asm makes its result unknown to the compiler).
extern "C" __attribute__((noinline, used)) int perfscale_uprobe_hit_target(int x) {
  asm volatile("" : "+r"(x));
  return x + 1;
}

namespace perfscale {
namespace {

// BM_UprobeAttach's functions: distinct code (the constant differs, so identical-code
// folding cannot merge them), one probe each.
constexpr int kMaxAttachProbes = 256;
// The probes BM_UprobeAttach's counting pass attaches (its counts per probe are to
// 1/kCountedProbes of an event); each costs a close with its grace periods.
constexpr int kCountedProbes = 4;

template <int I>
__attribute__((noinline)) int AttachTarget(int x) {
  asm volatile("" : "+r"(x));
  return x + I;
}

template <size_t... I>
constexpr std::array<int (*)(int), sizeof...(I)> MakeAttachTargets(std::index_sequence<I...>) {
  return {&AttachTarget<static_cast<int>(I)>...};
}

constexpr std::array<int (*)(int), kMaxAttachProbes> kAttachTargets =
    MakeAttachTargets(std::make_index_sequence<kMaxAttachProbes>{});

enum class ProbeKind { kNone, kUprobe, kUretprobe };

const char* ProbeKindName(ProbeKind kind) {
  switch (kind) {
    case ProbeKind::kNone:
      return "none";
    case ProbeKind::kUprobe:
      return "uprobe";
    case ProbeKind::kUretprobe:
      return "uretprobe";
  }
  return "?";
}

// 1..4, then powers of two, with the CPU count and twice it: where a global lock shows
// (more threads than CPUs included), in 10 shapes rather than 256 on a big machine.
std::string OneToTwiceCpus(const FlagEnv& env) {
  std::vector<int64_t> threads;
  const int64_t most = 2 * static_cast<int64_t>(env.cpus);
  for (int64_t t = 1; t <= most; t = t < 4 ? t + 1 : 2 * t) {
    if (t > env.cpus && threads.back() < env.cpus) threads.push_back(env.cpus);
    threads.push_back(t);
  }
  if (threads.back() < env.cpus) threads.push_back(env.cpus);
  if (threads.back() != most) threads.push_back(most);
  return absl::StrJoin(threads, ",");
}

ChoiceTable<const ProbeSite*> SiteChoices() {
  ChoiceTable<const ProbeSite*> table;
  for (const ProbeSite& site : ProbeSites()) table.push_back({site.name, &site});
  return table;
}

struct Flags {
  std::vector<int64_t> threads;
  std::vector<Choice<ProbeKind>> probes;
  std::vector<Choice<const ProbeSite*>> sites;
  int calls = 0;
  std::vector<int64_t> attach_probes;
  std::vector<int64_t> processes;
};

const FlagList<Flags> flags(
    "uprobe",
    {
        IntListFlag(&Flags::threads, "uprobe_threads", 1, 4096,
                    "threads calling the probed function (BM_UprobeHit)")
            .Default("1..4, powers of two, CPUs and 2xCPUs", OneToTwiceCpus)
            .Quick("1,CPUs", [](const FlagEnv& env) { return absl::StrCat("1,", env.cpus); }),
        ChoiceListFlag(&Flags::probes, "uprobe_probe",
                       ChoicesOf({ProbeKind::kNone, ProbeKind::kUprobe, ProbeKind::kUretprobe},
                                 ProbeKindName),
                       "what the function carries (BM_UprobeHit): none (the baseline), uprobe "
                       "(a counting probe on its entry), uretprobe (on its return)")
            .Default("none,uprobe,uretprobe"),
        ChoiceListFlag(&Flags::sites, "uprobe_site", SiteChoices(),
                       "the instruction under the probe (BM_UprobeSite): mov (single-stepped), "
                       "push (emulated), nop1, nop5, nop9, nop10 (each a nop length kernels "
                       "treat differently), return (a uretprobe)")
            .Default("mov,push,nop1,nop5,nop9,nop10,return")
            .Quick("nop1,nop5"),
        IntFlag(&Flags::calls, "uprobe_calls", 1, 100000000,
                "calls of the probed function by each thread per iteration (BM_UprobeHit, "
                "BM_UprobeSite)")
            .Default("1000"),
        IntListFlag(&Flags::attach_probes, "uprobe_attach_probes", 1, kMaxAttachProbes,
                    "uprobes opened and closed per iteration, on distinct functions "
                    "(BM_UprobeAttach)")
            .Default("1,16,256")
            .Quick("4"),
        IntListFlag(&Flags::processes, "uprobe_processes", 0, 100000,
                    "child processes mapping the probed binary (BM_UprobeAttach)")
            .Default("0,16,128")
            .Quick("0,16"),
    });

// The T threads of BM_UprobeHit (none until GrowTo): each runs `calls` calls per round.
class HitWorkers {
 public:
  explicit HitWorkers(int64_t calls) : calls_(calls) {}

  // Adds threads until there are `threads` (they inherit what this thread's inheritable
  // events are then).
  absl::Status GrowTo(int threads) {
    absl::MutexLock lock(&mu_);
    // A thread added to a kept pool runs from the next round on: the last one is over (no
    // round runs while threads are added), and the next may start before it runs at all.
    first_round_ = round_ + 1;
    while (static_cast<int>(threads_.size()) < threads) {
      pthread_t thread;
      int err = pthread_create(&thread, nullptr, &HitWorkers::Main, this);
      if (err != 0) return ErrnoStatus(err, "pthread_create (uprobe hit worker)");
      threads_.push_back(thread);
    }
    return absl::OkStatus();
  }

  int size() {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(threads_.size());
  }

  ~HitWorkers() {
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
    }
    for (pthread_t thread : threads_) pthread_join(thread, nullptr);
  }

  // The threads' ids (gettid), once every one has started.
  std::vector<pid_t> Tids() {
    absl::MutexLock lock(&mu_);
    const size_t threads = threads_.size();
    auto all_started = [this, threads]()
                           ABSL_SHARED_LOCKS_REQUIRED(mu_) { return tids_.size() == threads; };
    mu_.Await(absl::Condition(&all_started));
    return tids_;
  }

  // Releases every thread for one round of calls and waits until all are done.
  void RunRound() {
    absl::MutexLock lock(&mu_);
    done_ = 0;
    ++round_;
    const size_t threads = threads_.size();
    auto all_done = [this, threads]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return static_cast<size_t>(done_) == threads;
    };
    mu_.Await(absl::Condition(&all_done));
  }

 private:
  static void* Main(void* arg) {
    auto* self = static_cast<HitWorkers*>(arg);
    int64_t seen = 0;  // the last round it ran
    {
      absl::MutexLock lock(&self->mu_);
      self->tids_.push_back(static_cast<pid_t>(syscall(SYS_gettid)));
      seen = self->first_round_ - 1;
    }
    for (;;) {
      {
        absl::MutexLock lock(&self->mu_);
        auto released = [self, &seen]() ABSL_SHARED_LOCKS_REQUIRED(self->mu_) {
          return self->stop_ || self->round_ != seen;
        };
        self->mu_.Await(absl::Condition(&released));
        if (self->stop_) return nullptr;
        seen = self->round_;
      }
      int value = 0;
      for (int64_t i = 0; i < self->calls_; ++i) value = perfscale_uprobe_hit_target(value);
      benchmark::DoNotOptimize(value);
      absl::MutexLock lock(&self->mu_);
      ++self->done_;
    }
  }

  const int64_t calls_;
  std::vector<pthread_t> threads_;
  absl::Mutex mu_;
  int64_t round_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t first_round_ ABSL_GUARDED_BY(mu_) = 1;  // of the threads GrowTo adds
  int done_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<pid_t> tids_ ABSL_GUARDED_BY(mu_);
};

// What a probe counted over a pass against the calls made. None counted is a probe in
// the wrong place (a wrong file offset counts 0): an error, in either pass, and false.
// Fewer or more than the calls is the kernel's count, reported and kept (counted/hit and
// the label, `label` first when given): more is some call counted twice (several threads
// on 6.1 and 6.12 guests), fewer a hit lost (1 in 4,000 with 4 threads on a 2-vCPU 5.10
// guest, 16 in 256,000 with 16 threads on an 8-vCPU 6.12 guest).
bool CheckHitCount(BenchmarkPass& pass, PerfEvent& probe, uint64_t counted_before, double hits,
                   const char* what, const CodeLocation& location, std::string label = "") {
  absl::StatusOr<uint64_t> read = probe.ReadCount();
  if (pass.SkipIfError(read.status())) return false;
  const uint64_t counted = *read - counted_before;
  if (counted == 0 && hits > 0) {
    pass.SkipIfError(absl::InternalError(
        absl::StrCat("the ", what, " on ", location.path, "+0x", absl::Hex(location.offset),
                     " counted 0 hits of ", hits, " calls (a wrong file offset counts 0)")));
    return false;
  }
  if (!pass.timed() || hits <= 0) return true;
  if (static_cast<double>(counted) != hits) {
    absl::StrAppend(&label, label.empty() ? "" : "; ", "the probe counted ", counted, " hits of ",
                    hits, " calls");
  }
  if (!label.empty()) pass.state().SetLabel(label);
  pass.state().counters["counted/hit"] = static_cast<double>(counted) / hits;
  return true;
}

struct HitParams {
  ProbeKind probe;
  int threads;
  int64_t calls;
};

// BM_UprobeHit's probe (opened first, so that the threads inherit it) and threads, kept for
// the next row with the same probe and calls, which adds threads up to its own count. Not
// for a row with fewer threads: each thread's inherited copy is a consumer of the same
// uprobe, and every hit runs through all of them, so a thread idle in this row would still
// be timed. Members go in reverse: the threads first, then the probe.
struct KeptHitSetup : RowFixture {
  // The probe's path: each thread created while the probe is open copies it from here
  // (UprobeAttr), so it lives as long as the probe.
  CodeLocation location;
  PerfEvent probe;  // not valid for the baseline (no probe)
  std::unique_ptr<HitWorkers> workers;
};

// The probe (none for the baseline), then no threads yet (HitWorkers::GrowTo).
absl::StatusOr<std::unique_ptr<KeptHitSetup>> StartHitSetup(const HitParams& params,
                                                            const UprobePmu& pmu,
                                                            const CodeLocation& location) {
  auto setup = std::make_unique<KeptHitSetup>();
  setup->location = location;
  if (params.probe != ProbeKind::kNone) {
    absl::StatusOr<PerfEvent> opened = OpenUprobe(
        pmu, setup->location, params.probe == ProbeKind::kUretprobe, 0, -1, /*inherit=*/true);
    if (!opened.ok()) return opened.status();
    setup->probe = *std::move(opened);
  }
  setup->workers = std::make_unique<HitWorkers>(params.calls);
  return setup;
}

// The setup of this call of the row: kept (a row fixture) where it has a probe; the
// baseline's made for the call (`own`), as it was before there were fixtures: nothing of
// it waits for grace periods, and its round (1,000 calls of an empty function) is mostly
// the threads' wake-up, slower for threads parked longer on a guest with cpuidle haltpoll
// (kept, they read up to two thirds higher in A/Bs on one).
absl::StatusOr<KeptHitSetup*> HitSetup(const benchmark::State& state, const HitParams& params,
                                       const Capabilities& caps, const UprobePmu& pmu,
                                       const CodeLocation& location,
                                       std::unique_ptr<KeptHitSetup>& own) {
  auto start = [&]() { return StartHitSetup(params, pmu, location); };
  absl::StatusOr<KeptHitSetup*> setup;
  if (params.probe == ProbeKind::kNone) {
    absl::StatusOr<std::unique_ptr<KeptHitSetup>> made = start();
    if (!made.ok()) return made.status();
    own = *std::move(made);
    setup = own.get();
  } else {
    const std::string key =
        absl::StrCat("uprobe hit ", ProbeKindName(params.probe), " calls ", params.calls);
    setup = RowFixtureFor<KeptHitSetup>(state, key, start);
    if (setup.ok() && (*setup)->workers->size() > params.threads) {
      ReleaseRowFixtures();
      setup = RowFixtureFor<KeptHitSetup>(state, key, start);
    }
    if (!setup.ok()) return setup.status();
  }
  // The thread budget counts the kept threads as in use.
  const int more = params.threads - (*setup)->workers->size();
  if (absl::Status fits = caps.RequireThreads(static_cast<uint64_t>(more)); !fits.ok()) return fits;
  if (absl::Status grown = (*setup)->workers->GrowTo(params.threads); !grown.ok()) {
    if (own == nullptr) ReleaseRowFixtures();  // a partial pool would be timed as the row's
    return grown;
  }
  return setup;
}

void BM_UprobeHit(benchmark::State& state, HitParams params) {
  Capabilities caps = ProbeCapabilities();
  UprobePmu pmu;
  CodeLocation location;
  if (params.probe != ProbeKind::kNone) {
    if (SkipIfError(state, caps.RequirePerfEvents())) return;
    absl::StatusOr<UprobePmu> probed = ProbeUprobePmu();
    if (SkipIfError(state, probed.status())) return;
    pmu = *probed;
    absl::StatusOr<CodeLocation> at =
        SelfCodeLocation(reinterpret_cast<const void*>(&perfscale_uprobe_hit_target));
    if (SkipIfError(state, at.status())) return;
    location = *std::move(at);
  }
  PassOptions options;
  options.unit = "hit";
  options.count_iterations = 20;  // x threads x calls hits: thousands
  // The probe and the threads are shared by both passes and, as a row fixture, by the
  // row's calls and the next row with the same probe (HitSetup): every uprobe event's
  // close waits for grace periods, the probe's and each thread's inherited copy's (at its
  // exit), one after another, most of a quick row's time
  // (docs/measurements/2026-12-03-counting-pass-cost.md).
  std::unique_ptr<KeptHitSetup> own;
  KeptHitSetup* setup = nullptr;
  RunPasses(state, options, [&](BenchmarkPass& pass) {
    if (pass.timed()) {  // right before timing, as the threads always were
      absl::StatusOr<KeptHitSetup*> made = HitSetup(state, params, caps, pmu, location, own);
      if (pass.SkipIfError(made.status())) return;
      setup = *made;
    } else if (setup == nullptr) {
      return;
    }
    PerfEvent& probe = setup->probe;
    HitWorkers* workers = setup->workers.get();
    // Named only where they are counted: waiting for the threads to have started is not
    // what the timed pass did before there were fixtures (its first round raced their
    // start).
    if (!pass.timed() || AttributionMode() == Attribution::kTimed) {
      pass.OpenCounters(workers->Tids());
    }
    uint64_t counted_before = 0;
    if (probe.valid()) {
      absl::StatusOr<uint64_t> counted = probe.ReadCount();
      if (pass.SkipIfError(counted.status())) return;
      counted_before = *counted;
    }

    if (!pass.Start()) return;
    double seconds = 0;
    for (auto _ : pass) {
      auto start = std::chrono::steady_clock::now();
      workers->RunRound();
      double round =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      pass.SetIterationTime(round);
      seconds += round;
    }
    if (!pass.Stop()) return;
    const double iterations = static_cast<double>(pass.iterations());
    const double hits = iterations * params.threads * static_cast<double>(params.calls);
    pass.SetOps(hits);
    // The inherited copies in the threads are summed into the parent's count.
    if (probe.valid() &&
        !CheckHitCount(pass, probe, counted_before, hits, ProbeKindName(params.probe), location)) {
      return;
    }
    if (!pass.timed() || hits <= 0) return;
    state.counters["usecs/hit"] = seconds * 1e6 / (iterations * static_cast<double>(params.calls));
    state.counters["hits/s"] = benchmark::Counter(hits, benchmark::Counter::kIsRate);
    state.counters["threads"] = params.threads;
  });
}

struct SiteParams {
  const ProbeSite* site;
  int64_t calls;
};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// BM_UprobeSite's probe and what its attach and first hit took.
struct SiteProbe : RowFixture {
  CodeLocation location;  // the probe's path (UprobeAttr)
  PerfEvent probe;
  double attach_seconds = 0;
  double first_hit_seconds = 0;
};

void BM_UprobeSite(benchmark::State& state, SiteParams params) {
  const ProbeSite& site = *params.site;
  if (site.function == nullptr) {
    SkipIfError(state, absl::UnimplementedError("the probe sites are x86-64 instructions"));
    return;
  }
  Capabilities caps = ProbeCapabilities();
  if (SkipIfError(state, caps.RequirePerfEvents())) return;
  absl::StatusOr<UprobePmu> pmu = ProbeUprobePmu();
  if (SkipIfError(state, pmu.status())) return;
  absl::StatusOr<CodeLocation> location =
      SelfCodeLocation(reinterpret_cast<const void*>(site.function));
  if (SkipIfError(state, location.status())) return;
  const char* what = site.retprobe ? "uretprobe" : "uprobe";
  PassOptions options;
  options.unit = "hit";
  options.count_iterations = 20;  // x calls hits
  // One probe for both passes, on this thread only (no inherit): opened by the timed pass
  // (attach), hit once by itself (where an optimizing kernel rewrites the site), closed
  // after the counting pass (detach), each timed apart. A counting pass of its own would
  // pay a second close and its grace periods for nothing. With a counting pass, which runs
  // in the call Google Benchmark reports only, the probe is also kept for the row's
  // earlier calls (a row fixture: each close waits for grace periods, 70-80 ms here, for
  // calls of 1 and 10 iterations); their loops run after its first hit either way.
  const bool keep = AttributionMode() == Attribution::kCountingPass;
  const std::string key = absl::StrCat("uprobe site ", site.name, " calls ", params.calls);
  auto attach = [&]() -> absl::StatusOr<std::unique_ptr<SiteProbe>> {
    auto made = std::make_unique<SiteProbe>();
    made->location = *location;
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<PerfEvent> opened =
        OpenUprobe(*pmu, made->location, site.retprobe, 0, -1, false);
    made->attach_seconds = SecondsSince(start);
    if (!opened.ok()) return opened.status();
    made->probe = *std::move(opened);
    start = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(site.function(0));
    made->first_hit_seconds = SecondsSince(start);
    return made;
  };
  std::unique_ptr<SiteProbe> own;  // this call's, where none is kept
  SiteProbe* attached = nullptr;
  bool counted = false;  // the counting pass ran: this call is the one reported
  RunPasses(state, options, [&](BenchmarkPass& pass) {
    int value = 0;
    if (pass.timed()) {
      absl::StatusOr<SiteProbe*> got;
      if (keep) {
        got = RowFixtureFor<SiteProbe>(state, key, attach);
      } else if (absl::StatusOr<std::unique_ptr<SiteProbe>> made = attach(); made.ok()) {
        own = *std::move(made);
        got = own.get();
      } else {
        got = made.status();
      }
      if (pass.SkipIfError(got.status())) return;
      attached = *got;
    } else {
      counted = true;
    }
    if (attached == nullptr) return;
    PerfEvent& probe = attached->probe;
    absl::StatusOr<uint64_t> counted_before = probe.ReadCount();
    if (pass.SkipIfError(counted_before.status())) return;
    if (!pass.Start()) return;
    double seconds = 0;
    for (auto _ : pass) {
      auto start = std::chrono::steady_clock::now();
      for (int64_t i = 0; i < params.calls; ++i) value = site.function(value);
      const double round = SecondsSince(start);
      pass.SetIterationTime(round);
      seconds += round;
    }
    benchmark::DoNotOptimize(value);
    if (!pass.Stop()) return;
    const double hits = static_cast<double>(pass.iterations()) * static_cast<double>(params.calls);
    pass.SetOps(hits);
    // What the kernel made of the site: a breakpoint every hit traps on, or rewritten
    // (the optimized uprobe's call).
    const std::vector<uint8_t> now = SiteBytesNow(site);
    const SitePatch patch = ClassifySitePatch(site.bytes, now);
    std::string label = absl::StrCat(site.name, " ", HexBytes(site.bytes), " -> ", HexBytes(now),
                                     " (", SitePatchName(patch), ")");
    if (!CheckHitCount(pass, probe, *counted_before, hits, what, *location, std::move(label))) {
      return;
    }
    if (!pass.timed() || hits <= 0) return;
    state.counters["usecs/hit"] = seconds * 1e6 / hits;
    state.counters["optimized"] = patch == SitePatch::kRewritten ? 1 : 0;
    state.counters["attach_usecs"] = attached->attach_seconds * 1e6;
    state.counters["first_hit_usecs"] = attached->first_hit_seconds * 1e6;
  });
  if (attached == nullptr || (keep && !counted)) return;  // kept for the row's next call
  auto start = std::chrono::steady_clock::now();
  attached->probe.Close();
  const double detach_seconds = SecondsSince(start);
  if (keep) ReleaseRowFixtures();  // its probe is closed
  // The timed pass's figure; a row that failed or skipped reports nothing.
  if (!state.skipped()) state.counters["detach_usecs"] = detach_seconds * 1e6;
}

// What a waiting child runs: nothing but pause(2) until it is killed.
PERFSCALE_CHILD_CODE int Park(void*) {
  for (;;) syscall(SYS_pause);
}

struct AttachParams {
  int probes;
  int processes;
};

void BM_UprobeAttach(benchmark::State& state, AttachParams params) {
  Capabilities caps = ProbeCapabilities();
  if (SkipIfError(state, caps.RequirePerfEvents())) return;
  absl::StatusOr<UprobePmu> pmu = ProbeUprobePmu();
  if (SkipIfError(state, pmu.status())) return;
  std::vector<CodeLocation> locations;
  for (int i = 0; i < params.probes; ++i) {
    absl::StatusOr<CodeLocation> at =
        SelfCodeLocation(reinterpret_cast<const void*>(kAttachTargets[static_cast<size_t>(i)]));
    if (SkipIfError(state, at.status())) return;
    locations.push_back(*std::move(at));
  }
  absl::StatusOr<std::vector<int>> cpus = OnlineCpus();
  if (SkipIfError(state, cpus.status())) return;
  absl::StatusOr<ScopedFdLimit> fd_limit =
      ScopedFdLimit::Ensure(static_cast<uint64_t>(params.probes));
  if (SkipIfError(state, fd_limit.status())) return;
  PassOptions options;
  options.unit = "probe";
  options.count_iterations = (kCountedProbes + std::min(params.probes, kCountedProbes) - 1) /
                             std::min(params.probes, kCountedProbes);
  RunPasses(state, options, [&](BenchmarkPass& pass) {
    // The counting pass attaches kCountedProbes of the row's probes (all N when fewer,
    // over more iterations: options.count_iterations), so a count per probe is stated to
    // a quarter of an event (count_ops >= 4 where the timed pass ran that many). It once
    // attached one, but a count per probe from one probe moves by whole events (xcalls/
    // probe 1 or 3 between repetitions of one run), which no gate can judge. Not all N:
    // each close waits for grace periods (~0.1 s here), and N goes to 256.
    const size_t attached = pass.counting()
                                ? static_cast<size_t>(std::min(params.probes, kCountedProbes))
                                : static_cast<size_t>(params.probes);
    pass.OpenCounters();
    std::vector<ChildProcess> children;
    children.reserve(static_cast<size_t>(params.processes));
    for (int i = 0; i < params.processes; ++i) {
      absl::StatusOr<ChildProcess> child =
          ChildProcess::Start("uprobe mapper", &Park, nullptr, {}, ChildProcess::Stdio::kDevNull);
      if (pass.SkipIfError(child.status())) return;
      children.push_back(*std::move(child));
    }
    // A system-wide event (every process, one CPU): the kernel writes the breakpoint
    // into every process that maps the binary, as a BPF uprobe without a pid filter does.
    const int cpu = cpus->front();
    std::vector<PerfEvent> events(attached);
    if (!pass.Start()) return;
    double open_seconds = 0, close_seconds = 0;
    for (auto _ : pass) {
      auto start = std::chrono::steady_clock::now();
      for (size_t i = 0; i < events.size(); ++i) {
        absl::StatusOr<PerfEvent> opened = OpenUprobe(*pmu, locations[i], false, -1, cpu, false);
        if (!opened.ok()) {
          for (PerfEvent& event : events) event.Close();
          pass.SkipIfError(opened.status());
          return;
        }
        events[i] = *std::move(opened);
      }
      auto opened = std::chrono::steady_clock::now();
      for (PerfEvent& event : events) event.Close();
      auto closed = std::chrono::steady_clock::now();
      open_seconds += std::chrono::duration<double>(opened - start).count();
      close_seconds += std::chrono::duration<double>(closed - opened).count();
      pass.SetIterationTime(std::chrono::duration<double>(closed - start).count());
    }
    if (!pass.Stop()) return;
    const double probes = static_cast<double>(pass.iterations() * static_cast<int64_t>(attached));
    pass.SetOps(probes);
    for (ChildProcess& child : children) child.Kill();  // they die in parallel; ~ reaps
    if (!pass.timed() || probes <= 0) return;
    state.counters["usecs/probe"] = (open_seconds + close_seconds) * 1e6 / probes;
    // Apart, because closing may wait for grace periods that hide what the processes add.
    state.counters["open_usecs/probe"] = open_seconds * 1e6 / probes;
    state.counters["close_usecs/probe"] = close_seconds * 1e6 / probes;
    state.counters["processes"] = params.processes;
  });
}

// A hit is two traps (the breakpoint, then the single-step of the displaced
// instruction), taken as a pipe round trip's worth of kernel entries: a guess the
// planner only uses to size the run.
CostModel HitCost(const HitParams& params) {
  return [params](const UnitCosts& u) {
    const double per_call = params.probe == ProbeKind::kNone ? 2e-9 : u.round_trip;
    const double calls = static_cast<double>(params.calls) * params.threads;
    const double cpus = PlannedCpuCount();
    return Cost{params.threads * u.thread + u.event_fd,
                calls * per_call / std::min<double>(params.threads, cpus) + u.round_trip, 0};
  };
}

// One thread's hits (as HitCost), after opening one probe and before closing it (a grace
// period: the close's tracepoint teardown).
CostModel SiteCost(const SiteParams& params) {
  return [params](const UnitCosts& u) {
    return Cost{u.event_fd + u.tracepoint_teardown,
                static_cast<double>(params.calls) * u.round_trip, 0};
  };
}

// Opening a probe costs about an event's open and close, plus writing and removing the
// breakpoint in each mapping process (a guess, as above); closing it waits for a grace
// period (newer kernels synchronize SRCU and RCU tasks trace in uprobe_unregister).
CostModel AttachCost(const AttachParams& params) {
  return [params](const UnitCosts& u) {
    const double per_probe = u.event_fd * (2 + params.processes) + u.tracepoint_teardown;
    return Cost{params.processes * u.process, params.probes * per_probe, 0};
  };
}

absl::Status RegisterUprobeFamilies() {
  absl::StatusOr<Flags> f = flags.Resolve(FamilyFlagEnv());
  if (!f.ok()) return f.status();
  for (const Choice<ProbeKind>& probe : f->probes) {
    for (int64_t t : f->threads) {
      HitParams params{probe.value, static_cast<int>(t), f->calls};
      RegisterPlanned(absl::StrCat("BM_UprobeHit/probe:", probe.name, "/threads:", t),
                      TimeMode::kManual, HitCost(params), BM_UprobeHit, params)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  for (const Choice<const ProbeSite*>& site : f->sites) {
    SiteParams params{site.value, f->calls};
    RegisterPlanned(absl::StrCat("BM_UprobeSite/site:", site.name), TimeMode::kManual,
                    SiteCost(params), BM_UprobeSite, params)
        ->Unit(benchmark::kMicrosecond);
  }
  for (int64_t p : f->processes) {
    for (int64_t n : f->attach_probes) {
      AttachParams params{static_cast<int>(n), static_cast<int>(p)};
      RegisterPlanned(absl::StrCat("BM_UprobeAttach/probes:", n, "/processes:", p),
                      TimeMode::kManual, AttachCost(params), BM_UprobeAttach, params)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  return absl::OkStatus();
}

}  // namespace

PERFSCALE_FAMILY(uprobe, RegisterUprobeFamilies);

}  // namespace perfscale
