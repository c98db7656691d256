// Breakpoint families: what inherited hardware breakpoints cost a threaded program.
//
// Seed: ../shared/seeds/000 (perf bench breakpoint, Dmitry Vyukov, 2022). On a
// 112-thread machine, 4 inherited breakpoints made thread create+join 165x slower
// (a global breakpoint-slot mutex, 91% osq_lock), and toggling one breakpoint that 224
// blocked or 111 spinning threads inherited was 408-444x slower (IPIs, 79%
// smp_call_function_single).
//
// BM_BreakpointThread/breakpoints:B/parallelism:P/threads:T
//   Exactly `perf bench breakpoint thread`: B breakpoints (inherit, user-only, on bytes
//   never touched) are opened on the benchmark thread before timing. One iteration is
//   one perf-bench run: P workers are created, share a counter of --repeat batches, and
//   each batch creates T threads that wait on a futex, wakes and joins them; then the
//   workers are joined. Counters: usecs/op = time / (repeat * T) (one op = one thread
//   create+join, perf bench's figure), usecs/op/cpu = usecs/op * P, and
//   the kernel-cost counters of bench_support.h (ipis_sent/op, ..., ipis_system/op).
//
// BM_BreakpointEnable/passive:N/active:M/placement:X
//   Exactly `perf bench breakpoint enable`: one inherited breakpoint on a stack byte,
//   then N threads blocked on a futex and M threads spinning, 10 ms to settle, then one
//   iteration = PERF_EVENT_IOC_DISABLE + PERF_EVENT_IOC_ENABLE. usecs/op = time per
//   iteration. The kernel updates each inherited copy with a function call on the CPU
//   the copy's thread last ran on (task_function_call), blocked threads included, so
//   the cost depends on where the threads are. Placement: `unpinned` leaves them to the
//   scheduler like perf bench (the figure then swings with where they land); `same_cpu`
//   pins the toggling thread and all inheriting threads to one CPU (local calls);
//   `other_cpus` pins the toggler to one CPU and the threads to the others (an IPI for
//   every inherited copy).
//
// Both time in real time: the work lands on other CPUs. Privileges: per-task user
// breakpoints need the breakpoint PMU and a kernel that allows them at its paranoid level
// (<= 2 everywhere; mainline at any level): the open decides.
#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "benchmark/benchmark.h"
#include "benchmarks/breakpoint/breakpoint_slots.h"
#include "benchmarks/harness/bench_support.h"
#include "benchmarks/harness/family.h"
#include "benchmarks/harness/profile_support.h"
#include "benchmarks/harness/suite_plan.h"
#include "lib/background_threads.h"
#include "lib/capabilities.h"
#include "lib/cpu_set.h"
#include "lib/errno_status.h"
#include "lib/flags.h"
#include "lib/kernel_cost.h"
#include "lib/perf_attr.h"
#include "lib/perf_event.h"
#include "lib/placement.h"

namespace perfscale {
namespace {

Flag& breakpoints_flag =
    DefineFlag("breakpoints", "",
               "breakpoints held during thread churn (default: 0,1,2,4 up to the "
               "hardware's slots)");
Flag& parallelism_flag = DefineFlag(
    "parallelism", "", "workers creating threads concurrently (default: 1 and the online CPUs)");
Flag& threads_flag = DefineFlag("threads", "20", "threads each batch creates and joins");
Flag& repeat_flag = DefineFlag("repeat", "10",
                               "batches per iteration of the thread family, shared by the workers "
                               "(perf bench --repeat)");
Flag& passive_flag = DefineFlag(
    "passive", "", "blocked threads inheriting the toggled breakpoint (default: 0, CPUs, 4x CPUs)");
Flag& active_flag = DefineFlag(
    "active", "",
    "spinning threads inheriting the toggled breakpoint (default: 1..4, then powers of two "
    "and the CPU count)");
Flag& placement_flag =
    DefineFlag("placement", "unpinned,same_cpu,other_cpus",
               "where the inheriting threads run: unpinned (perf bench), same_cpu (as the toggling "
               "thread), other_cpus");

// One byte per possible breakpoint, never read or written, so breakpoints never fire.
volatile char never_touched[64];

struct ThreadParams {
  int breakpoints;
  int parallelism;
  int threads;
  int repeat;
};

struct EnableParams {
  int passive;
  int active;
  std::string placement;
};

// Opens `count` inheritable breakpoints on the calling thread.
absl::StatusOr<std::vector<PerfEvent>> OpenInheritedBreakpoints(int count) {
  std::vector<PerfEvent> events;
  for (int i = 0; i < count; ++i) {
    BreakpointSpec spec;
    spec.address = &never_touched[i];
    spec.inherit = true;
    absl::StatusOr<PerfEvent> event = PerfEvent::Open(BreakpointAttr(spec), 0, -1);
    if (!event.ok()) return event.status();
    events.push_back(*std::move(event));
  }
  return events;
}

// One perf-bench thread run: P workers draining a shared batch counter.
class ThreadChurn {
 public:
  explicit ThreadChurn(const ThreadParams& params) : params_(params) {}

