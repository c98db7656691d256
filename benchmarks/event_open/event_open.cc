// Event-open families: what opening many per-CPU perf events costs, and what the order
// of the opens changes.
//
// Seed: Andi Kleen's v8 patch kit for perf stat with many events and CPUs (cover letter
// and "perf stat: Use affinity for opening events", 20 Nov 2019; review to 27 Nov 2019).
// `perf stat` with >700 events on 94 CPUs spent 8.0 s in system time, mostly IPIs: every
// perf_event_open (and enable, read, disable, close) of an event bound to another CPU
// interrupts that CPU. Moving the opener onto each CPU in turn and doing all of that
// CPU's events there cut it to 1.7 s; the thread names parallel per-CPU setup and fewer
// redundant /sys reads as the next steps.
//
// BM_EventOpen opens E events of one kind (a software event, or a tracepoint) system-wide
// on each of C CPUs, E x C fds, in one of three orders: event_major (for each event, for
// each CPU: an IPI per remote operation), cpu_major (move to each CPU with scoped
// affinity, then all its events) or parallel (one pinned worker per CPU, created before
// timing and reused, as a tool would keep a pool). It times opening disabled events (perf
// stat: kernels since ~5.x install them without an IPI), opening enabled ones (perf
// record; what the seed's kernel paid for every open), or perf stat's whole lifecycle
// (open, enable, read, disable, close, each phase in the strategy's order). Weak groups
// fall back to independent events where the kernel refuses them ('{...}:W'). A load of
// pinned spinning threads during the opens is the loaded machine on which perf stat
// --no-affinity (2026) says sched_setaffinity "may introduce a delay": cpu_major then
// waits for the scheduler on every CPU it moves to, event_major's IPIs interrupt the
// hogs, parallel's workers share each CPU with one. Counters per fd: usecs, the
// kernel-cost counters (bench_support.h; timed phases only), share:<phase> for the
// lifecycle. Where affinity is refused (cpuset, isolated CPU), the run goes on and the
// label says on which CPUs; the thread's original mask is always restored.
//
// BM_PmuResolve resolves event names the way perf's parser does, through
// /sys/bus/event_source/devices/<pmu>/{type,format/,events/}: loading the PMU afresh for
// every event (per_event) or once per PMU (per_pmu); one iteration is a tool's start-up.
// Counters: usecs/event, sysfs_ops/event (files read plus directories listed), pmu_loads.
//
// The parameters, their ranges and defaults: the table below, printed by --help.
// Privileges: per-CPU events need root, CAP_PERFMON or perf_event_paranoid <= 0;
// tracepoints also need tracefs. E x C fds must fit the fd limit: the soft limit is
// raised to the hard limit as needed, beyond that the benchmark skips with the numbers.
// BM_PmuResolve needs only read access to sysfs.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "benchmark/benchmark.h"
#include "benchmarks/event_open/cpu_workers.h"
#include "benchmarks/event_open/event_grid.h"
#include "benchmarks/event_open/pmu_sysfs.h"
#include "benchmarks/harness/bench_support.h"
#include "benchmarks/harness/family.h"
#include "benchmarks/harness/flags.h"
#include "benchmarks/harness/profile_support.h"
#include "benchmarks/harness/suite_plan.h"
#include "lib/background_threads.h"
#include "lib/capabilities.h"
#include "lib/cpu_set.h"
#include "lib/kernel_cost.h"
#include "lib/perf_attr.h"
#include "lib/tracefs.h"

