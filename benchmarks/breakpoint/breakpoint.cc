// Breakpoint families: what inherited hardware breakpoints cost a threaded program.
//
// Seed: the thread "[PATCH] tools/perf: add breakpoint benchmarks" (Dmitry Vyukov, 5 May
// 2022; replies to 11 May 2022). On a 112-thread machine, 4 inherited breakpoints made
// thread create+join 165x slower (a global breakpoint-slot mutex, 91% osq_lock), and
// toggling one breakpoint that 224 blocked or 111 spinning threads inherited was 408-444x
// slower (IPIs, 79% smp_call_function_single).
//
// BM_BreakpointThread is `perf bench breakpoint thread`: B breakpoints (inherit,
// user-only, on bytes never touched) are opened on the benchmark thread before timing;
// one iteration is one perf-bench run: P workers share a counter of batches, and each
// batch creates T threads that wait on a futex, wakes and joins them. usecs/op is perf
// bench's figure (time per thread create+join), usecs/op/cpu that times P.
//
// BM_BreakpointEnable is `perf bench breakpoint enable`: one inherited breakpoint on a
// stack byte, N blocked and M spinning threads, 10 ms to settle, then one iteration =
// PERF_EVENT_IOC_DISABLE + PERF_EVENT_IOC_ENABLE. The kernel updates each inherited copy
// with a function call on the CPU the copy's thread last ran on (task_function_call),
// blocked threads included, so the cost depends on where the threads are: the placement
// makes that a parameter (unpinned like perf bench, same_cpu: local calls, other_cpus:
// an IPI for every inherited copy), and each row says where they were
// (copies_on_other_cpus). Each call runs on a new thread, as each perf bench run is a new
// process: unpinned, where the threads land depends on it (RunOnNewThread).
//
// The parameters, their ranges and defaults: the table below, printed by --help.
// Both time in real time: the work lands on other CPUs. Privileges: per-task user
// breakpoints need the breakpoint PMU and a kernel that allows them at its paranoid level
// (<= 2 everywhere; mainline at any level): the open decides.
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "benchmark/benchmark.h"
#include "benchmarks/breakpoint/breakpoint_slots.h"
#include "benchmarks/harness/bench_support.h"
#include "benchmarks/harness/family.h"
#include "benchmarks/harness/flags.h"
#include "benchmarks/harness/profile_support.h"
#include "benchmarks/harness/suite_plan.h"
#include "lib/background_threads.h"
#include "lib/capabilities.h"
#include "lib/cpu_set.h"
#include "lib/errno_status.h"
#include "lib/kernel_cost.h"
#include "lib/perf_attr.h"
#include "lib/perf_event.h"
#include "lib/placement.h"
#include "lib/task_stat.h"