  absl::Status Run() {
    batches_left_.store(params_.repeat, std::memory_order_relaxed);
    std::vector<pthread_t> workers;
    workers.reserve(static_cast<size_t>(params_.parallelism));
    for (int i = 0; i < params_.parallelism; ++i) {
      pthread_t worker;
      int err = pthread_create(&worker, nullptr, &ThreadChurn::Worker, this);
      if (err != 0) {
        RecordError(ErrnoStatus(err, "pthread_create (worker)"));
        break;
      }
      workers.push_back(worker);
    }
    for (pthread_t worker : workers) pthread_join(worker, nullptr);
    absl::MutexLock lock(&mu_);
    return error_;
  }

 private:
  static void* Worker(void* self) {
    auto* churn = static_cast<ThreadChurn*>(self);
    while (churn->batches_left_.fetch_sub(1, std::memory_order_relaxed) > 0) {
      absl::StatusOr<std::unique_ptr<BackgroundThreads>> batch =
          BackgroundThreads::Start(BackgroundThreads::kParked, churn->params_.threads);
      if (!batch.ok()) {
        churn->RecordError(batch.status());
        break;
      }
      (*batch)->Stop();  // wake and join: the end of one batch
    }
    return nullptr;
  }

  void RecordError(absl::Status status) {
    batches_left_.store(0, std::memory_order_relaxed);  // stop the other workers too
    absl::MutexLock lock(&mu_);
    if (error_.ok()) error_ = std::move(status);
  }

  const ThreadParams params_;
  std::atomic<int> batches_left_{0};
  absl::Mutex mu_;
  absl::Status error_;
};

// Each worker holds up to T batch threads at once, plus itself.
uint64_t ThreadsNeeded(const ThreadParams& params) {
  return static_cast<uint64_t>(params.parallelism) * (static_cast<uint64_t>(params.threads) + 1);
}

void BM_BreakpointThread(benchmark::State& state, ThreadParams params) {
  Capabilities caps = ProbeCapabilities();
  if (SkipIfError(state, caps.RequireBreakpointPmu())) return;
  if (SkipIfError(state, caps.RequireThreads(ThreadsNeeded(params)))) return;
  absl::StatusOr<std::vector<PerfEvent>> held = OpenInheritedBreakpoints(params.breakpoints);
  if (SkipIfError(state, held.status())) return;

  ThreadChurn churn(params);
  // Off unless --attribution=true: every churned thread would inherit the ~8 + 2 x CPUs
  // counters, and copying them made thread create+join 2.5x slower here (README).
  KernelCostMeter meter = BenchmarkMeter(/*include_children=*/false,
                                         /*attribute_by_default=*/false);
  if (!StartOrSkip(state, meter)) return;
  auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    if (SkipIfError(state, churn.Run())) return;
  }
  double elapsed_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  double ops = static_cast<double>(state.iterations()) * params.repeat * params.threads;
  state.counters["usecs/op"] = elapsed_us / ops;
  state.counters["usecs/op/cpu"] = elapsed_us / ops * params.parallelism;
  ReportKernelCost(state, meter, ops);
}

void BM_BreakpointEnable(benchmark::State& state, EnableParams params) {
  Capabilities caps = ProbeCapabilities();
  if (SkipIfError(state, caps.RequireBreakpointPmu())) return;
  if (SkipIfError(state, caps.RequireThreads(static_cast<uint64_t>(params.passive) +
                                             static_cast<uint64_t>(params.active)))) {
    return;
  }
  absl::StatusOr<Placement> placement = ResolvePlacement(params.placement);
  if (SkipIfError(state, placement.status())) return;
  // Restores the thread's affinity on every return path.
  absl::StatusOr<std::unique_ptr<ScopedAffinity>> pinned = PinDriver(*placement);
  if (SkipIfError(state, pinned.status())) return;

  // A stack byte, as perf bench watches: never touched while the threads exist.
  volatile char watched = 0;
  BreakpointSpec spec;
  spec.address = &watched;
  spec.inherit = true;
  absl::StatusOr<PerfEvent> breakpoint = PerfEvent::Open(BreakpointAttr(spec), 0, -1);
  if (SkipIfError(state, breakpoint.status())) return;

  // Before the threads, so that they inherit the attribution counters too.
  KernelCostMeter meter = BenchmarkMeter();
  // Created after the breakpoint so that they inherit it.
  absl::StatusOr<std::unique_ptr<BackgroundThreads>> passive =
      BackgroundThreads::Start(BackgroundThreads::kParked, params.passive, placement->others);
  if (SkipIfError(state, passive.status())) return;
  absl::StatusOr<std::unique_ptr<BackgroundThreads>> active =
      BackgroundThreads::Start(BackgroundThreads::kSpinning, params.active, placement->others);
  if (SkipIfError(state, active.status())) return;
  std::this_thread::sleep_for(std::chrono::milliseconds(10));

  if (!StartOrSkip(state, meter)) return;
  auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    absl::Status disabled = breakpoint->Disable();
    absl::Status enabled = breakpoint->Enable();
    if (SkipIfError(state, disabled.ok() ? enabled : disabled)) return;
  }
  double elapsed_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  double ops = static_cast<double>(state.iterations());
  state.counters["usecs/op"] = elapsed_us / ops;
  ReportKernelCost(state, meter, ops);
}