namespace perfscale {
namespace {

enum Phase { kOpen, kEnable, kRead, kDisable, kClose, kNumPhases };
constexpr const char* kPhaseNames[kNumPhases] = {"open", "enable", "read", "disable", "close"};

// What one iteration times.
enum class PhasePlan {
  kOpen,         // perf_event_open of disabled events, as perf stat opens its counters
  kOpenEnabled,  // perf_event_open of enabled events, as perf record opens its events
  kLifecycle,    // open (disabled), enable, read, disable, close
};

// --event_open_load's `all`: one spinning thread per CPU of the run.
constexpr int64_t kLoadAll = -1;

absl::StatusOr<std::vector<std::string>> ParseEventKinds(absl::string_view text) {
  std::vector<std::string> kinds;
  for (absl::string_view kind : absl::StrSplit(text, ',')) {
    if (kind.empty()) return absl::InvalidArgumentError("empty item");
    if (absl::StrContains(kind, ':')) {
      absl::StatusOr<TracepointName> name = ParseTracepointName(kind);
      if (!name.ok()) return name.status();
    } else {
      absl::StatusOr<uint64_t> config = ParseSoftwareEventName(kind);
      if (!config.ok()) return config.status();
    }
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.emplace_back(kind);
  }
  return kinds;
}

// The CPUs given, each online; empty (the default) for every online CPU.
absl::StatusOr<std::vector<int>> ParseOnlineCpus(absl::string_view text) {
  if (text.empty()) return std::vector<int>{};
  absl::StatusOr<std::vector<int>> cpus = ParseCpuList(text);
  if (!cpus.ok()) return cpus.status();
  if (cpus->empty()) return absl::InvalidArgumentError("empty CPU list");
  absl::StatusOr<std::vector<int>> online = OnlineCpus();
  if (!online.ok()) return online.status();
  for (int cpu : *cpus) {
    if (!std::binary_search(online->begin(), online->end(), cpu)) {
      return absl::InvalidArgumentError(
          absl::StrCat("CPU ", cpu, " is not online (online: ", FormatCpuList(*online), ")"));
    }
  }
  return cpus;
}

// Names for BM_PmuResolve; empty (the default) for every alias sysfs lists.
absl::StatusOr<std::vector<std::string>> ParsePmuEvents(absl::string_view text) {
  if (text.empty()) return std::vector<std::string>{};
  absl::StatusOr<std::vector<std::string>> listed = SplitEventList(text);
  if (!listed.ok()) return listed.status();
  for (const std::string& name : *listed) {
    absl::StatusOr<PmuEventName> parsed = ParsePmuEventName(name);
    if (!parsed.ok()) return parsed.status();
  }
  return listed;
}

struct Flags {
  std::vector<int64_t> events;
  std::vector<Choice<GridOrder>> strategies;
  std::vector<int> cpus;
  std::vector<std::string> kinds;
  std::vector<Choice<PhasePlan>> phases;
  std::vector<int64_t> group_sizes;
  std::vector<int64_t> loads;
  std::vector<std::string> pmu_events;
  std::vector<Choice<PmuCaching>> lookups;
};

const FlagList<Flags> flags(
    "event_open",
    {
        IntListFlag(&Flags::events, "event_open_events", 1, 100000,
                    "events opened on every CPU (and names resolved by BM_PmuResolve)")
            .Default("1,100,700")
            .Quick("100"),
        ChoiceListFlag(&Flags::strategies, "event_open_strategy",
                       ChoicesOf({GridOrder::kEventMajor, GridOrder::kCpuMajor,
                                  GridOrder::kParallel},
                                 GridOrderName),
                       "order of the per-CPU event operations: event_major (for each event, "
                       "each CPU), cpu_major (move to each CPU, then its events), parallel (a "
                       "pinned worker per CPU)")
            .Default("event_major,cpu_major,parallel"),
        ParsedFlag<Flags, std::vector<int>>(&Flags::cpus, "event_open_cpus",
                                            "a CPU list (0-3,6) of online CPUs", ParseOnlineCpus,
                                            "CPUs to open events on")
            .DefaultMeans("every online CPU (with --plan_cpus=N: 0..N-1)"),
        ParsedFlag<Flags, std::vector<std::string>>(
            &Flags::kinds, "event_open_event_kinds",
            "software events by perf name (cpu-clock, dummy, ...) or tracepoints subsystem:name",
            ParseEventKinds, "kinds of event to open")
            .Default("cpu-clock,dummy,sched:sched_switch")
            .Quick("cpu-clock"),
        ChoiceListFlag(&Flags::phases, "event_open_phases",
                       ChoiceTable<PhasePlan>{{"open", PhasePlan::kOpen},
                                              {"open_enabled", PhasePlan::kOpenEnabled},
                                              {"lifecycle", PhasePlan::kLifecycle}},
                       "what is timed: open (opening disabled events, as perf stat), "
                       "open_enabled (opening enabled events, as perf record), lifecycle "
                       "(open, enable, read, disable, close)")
            .Default("open,open_enabled,lifecycle")
            .Quick("open_enabled,lifecycle"),
        IntListFlag(&Flags::group_sizes, "event_open_group_size", 1, 1024,
                    "1: independent events; N > 1: weak groups of N events ({...}:W)")
            .Default("1"),
        IntListFlag(&Flags::loads, "event_open_load", 0, 4096,
                    "spinning threads pinned to the CPUs while BM_EventOpen runs, at most one "
                    "per CPU of --event_open_cpus; all: one per CPU",
                    {{"all", kLoadAll}})
            .Values("integers 0..C (the CPUs the events are opened on) or all, as a list (0,4 or "
                    "1-8)")
            .Default("0,all")
            .Quick("0"),
        ParsedFlag<Flags, std::vector<std::string>>(
            &Flags::pmu_events, "event_open_pmu_events",
            "event names as for perf -e, comma-separated (msr/tsc/,software/config=0/)",
            ParsePmuEvents, "event names BM_PmuResolve resolves through sysfs")
            .DefaultMeans("every alias of every PMU, pmu/config=0/ for PMUs without"),
        ChoiceListFlag(&Flags::lookups, "event_open_pmu_lookup",
                       ChoicesOf({PmuCaching::kPerEvent, PmuCaching::kPerPmu}, PmuCachingName),
                       "BM_PmuResolve's sysfs reads: per_event (load the PMU for every event), "
                       "per_pmu (once per PMU)")
            .Default("per_event,per_pmu"),
    });

struct OpenParams {
  GridOrder order;
  int events;
  std::string kind;
  PhasePlan plan;
  int group_size;
  std::vector<int> cpus;
  int load = 0;  // spinning threads, pinned to cpus in turn
};

absl::StatusOr<perf_event_attr> KindAttr(const std::string& kind, bool disabled,
                                         const Capabilities& caps) {
  perf_event_attr attr;
  if (absl::StrContains(kind, ':')) {
    if (absl::Status tracefs = caps.RequireTracefs(); !tracefs.ok()) return tracefs;
    absl::StatusOr<uint64_t> id = TracepointId(kind);
    if (!id.ok()) return id.status();
    attr = TracepointAttr(*id);
  } else {
    absl::StatusOr<uint64_t> config = ParseSoftwareEventName(kind);
    if (!config.ok()) return config.status();
    attr = SoftwareAttr(*config);
  }
  attr.disabled = disabled ? 1 : 0;
  return attr;
}

absl::Status RunPhase(Phase phase, EventGrid& grid) {
  switch (phase) {
    case kOpen:
      return grid.Open();
    case kEnable:
      return grid.Enable();
    case kRead: {
      absl::StatusOr<uint64_t> sum = grid.Read();
      if (!sum.ok()) return sum.status();
      benchmark::DoNotOptimize(*sum);
      return absl::OkStatus();
    }
    case kDisable:
      return grid.Disable();
    case kClose:
      grid.Close();
      return absl::OkStatus();
    default:
      return absl::InternalError("unknown phase");
  }
}

std::string DescribeNotes(const GridNotes& notes) {
  std::string label;
  if (!notes.affinity_refused.empty()) {
    label = absl::StrCat("affinity refused on CPU(s) ", FormatCpuList(notes.affinity_refused),
                         ", their events handled from elsewhere (", notes.refusal, ")");
  }
  if (notes.weak_group_fallbacks > 0) {
    absl::StrAppend(&label, label.empty() ? "" : "; ", notes.weak_group_fallbacks,
                    " weak group(s) reopened as independent events");
  }
  return label;
}

// The grid's CPUs outside the affinity this process was given (taskset, sched_setaffinity
// by its parent): cpu_major and parallel run there anyway, since the experiment is opening
// on each CPU from that CPU, and the row must say so. A cpuset that forbids them shows up
// as refused affinity instead.
std::vector<int> OutsideGivenAffinity(const std::vector<int>& cpus) {
  absl::StatusOr<CpuMask> given = GetAffinity();
  std::vector<int> outside;
  if (!given.ok()) return outside;
  for (int cpu : cpus) {
    if (!given->IsSet(cpu)) outside.push_back(cpu);
  }
  return outside;
}

void BM_EventOpen(benchmark::State& state, OpenParams params) {
  Capabilities caps = ProbeCapabilities();
  if (SkipIfError(state, caps.RequireSystemWide())) return;
  absl::StatusOr<perf_event_attr> attr =
      KindAttr(params.kind, params.plan != PhasePlan::kOpenEnabled, caps);
  if (SkipIfError(state, attr.status())) return;
  const uint64_t fds = static_cast<uint64_t>(params.events) * params.cpus.size();
  GridSpec spec;
  spec.events.assign(static_cast<size_t>(params.events), *attr);
  spec.cpus = params.cpus;
  spec.group_size = params.group_size;
  const bool lifecycle = params.plan == PhasePlan::kLifecycle;
  std::vector<Phase> phases = {kOpen};
  if (lifecycle) phases = {kOpen, kEnable, kRead, kDisable, kClose};
  const std::vector<int> outside = params.order == GridOrder::kEventMajor
                                       ? std::vector<int>{}
                                       : OutsideGivenAffinity(params.cpus);

  PassOptions options;
  options.unit = "fd";
  options.count_iterations = 2;  // an iteration is a whole grid
  RunPasses(state, options, [&](BenchmarkPass& pass) {
    // Before the workers, so that they inherit the attribution counters, and before the
    // fd limit is sized, so that it counts the counters' fds.
    pass.OpenCounters();
    absl::StatusOr<ScopedFdLimit> fd_limit = ScopedFdLimit::Ensure(fds);
    if (pass.SkipIfError(fd_limit.status())) return;

    std::unique_ptr<CpuWorkers> workers;
    if (params.order == GridOrder::kParallel) {
      absl::StatusOr<std::unique_ptr<CpuWorkers>> started = CpuWorkers::Start(params.cpus);
      if (pass.SkipIfError(started.status())) return;
      workers = *std::move(started);
    }
    std::unique_ptr<BackgroundThreads> hogs;
    if (params.load > 0) {
      absl::StatusOr<std::unique_ptr<BackgroundThreads>> started =
          BackgroundThreads::Start(BackgroundThreads::kSpinning, params.load, params.cpus);
      if (pass.SkipIfError(started.status())) return;
      hogs = *std::move(started);
    }
    double phase_seconds[kNumPhases] = {};
    GridNotes notes;
    for (auto _ : pass) {
      EventGrid grid(spec, params.order, workers.get());
      if (!pass.Start()) return;  // a window per iteration: the timed phases only
      double iteration_seconds = 0;
      for (Phase phase : phases) {
        auto start = std::chrono::steady_clock::now();
        absl::Status done = RunPhase(phase, grid);
        double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (pass.SkipIfError(done)) return;  // the grid closes what it opened
        phase_seconds[phase] += seconds;
        iteration_seconds += seconds;
      }
      if (!pass.Stop()) return;  // the grid's untimed close is not profiled
      notes = grid.notes();
      pass.SetIterationTime(iteration_seconds);
      grid.Close();  // for the open plans, untimed; for `lifecycle`, already closed
    }

    double total_fds = static_cast<double>(pass.iterations()) * static_cast<double>(fds);
    if (total_fds <= 0) return;
    pass.SetOps(total_fds);
    if (pass.counting()) return;
    double total_seconds = 0;
    for (double seconds : phase_seconds) total_seconds += seconds;
    state.counters["usecs/fd"] = total_seconds * 1e6 / total_fds;
    state.counters["fds"] = static_cast<double>(fds);
    if (lifecycle && total_seconds > 0) {
      for (Phase phase : phases) {
        state.counters[absl::StrCat("share:", kPhaseNames[phase])] =
            phase_seconds[phase] / total_seconds;
      }
    }
    if (params.group_size > 1) {
      state.counters["weak_fallbacks"] = static_cast<double>(notes.weak_group_fallbacks);
    }
    std::string label = DescribeNotes(notes);
    std::vector<int> left;  // those it really moved to: a refused CPU is said above
    for (int cpu : outside) {
      if (std::find(notes.affinity_refused.begin(), notes.affinity_refused.end(), cpu) ==
          notes.affinity_refused.end()) {
        left.push_back(cpu);
      }
    }
    if (!left.empty()) {
      absl::StrAppend(&label, label.empty() ? "" : "; ", "ran on CPU(s) ", FormatCpuList(left),
                      ", outside the affinity it was given (taskset), to open there");
    }
    if (!label.empty()) state.SetLabel(label);
  });
}

// Counts what the resolver asks of sysfs.
struct SysfsOps {
  uint64_t count = 0;
};

SysfsAccess CountingSysfs(SysfsOps* ops) {
  SysfsAccess real = RealSysfs();
  return SysfsAccess{[real, ops](const std::string& path) {
                       ++ops->count;
                       return real.read_file(path);
                     },
                     [real, ops](const std::string& path) {
                       ++ops->count;
                       return real.list_dir(path);
                     }};
}

struct ResolveParams {
  PmuCaching caching;
  int events;
  std::vector<std::string> names;
  absl::Status names_status;  // why there are no names, when there are none
};

void BM_PmuResolve(benchmark::State& state, ResolveParams params) {
  if (SkipIfError(state, params.names_status)) return;
  SysfsOps ops;
  SysfsAccess fs = CountingSysfs(&ops);
  int loads = 0;
  ResumeProfile();  // no KernelCostMeter here: the profile runs to the end
  auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    PmuResolver resolver(params.caching, fs);
    for (int i = 0; i < params.events; ++i) {
      absl::StatusOr<perf_event_attr> attr =
          resolver.Resolve(params.names[static_cast<size_t>(i) % params.names.size()]);
      if (SkipIfError(state, attr.status())) return;
      benchmark::DoNotOptimize(attr->config);
    }
    loads = resolver.pmu_loads();
  }
  double elapsed_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  double resolved = static_cast<double>(state.iterations()) * params.events;
  if (resolved <= 0) return;
  state.counters["usecs/event"] = elapsed_us / resolved;
  state.counters["sysfs_ops/event"] = static_cast<double>(ops.count) / resolved;
  state.counters["pmu_loads"] = loads;
}

// What one iteration costs: every fd is opened and closed (at the cost measured here),
// and each operation on an event bound to another CPU is a function call there, which
// cpu_major avoids by moving to the CPU first and parallel by running on it. Closing a
// tracepoint's last event waits for an RCU grace period; outside `lifecycle` the close is
// untimed, which is why these benchmarks run a fixed count of iterations.
CostModel OpenCost(const OpenParams& params) {
  return [params](const UnitCosts& u) {
    const double cpus = static_cast<double>(params.cpus.size());
    const double fds = params.events * cpus;
    double remote_share = params.order == GridOrder::kEventMajor ? (cpus - 1) / cpus : 0;
    // Hogs pinned to the CPUs take their share of each CPU from the opener and workers.
    const double slowdown = 1 + params.load / cpus;
    double per_op = u.event_fd / 2;
    double setup = 0, moves = 0;
    if (params.order == GridOrder::kCpuMajor) moves = cpus * u.thread;  // a migration per CPU
    if (params.order == GridOrder::kParallel) {
      setup = cpus * u.thread;
      per_op /= cpus;
    }
    // Half of a remote open+close beyond the local one, per open or close.
    const double remote_fd_extra = std::max(u.remote_fd - u.event_fd, 0.0) / 2;
    const double remote = remote_share * std::max(u.remote_op, remote_fd_extra) * slowdown;
    const bool tracepoint = absl::StrContains(params.kind, ':');
    const double teardown = tracepoint ? u.tracepoint_teardown : 0;
    setup += params.load * u.thread;
    per_op *= slowdown;
    moves *= slowdown;
    Cost cost{setup, 0, 0};
    switch (params.plan) {
      case PhasePlan::kOpen:
        cost.iteration = fds * per_op + moves;
        cost.untimed = fds * (per_op + remote) + moves + teardown;
        break;
      case PhasePlan::kOpenEnabled:
        cost.iteration = fds * (per_op + remote) + moves;
        cost.untimed = fds * (per_op + remote) + moves + teardown;
        break;
      case PhasePlan::kLifecycle:
        cost.iteration = fds * (5 * per_op + 4 * remote) + 5 * moves + teardown;
        break;
    }
    return cost;
  };
}

absl::Status RegisterOpenFamily(const Flags& f) {
  std::vector<int> cpus = f.cpus;
  if (cpus.empty()) {
    absl::StatusOr<std::vector<int>> online = OnlineCpus();
    if (!online.ok()) return online.status();
    cpus = PlanCpusGiven() ? PlannedCpus() : *online;
  }
  const int64_t cpu_count = static_cast<int64_t>(cpus.size());
  std::vector<int64_t> loads;
  for (int64_t load : f.loads) {
    if (load > cpu_count) {
      return flags.Reject(
          &Flags::loads, absl::StrJoin(f.loads, ","),
          absl::StrCat(load, " is more than the ", cpu_count, " CPUs the events are opened on"));
    }
    load = load == kLoadAll ? cpu_count : load;
    if (std::find(loads.begin(), loads.end(), load) == loads.end()) loads.push_back(load);
  }

  const bool default_grid =
      !flags.Given(&Flags::loads) && !flags.Given(&Flags::events) && !flags.Given(&Flags::kinds);
  for (const Choice<GridOrder>& strategy : f.strategies) {
    for (int64_t e : f.events) {
      for (const std::string& kind : f.kinds) {
        for (const Choice<PhasePlan>& phase : f.phases) {
          for (int64_t g : f.group_sizes) {
            OpenParams params{strategy.value, static_cast<int>(e), kind,
                              phase.value,    static_cast<int>(g), cpus};
            std::string name =
                absl::StrCat("BM_EventOpen/strategy:", strategy.name, "/events:", e,
                             "/event:", kind, "/phases:", phase.name, "/cpus:", cpus.size());
            if (g > 1) absl::StrAppend(&name, "/group:", g);
            for (int64_t load : loads) {
              // By default the loaded runs cover the seed's point (the most events, the
              // first kind) for every strategy and phase, not the whole grid again.
              if (load > 0 && default_grid && (e != f.events.back() || kind != f.kinds.front())) {
                continue;
              }
              params.load = static_cast<int>(load);
              // Unloaded runs keep the names they always had, so history still matches.
              std::string loaded = load > 0 ? absl::StrCat(name, "/load:", load) : name;
              RegisterPlanned(loaded, TimeMode::kManual, OpenCost(params), BM_EventOpen, params)
                  ->Unit(benchmark::kMicrosecond);
            }
          }
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status RegisterResolveFamily(const Flags& f) {
  std::vector<std::string> names = f.pmu_events;
  absl::Status names_status;
  if (names.empty()) {
    absl::StatusOr<std::vector<std::string>> found = ListPmuEventNames(RealSysfs());
    if (found.ok()) {
      names = *std::move(found);
    } else {
      names_status = found.status();  // no sysfs here: the benchmarks skip with this
    }
  }
  for (const Choice<PmuCaching>& lookup : f.lookups) {
    for (int64_t e : f.events) {
      ResolveParams params{lookup.value, static_cast<int>(e), names, names_status};
      std::string name = absl::StrCat("BM_PmuResolve/lookup:", lookup.name, "/events:", e,
                                      "/names:", names.size());
      // per_event reads a PMU's type, format and aliases (about 6 files) for every name.
      const double reads = e * (params.caching == PmuCaching::kPerEvent ? 6.0 : 0.2);
      RegisterPlanned(
          name, TimeMode::kReal,
          [reads](const UnitCosts& u) {
            return Cost{0, reads * u.proc_task / 2, 0};
          },
          BM_PmuResolve, params)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  return absl::OkStatus();
}

absl::Status RegisterEventOpenFamilies() {
  absl::StatusOr<Flags> f = flags.Resolve(FamilyFlagEnv());
  if (!f.ok()) return f.status();
  if (absl::Status status = RegisterOpenFamily(*f); !status.ok()) return status;
  return RegisterResolveFamily(*f);
}

}  // namespace

PERFSCALE_FAMILY(event_open, RegisterEventOpenFamilies);

}  // namespace perfscale