namespace perfscale {
namespace {

// The most breakpoints a run may ask for: the hardware's slots when they can be probed,
// free or not (a row whose slots another process holds is kept, and says so when it
// runs); otherwise (no PMU, no permission) the benchmarks skip with the reason at run time.
int MaxBreakpoints() {
  absl::StatusOr<BreakpointSlots> slots = ProbeBreakpointSlots();
  return slots.ok() ? slots->hardware : 64;
}

// `counts` without those above the hardware's slots.
std::string UpToSlots(std::vector<int64_t> counts) {
  const int slots = MaxBreakpoints();
  counts.erase(
      std::remove_if(counts.begin(), counts.end(), [slots](int64_t b) { return b > slots; }),
      counts.end());
  return absl::StrJoin(counts, ",");
}

// 1..4, then powers of two and the CPU count: every count on small machines, and 10
// shapes rather than 256 on a 256-CPU machine.
std::string OneToCpus(const FlagEnv& env) {
  std::vector<int64_t> active;
  for (int64_t a = 1; a <= env.cpus; a = a < 4 ? a + 1 : 2 * a) active.push_back(a);
  if (active.back() != env.cpus) active.push_back(env.cpus);
  return absl::StrJoin(active, ",");
}

// Threads per batch of the thread-churn rows that hold thousands of live inherited
// breakpoints: with parallelism CPUs, kChurnLiveThreads threads alive at once (x4
// breakpoints: 8192), and at least kChurnMinThreads so the one-worker row holds 1000.
// Before Linux 6.1 every inherited breakpoint's slot reservation walked all task-bound
// breakpoints for every CPU under one mutex (the seed: 165x slower at 112 CPUs); a 5.10
// guest of 4 vCPUs took 24x as long per thread with 4 breakpoints at 4 x 1000 threads,
// 6.12 1.45x (docs/measurements/2026-12-04-breakpoint-ab.md). At 20 threads the
// difference drowns in thread creation.
constexpr int64_t kChurnLiveThreads = 2048;
constexpr int64_t kChurnMinThreads = 250;

std::string ChurnThreads(const FlagEnv& env) {
  const int64_t cpus = std::max<int64_t>(1, env.cpus);
  return absl::StrCat("20,", std::max(kChurnMinThreads, (kChurnLiveThreads + cpus - 1) / cpus));
}

struct Flags {
  std::vector<int64_t> breakpoints;
  std::vector<int64_t> parallelism;
  std::vector<int64_t> threads;
  int repeat = 0;
  std::vector<int64_t> passive;
  std::vector<int64_t> active;
  std::vector<Choice<std::string>> placements;
};

const FlagList<Flags> flags(
    "breakpoint",
    {
        IntListFlag(&Flags::breakpoints, "breakpoint_breakpoints", 0, 64,
                    "breakpoints held during thread churn (BM_BreakpointThread); more than the "
                    "hardware's slots is an error")
            .Default("0,1,2,4 up to the hardware's slots",
                     [](const FlagEnv&) {
                       return UpToSlots({0, 1, 2, 4});
                     })
            .Quick("0,4 up to the hardware's slots",
                   [](const FlagEnv&) {
                     return UpToSlots({0, 4});
                   }),
        IntListFlag(&Flags::parallelism, "breakpoint_parallelism", 1, 4096,
                    "workers creating threads concurrently (BM_BreakpointThread)")
            .Default("1,CPUs", [](const FlagEnv& env) { return absl::StrCat("1,", env.cpus); })
            .Quick("CPUs", [](const FlagEnv& env) { return absl::StrCat(env.cpus); }),
        IntListFlag(&Flags::threads, "breakpoint_threads", 1, 100000,
                    "threads each batch creates and joins (BM_BreakpointThread)")
            .Default("20, and 2048/CPUs (at least 250): thousands of live inherited "
                     "breakpoints, where kernels before 6.1 slow down",
                     ChurnThreads)
            .Quick("20"),
        IntFlag(&Flags::repeat, "breakpoint_repeat", 1, 1000000,
                "batches per iteration of BM_BreakpointThread, shared by the workers (perf bench "
                "--repeat)")
            .Default("10"),
        IntListFlag(&Flags::passive, "breakpoint_passive", 0, 1000000,
                    "blocked threads inheriting the toggled breakpoint (BM_BreakpointEnable)")
            .Default("0,CPUs,4xCPUs",
                     [](const FlagEnv& env) {
                       return absl::StrCat("0,", env.cpus, ",", 4 * env.cpus);
                     })
            .Quick("0,4xCPUs", [](const FlagEnv& env) { return absl::StrCat("0,", 4 * env.cpus); }),
        IntListFlag(&Flags::active, "breakpoint_active", 0, 4096,
                    "spinning threads inheriting the toggled breakpoint (BM_BreakpointEnable)")
            .Default("1..4, then powers of two, and CPUs", OneToCpus)
            .Quick("1"),
        ChoiceListFlag(&Flags::placements, "breakpoint_placement", ChoicesOf(PlacementNames()),
                       "where the inheriting threads run: unpinned (perf bench), same_cpu (with "
                       "the toggling thread), other_cpus (the toggler alone on its CPU)")
            .Default("unpinned,same_cpu,other_cpus"),
    });

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
  // The counting pass runs one iteration: every churned thread inherits the ~8 + 2 x CPUs
  // counters, which made thread create+join 2.5x slower here when they were timed.
  PassOptions options;
  options.count_iterations = 1;
  RunPasses(state, options, [&](BenchmarkPass& pass) {
    absl::StatusOr<std::vector<PerfEvent>> held = OpenInheritedBreakpoints(params.breakpoints);
    if (!held.ok() && StatusErrno(held.status()) == ENOSPC) {
      // Say whose slots they are: the kernel's ENOSPC alone reads as a machine too small.
      absl::StatusOr<BreakpointSlots> slots = ProbeBreakpointSlots();
      if (slots.ok()) {
        held = absl::ResourceExhaustedError(
            absl::StrCat(params.breakpoints, " breakpoints needed, but ", slots->Describe()));
      }
    }
    if (pass.SkipIfError(held.status())) return;
    ThreadChurn churn(params);
    pass.OpenCounters();  // the churned threads are created in the loop, and inherit them
    if (!pass.Start()) return;
    auto start = std::chrono::steady_clock::now();
    for (auto _ : pass) {
      if (pass.SkipIfError(churn.Run())) return;
    }
    double elapsed_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (!pass.Stop()) return;
    double ops = static_cast<double>(pass.iterations()) * params.repeat * params.threads;
    pass.SetOps(ops);
    if (pass.timed()) {
      state.counters["usecs/op"] = elapsed_us / ops;
      state.counters["usecs/op/cpu"] = elapsed_us / ops * params.parallelism;
    }
  });
}

// How many of the threads that inherited the breakpoint last ran on another CPU than the
// calling thread's: each costs a toggle a cross-CPU call (an IPI) where one on this CPU is
// a local call, so this decides the figure. Unpinned, the scheduler chose it when it
// created each thread: an idle CPU if there was one, else the creator's, unless the
// creator's CPU counted as fully busy from its recent past (families.md#breakpoint).
absl::StatusOr<int> CopiesOnOtherCpus(const std::vector<const BackgroundThreads*>& groups) {
  std::vector<pid_t> tids;
  for (const BackgroundThreads* group : groups) {
    absl::StatusOr<std::vector<pid_t>> some = group->Tids(absl::Seconds(10));
    if (!some.ok()) return some.status();
    tids.insert(tids.end(), some->begin(), some->end());
  }
  int cpu = sched_getcpu();
  if (cpu < 0) return ErrnoStatus(errno, "sched_getcpu");
  return ThreadsLastOnOtherCpus(tids, cpu);
}

// One call's run, perf bench's from its open to its last toggle, on the calling thread.
void ToggleRun(benchmark::State& state, const EnableParams& params, const Placement& placement,
               BenchmarkPass& pass) {
  // Restores the thread's affinity on every return path.
  absl::StatusOr<std::unique_ptr<ScopedAffinity>> pinned = PinDriver(placement);
  if (pass.SkipIfError(pinned.status())) return;

  // A stack byte, as perf bench watches: never touched while the threads exist.
  volatile char watched = 0;
  BreakpointSpec spec;
  spec.address = &watched;
  spec.inherit = true;
  absl::StatusOr<PerfEvent> breakpoint = PerfEvent::Open(BreakpointAttr(spec), 0, -1);
  if (pass.SkipIfError(breakpoint.status())) return;

  // Before the threads, so that they inherit the attribution counters too.
  pass.OpenCounters();
  // Created after the breakpoint so that they inherit it.
  absl::StatusOr<std::unique_ptr<BackgroundThreads>> passive =
      BackgroundThreads::Start(BackgroundThreads::kParked, params.passive, placement.others);
  if (pass.SkipIfError(passive.status())) return;
  absl::StatusOr<std::unique_ptr<BackgroundThreads>> active =
      BackgroundThreads::Start(BackgroundThreads::kSpinning, params.active, placement.others);
  if (pass.SkipIfError(active.status())) return;
  // Threads settle (park, or start spinning); a row without any has nothing to wait for.
  if (params.passive + params.active > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  absl::StatusOr<int> elsewhere = CopiesOnOtherCpus({passive->get(), active->get()});
  if (pass.SkipIfError(elsewhere.status())) return;

  if (!pass.Start()) return;
  auto start = std::chrono::steady_clock::now();
  for (auto _ : pass) {
    absl::Status disabled = breakpoint->Disable();
    absl::Status enabled = breakpoint->Enable();
    if (pass.SkipIfError(disabled.ok() ? enabled : disabled)) return;
  }
  double elapsed_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  if (!pass.Stop()) return;
  double ops = static_cast<double>(pass.iterations());
  pass.SetOps(ops);
  if (pass.timed()) state.counters["usecs/op"] = elapsed_us / ops;
  // The counting pass's threads inherit its counters, which slows their creation, and
  // the scheduler may place them otherwise: its xcalls/op follow its own placement.
  pass.SetFigure("copies_on_other_cpus", *elsewhere);
}

// Runs `run` on a new thread and waits for it. Where the kernel puts a new thread depends
// on its creator's CPU's load, and that counts the creator's own estimated utilization
// (util_est, kept from its past runs, not lowered by sleeping): after Google Benchmark's
// earlier calls of a row had the benchmark thread toggle for up to a second, its CPU
// looked fully busy and every thread it created went to another CPU: 4 of 4 passive
// threads on the other vCPU in 102 of 120 calls, against 2 or 3 of 4 for perf bench,
// which creates them from a fresh process, and 1.34x perf bench's figure
// (docs/measurements/2026-12-07-enable-placement.md). A new thread is as fresh.
absl::Status RunOnNewThread(std::function<void()> run) {
  pthread_t thread;
  void* (*trampoline)(void*) = [](void* arg) -> void* {
    (*static_cast<std::function<void()>*>(arg))();
    return nullptr;
  };
  int err = pthread_create(&thread, nullptr, trampoline, &run);
  if (err != 0) return ErrnoStatus(err, "pthread_create (the toggling thread)");
  pthread_join(thread, nullptr);
  return absl::OkStatus();
}

void BM_BreakpointEnable(benchmark::State& state, EnableParams params) {
  Capabilities caps = ProbeCapabilities();
  if (SkipIfError(state, caps.RequireBreakpointPmu())) return;
  // The inheriting threads and the one that toggles.
  if (SkipIfError(state, caps.RequireThreads(static_cast<uint64_t>(params.passive) +
                                             static_cast<uint64_t>(params.active) + 1))) {
    return;
  }
  absl::StatusOr<Placement> placement = ResolvePlacement(params.placement);
  if (SkipIfError(state, placement.status())) return;
  PassOptions options;
  options.count_iterations = 200;
  RunPasses(state, options, [&](BenchmarkPass& pass) {
    // The benchmark thread waits in the join: the pass and the state are the new
    // thread's alone until it ends.
    pass.SkipIfError(RunOnNewThread([&] { ToggleRun(state, params, *placement, pass); }));
  });
}

absl::Status RegisterThreadFamily(const Flags& f, const Capabilities& caps) {
  absl::StatusOr<BreakpointSlots> slots = ProbeBreakpointSlots();
  for (int64_t b : f.breakpoints) {
    if (!slots.ok()) break;  // the benchmarks skip with the probe's reason
    if (b > slots->hardware) {
      return flags.Reject(&Flags::breakpoints, absl::StrJoin(f.breakpoints, ","),
                          absl::StrCat(b, " breakpoints asked for, but the hardware has ",
                                       slots->hardware, " breakpoint slots"));
    }
    if (b > slots->free && flags.Given(&Flags::breakpoints)) {
      return flags.Reject(&Flags::breakpoints, absl::StrJoin(f.breakpoints, ","),
                          absl::StrCat(b, " breakpoints asked for, but ", slots->Describe(),
                                       "; free them or ask for at most ", slots->free));
    }
  }
  // Values a user asked for that cannot fit are a usage error; defaults that do not fit
  // this environment skip at run time with the same reason.
  for (int64_t p : f.parallelism) {
    for (int64_t t : f.threads) {
      absl::Status fits = caps.RequireThreads(
          ThreadsNeeded(ThreadParams{0, static_cast<int>(p), static_cast<int>(t), 1}));
      if (!fits.ok() && (flags.Given(&Flags::parallelism) || flags.Given(&Flags::threads))) {
        return absl::InvalidArgumentError(absl::StrCat(flags.Name(&Flags::parallelism), "=", p, " ",
                                                       flags.Name(&Flags::threads), "=", t, ": ",
                                                       fits.message()));
      }
    }
  }
  for (int64_t t : f.threads) {
    for (int64_t b : f.breakpoints) {
      for (int64_t p : f.parallelism) {
        ThreadParams params{static_cast<int>(b), static_cast<int>(p), static_cast<int>(t),
                            f.repeat};
        std::string name =
            absl::StrCat("BM_BreakpointThread/breakpoints:", b, "/parallelism:", p, "/threads:", t);
        // One iteration creates and joins repeat x threads threads, plus the workers.
        const double threads_per_iteration = static_cast<double>(f.repeat) * t + p;
        RegisterPlanned(
            name, TimeMode::kReal,
            [threads_per_iteration](const UnitCosts& u) {
              return Cost{0, threads_per_iteration * u.thread, 0};
            },
            BM_BreakpointThread, params)
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
  return absl::OkStatus();
}

absl::Status RegisterEnableFamily(const Flags& f, const Capabilities& caps) {
  const bool passive_given = flags.Given(&Flags::passive);
  const bool active_given = flags.Given(&Flags::active);
  // Like the seed, vary one kind of thread at a time unless both counts were given.
  std::vector<std::pair<int64_t, int64_t>> shapes;
  if (passive_given && active_given) {
    for (int64_t p : f.passive) {
      for (int64_t a : f.active) shapes.emplace_back(p, a);
    }
  } else {
    if (!active_given || passive_given) {
      for (int64_t p : f.passive) shapes.emplace_back(p, 0);
    }
    if (!passive_given) {
      for (int64_t a : f.active) {
        if (a > 0 || active_given) shapes.emplace_back(0, a);
      }
    }
  }
  for (const auto& [p, a] : shapes) {
    absl::Status fits = caps.RequireThreads(static_cast<uint64_t>(p + a));
    if (!fits.ok() && (passive_given || active_given)) {
      return absl::InvalidArgumentError(absl::StrCat(flags.Name(&Flags::passive), "=", p, " ",
                                                     flags.Name(&Flags::active), "=", a, ": ",
                                                     fits.message()));
    }
    for (const Choice<std::string>& placement : f.placements) {
      // Placement only moves inheriting threads; with none, every placement is one run.
      bool alone = p == 0 && a == 0;
      if (alone && placement.name != f.placements.front().name) continue;
      EnableParams params{static_cast<int>(p), static_cast<int>(a),
                          alone ? "unpinned" : placement.value};
      std::string name = absl::StrCat("BM_BreakpointEnable/passive:", p, "/active:", a,
                                      "/placement:", params.placement);
      // Setup starts the threads and lets them settle (10 ms); a toggle updates every
      // inherited copy, at worst with a function call on another CPU each.
      const double threads = static_cast<double>(p + a);
      RegisterPlanned(
          name, TimeMode::kReal,
          [threads](const UnitCosts& u) {
            const double settle = threads > 0 ? 0.01 : 0;
            // The threads and the toggling thread (RunOnNewThread).
            return Cost{(threads + 1) * u.thread + settle, 2 * (threads + 1) * u.remote_op, 0};
          },
          BM_BreakpointEnable, params)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  return absl::OkStatus();
}

absl::Status RegisterBreakpointFamilies() {
  absl::StatusOr<Flags> f = flags.Resolve(FamilyFlagEnv());
  if (!f.ok()) return f.status();
  Capabilities caps = ProbeCapabilities();
  if (absl::Status status = RegisterThreadFamily(*f, caps); !status.ok()) return status;
  return RegisterEnableFamily(*f, caps);
}

}  // namespace

PERFSCALE_FAMILY(breakpoint, RegisterBreakpointFamilies);

}  // namespace perfscale