// Values of a list flag, or `fallback` when the flag was not given.
absl::StatusOr<std::vector<int64_t>> ListFlag(const Flag& flag, int64_t min, int64_t max,
                                              std::vector<int64_t> fallback) {
  if (flag.value().empty()) return fallback;
  absl::StatusOr<std::vector<int64_t>> values = ParseIntList(flag.value(), min, max);
  if (!values.ok()) return flag.Annotate(values.status());
  return values;
}

// The most breakpoints a run may ask for: the hardware's slots when they can be probed;
// otherwise (no PMU, no permission) the benchmarks will skip with the reason at run time.
int MaxBreakpoints() {
  absl::StatusOr<int> slots = ProbeBreakpointSlots();
  return slots.ok() ? *slots : 64;
}

absl::Status RegisterThreadFamily(int cpus, const Capabilities& caps) {
  int slots = MaxBreakpoints();
  std::vector<int64_t> default_breakpoints;
  for (int64_t b : QuickRun() ? std::vector<int64_t>{0, 4} : std::vector<int64_t>{0, 1, 2, 4}) {
    if (b <= slots) default_breakpoints.push_back(b);
  }
  absl::StatusOr<std::vector<int64_t>> breakpoints =
      ListFlag(breakpoints_flag, 0, 64, default_breakpoints);
  if (!breakpoints.ok()) return breakpoints.status();
  for (int64_t b : *breakpoints) {
    if (b > slots) {
      return absl::InvalidArgumentError(
          absl::StrCat("--breakpoints: ", b, " breakpoints asked for, but this machine has ", slots,
                       " hardware breakpoint slots"));
    }
  }
  std::vector<int64_t> default_parallelism = {cpus};
  if (cpus > 1 && !QuickRun()) default_parallelism.insert(default_parallelism.begin(), 1);
  absl::StatusOr<std::vector<int64_t>> parallelism =
      ListFlag(parallelism_flag, 1, 4096, default_parallelism);
  if (!parallelism.ok()) return parallelism.status();
  absl::StatusOr<int64_t> threads = ParseInt(threads_flag.value(), 1, 100000);
  if (!threads.ok()) return threads_flag.Annotate(threads.status());
  absl::StatusOr<int64_t> repeat = ParseInt(repeat_flag.value(), 1, 1000000);
  if (!repeat.ok()) return repeat_flag.Annotate(repeat.status());

  // Values a user asked for that cannot fit are a usage error; defaults that do not fit
  // this environment skip at run time with the same reason.
  for (int64_t p : *parallelism) {
    ThreadParams params{0, static_cast<int>(p), static_cast<int>(*threads), 1};
    absl::Status fits = caps.RequireThreads(ThreadsNeeded(params));
    if (!fits.ok() && (parallelism_flag.is_set() || threads_flag.is_set())) {
      return absl::InvalidArgumentError(
          absl::StrCat("--parallelism=", p, " --threads=", *threads, ": ", fits.message()));
    }
  }
  for (int64_t b : *breakpoints) {
    for (int64_t p : *parallelism) {
      ThreadParams params{static_cast<int>(b), static_cast<int>(p), static_cast<int>(*threads),
                          static_cast<int>(*repeat)};
      std::string name = absl::StrCat("BM_BreakpointThread/breakpoints:", b, "/parallelism:", p,
                                      "/threads:", *threads);
      // One iteration creates and joins repeat x threads threads, plus the workers.
      const double threads_per_iteration = static_cast<double>(*repeat * *threads + p);
      RegisterPlanned(
          name, TimeMode::kReal,
          [threads_per_iteration](const UnitCosts& u) {
            return Cost{0, threads_per_iteration * u.thread, 0};
          },
          BM_BreakpointThread, params)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  return absl::OkStatus();
}

absl::Status RegisterEnableFamily(int cpus, const Capabilities& caps) {
  absl::StatusOr<std::vector<int64_t>> passive = ListFlag(
      passive_flag, 0, 1000000,
      QuickRun() ? std::vector<int64_t>{0, 4 * cpus} : std::vector<int64_t>{0, cpus, 4 * cpus});
  if (!passive.ok()) return passive.status();
  // Every count on small machines; powers of two and the CPU count on big ones, so a
  // 256-CPU machine gets 10 shapes rather than 256.
  std::vector<int64_t> default_active;
  for (int64_t a = 1; a <= (QuickRun() ? 1 : cpus); a = a < 4 ? a + 1 : 2 * a) {
    default_active.push_back(a);
  }
  if (default_active.back() != (QuickRun() ? 1 : cpus)) default_active.push_back(cpus);
  absl::StatusOr<std::vector<int64_t>> active = ListFlag(active_flag, 0, 4096, default_active);
  if (!active.ok()) return active.status();
  absl::StatusOr<std::vector<std::string>> placements =
      ParseChoiceList(placement_flag.value(), PlacementNames());
  if (!placements.ok()) return placement_flag.Annotate(placements.status());

  // Like the seed, vary one kind of thread at a time unless both counts were given.
  std::vector<std::pair<int64_t, int64_t>> shapes;
  if (passive_flag.is_set() && active_flag.is_set()) {
    for (int64_t p : *passive) {
      for (int64_t a : *active) shapes.emplace_back(p, a);
    }
  } else {
    if (!active_flag.is_set() || passive_flag.is_set()) {
      for (int64_t p : *passive) shapes.emplace_back(p, 0);
    }
    if (!passive_flag.is_set()) {
      for (int64_t a : *active) {
        if (a > 0 || active_flag.is_set()) shapes.emplace_back(0, a);
      }
    }
  }
  for (const auto& [p, a] : shapes) {
    absl::Status fits = caps.RequireThreads(static_cast<uint64_t>(p + a));
    if (!fits.ok() && (passive_flag.is_set() || active_flag.is_set())) {
      return absl::InvalidArgumentError(
          absl::StrCat("--passive=", p, " --active=", a, ": ", fits.message()));
    }
    for (const std::string& placement : *placements) {
      // Placement only moves inheriting threads; with none, every placement is one run.
      bool alone = p == 0 && a == 0;
      if (alone && placement != placements->front()) continue;
      EnableParams params{static_cast<int>(p), static_cast<int>(a), alone ? "unpinned" : placement};
      std::string name = absl::StrCat("BM_BreakpointEnable/passive:", p, "/active:", a,
                                      "/placement:", params.placement);
      // Setup starts the threads and lets them settle (10 ms); a toggle updates every
      // inherited copy, at worst with a function call on another CPU each.
      const double threads = static_cast<double>(p + a);
      RegisterPlanned(
          name, TimeMode::kReal,
          [threads](const UnitCosts& u) {
            return Cost{threads * u.thread + 0.01, 2 * (threads + 1) * u.remote_op, 0};
          },
          BM_BreakpointEnable, params)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  return absl::OkStatus();
}

absl::Status RegisterBreakpointFamilies() {
  int cpus = PlannedCpuCount();
  Capabilities caps = ProbeCapabilities();
  if (absl::Status status = RegisterThreadFamily(cpus, caps); !status.ok()) return status;
  return RegisterEnableFamily(cpus, caps);
}

}  // namespace

PERFSCALE_FAMILY(breakpoint, RegisterBreakpointFamilies);

}  // namespace perfscale
