// Event-open families: what opening many per-CPU perf events costs, and what the order
// of the opens changes.
//
// Seed: ../shared/seeds/002 (perf stat scaling, Andi Kleen, 2019). `perf stat` with >700
// events on 94 CPUs spent 8.0 s in system time, mostly IPIs: every perf_event_open (and
// enable, read, disable, close) of an event bound to another CPU interrupts that CPU.
// Moving the opener onto each CPU in turn and doing all of that CPU's events there cut
// it to 1.7 s; the thread names parallel per-CPU setup and fewer redundant /sys reads as
// the next steps.
//
// BM_EventOpen/strategy:S/events:E/event:K/phases:P/cpus:C[/group:G][/load:L]
//   E events of kind K (a software event such as cpu-clock or dummy, or a tracepoint
//   subsystem:name), each opened system-wide (pid -1) on each of C CPUs: E x C fds.
//   Strategy: event_major (for each event, for each CPU), cpu_major (for each CPU: move
//   there with scoped affinity, then all its events) or parallel (one worker per CPU,
//   pinned there, all CPUs at once; the workers are created before timing and reused,
//   as a tool would keep a pool). Phases: `open` times opening the events disabled, as
//   perf stat opens its counters (kernels since ~5.x install a disabled event without
//   an IPI, so this is the cheap case now); `open_enabled` opens them enabled, as perf
//   record does and as the seed's kernel paid for every open; in both the fds are closed
//   untimed after each iteration. `lifecycle` times what perf stat does with its
//   counters -- open (disabled), enable, read, disable, close -- every phase in the
//   strategy's order. G > 1 opens the events in weak groups of G (members fall back to
//   independent events where the kernel refuses the group, as '{...}:W').
//   L > 0 runs L spinning threads while the events are opened, thread i pinned to the
//   i-th of the C CPUs (all of them at L = C): the loaded machine on which perf stat
//   --no-affinity (2026) says sched_setaffinity "may introduce a delay". cpu_major then
//   waits for the scheduler on every CPU it moves to, event_major's IPIs interrupt the
//   hogs, parallel's pinned workers share each CPU with one. The hogs start before and
//   stop after the timed loop; the interrupts they take count in this process's sys_us.
//   One iteration = those phases over all E x C fds (manual time: only the timed phases).
//   Counters: usecs/fd, ipis_system/fd (function-call IPIs, system-wide, timed phases only),
//   the attributed counters per fd (ipis_sent/fd, xcalls/fd, ...: bench_support.h),
//   sys_us/fd (this process), fds (E x C), and for lifecycle share:<phase> (each phase's
//   fraction of the time). Where affinity is refused (cpuset, isolated CPU), the run goes
//   on and the label says on which CPUs; the thread's original mask is always restored.
//
// BM_PmuResolve/lookup:L/events:E/names:N
//   Resolves E event names (the N names of --pmu_events, in turn) the way perf's parser
//   does, through /sys/bus/event_source/devices/<pmu>/{type,format/,events/}: loading the
//   PMU afresh for every event (per_event) or once per PMU for the iteration (per_pmu).
//   One iteration = one fresh resolver resolving E names (a tool's start-up). Counters:
//   usecs/event, sysfs_ops/event (files read plus directories listed), pmu_loads.
//
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
#include "benchmarks/harness/profile_support.h"
#include "benchmarks/harness/suite_plan.h"
#include "lib/background_threads.h"
#include "lib/capabilities.h"
#include "lib/cpu_set.h"
#include "lib/flags.h"
#include "lib/kernel_cost.h"
#include "lib/perf_attr.h"
#include "lib/tracefs.h"

namespace perfscale {
namespace {

Flag& events_flag = DefineFlag("events", "1,100,700",
                               "events opened on every CPU (and names resolved by BM_PmuResolve)");
Flag& strategy_flag =
    DefineFlag("strategy", "event_major,cpu_major,parallel",
               "order of the per-CPU event operations: event_major, cpu_major, parallel");
Flag& cpus_flag =
    DefineFlag("cpus", "", "CPUs to open events on, e.g. 0-3,6 (default: all online)");
Flag& event_kinds_flag =
    DefineFlag("event_kinds", "cpu-clock,dummy,sched:sched_switch",
               "kinds of event to open: software events (cpu-clock, dummy, ...) or tracepoints "
               "(subsystem:name)");
Flag& phases_flag =
    DefineFlag("phases", "open,open_enabled,lifecycle",
               "what is timed: open (opening disabled events, as perf stat), open_enabled (opening "
               "enabled events, as perf record), lifecycle (open, enable, read, disable, close)");
Flag& group_size_flag = DefineFlag(
    "group_size", "1", "1: independent events; N > 1: weak groups of N events ({...}:W)");
Flag& load_flag =
    DefineFlag("load", "0,all",
               "spinning threads pinned to the CPUs while BM_EventOpen runs: counts up to the "
               "CPU count, or all (one per CPU)");
Flag& pmu_events_flag =
    DefineFlag("pmu_events", "",
               "event names BM_PmuResolve resolves through sysfs, e.g. msr/tsc/,software/config=0/ "
               "(default: every alias of every PMU, pmu/config=0/ for PMUs without)");
Flag& pmu_lookup_flag = DefineFlag(
    "pmu_lookup", "per_event,per_pmu",
    "BM_PmuResolve's sysfs reads: per_event (load the PMU for every event), per_pmu (cache)");

enum Phase { kOpen, kEnable, kRead, kDisable, kClose, kNumPhases };
constexpr const char* kPhaseNames[kNumPhases] = {"open", "enable", "read", "disable", "close"};

// What one iteration times.
enum class PhasePlan {
  kOpen,         // perf_event_open of disabled events, as perf stat opens its counters
  kOpenEnabled,  // perf_event_open of enabled events, as perf record opens its events
  kLifecycle,    // open (disabled), enable, read, disable, close
};

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

void BM_EventOpen(benchmark::State& state, OpenParams params) {
  Capabilities caps = ProbeCapabilities();
  if (SkipIfError(state, caps.RequireSystemWide())) return;
  absl::StatusOr<perf_event_attr> attr =
      KindAttr(params.kind, params.plan != PhasePlan::kOpenEnabled, caps);
  if (SkipIfError(state, attr.status())) return;
  // Before the workers, so that they inherit the attribution counters, and before the fd
  // limit is sized, so that it counts the counters' fds.
  KernelCostMeter meter = BenchmarkMeter();
  const uint64_t fds = static_cast<uint64_t>(params.events) * params.cpus.size();
  absl::StatusOr<ScopedFdLimit> fd_limit = ScopedFdLimit::Ensure(fds);
  if (SkipIfError(state, fd_limit.status())) return;

  std::unique_ptr<CpuWorkers> workers;
  if (params.order == GridOrder::kParallel) {
    absl::StatusOr<std::unique_ptr<CpuWorkers>> started = CpuWorkers::Start(params.cpus);
    if (SkipIfError(state, started.status())) return;
    workers = *std::move(started);
  }
  std::unique_ptr<BackgroundThreads> hogs;
  if (params.load > 0) {
    absl::StatusOr<std::unique_ptr<BackgroundThreads>> started =
        BackgroundThreads::Start(BackgroundThreads::kSpinning, params.load, params.cpus);
    if (SkipIfError(state, started.status())) return;
    hogs = *std::move(started);
  }
  GridSpec spec;
  spec.events.assign(static_cast<size_t>(params.events), *attr);
  spec.cpus = params.cpus;
  spec.group_size = params.group_size;

  const bool lifecycle = params.plan == PhasePlan::kLifecycle;
  std::vector<Phase> phases = {kOpen};
  if (lifecycle) phases = {kOpen, kEnable, kRead, kDisable, kClose};
  double phase_seconds[kNumPhases] = {};
  KernelCost cost;  // summed over the iterations' timed phases
  GridNotes notes;
  for (auto _ : state) {
    EventGrid grid(spec, params.order, workers.get());
    if (!StartOrSkip(state, meter)) return;
    double iteration_seconds = 0;
    for (Phase phase : phases) {
      auto start = std::chrono::steady_clock::now();
      absl::Status done = RunPhase(phase, grid);
      double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (SkipIfError(state, done)) return;  // the grid closes what it opened
      phase_seconds[phase] += seconds;
      iteration_seconds += seconds;
    }
    absl::StatusOr<KernelCost> iteration_cost = meter.Stop();
    PauseProfile();  // the grid's untimed close is not profiled
    if (SkipIfError(state, iteration_cost.status())) return;
    cost += *iteration_cost;
    notes = grid.notes();
    state.SetIterationTime(iteration_seconds);
    grid.Close();  // for the open plans, untimed; for `lifecycle`, already closed
  }

  double total_fds = static_cast<double>(state.iterations()) * static_cast<double>(fds);
  if (total_fds <= 0) return;
  double total_seconds = 0;
  for (double seconds : phase_seconds) total_seconds += seconds;
  state.counters["usecs/fd"] = total_seconds * 1e6 / total_fds;
  SetKernelCostCounters(state, cost, meter.task_counters(), total_fds, "fd");
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
  if (std::string label = DescribeNotes(notes); !label.empty()) state.SetLabel(label);
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

// A flag's text, or `quick` under --quick when the flag was not given.
std::string FlagText(const Flag& flag, const char* quick) {
  return !flag.is_set() && QuickRun() && quick != nullptr ? std::string(quick) : flag.value();
}

absl::StatusOr<std::vector<std::string>> ChoiceFlag(const Flag& flag,
                                                    const std::vector<std::string>& allowed,
                                                    const char* quick = nullptr) {
  absl::StatusOr<std::vector<std::string>> values = ParseChoiceList(FlagText(flag, quick), allowed);
  if (!values.ok()) return flag.Annotate(values.status());
  if (values->empty()) {
    return flag.Annotate(absl::InvalidArgumentError("expected at least one value"));
  }
  return values;
}

absl::StatusOr<std::vector<int64_t>> IntListFlag(const Flag& flag, int64_t min, int64_t max,
                                                 const char* quick = nullptr) {
  absl::StatusOr<std::vector<int64_t>> values = ParseIntList(FlagText(flag, quick), min, max);
  if (!values.ok()) return flag.Annotate(values.status());
  if (values->empty()) {
    return flag.Annotate(absl::InvalidArgumentError("expected at least one value"));
  }
  return values;
}

// --load: hog counts, `all` being one per CPU.
absl::StatusOr<std::vector<int64_t>> ResolveLoads(int cpus) {
  std::string text = FlagText(load_flag, "0");
  std::vector<std::string> items = absl::StrSplit(text, ',');
  for (std::string& item : items) {
    if (item == "all") item = absl::StrCat(cpus);
  }
  absl::StatusOr<std::vector<int64_t>> loads = ParseIntList(absl::StrJoin(items, ","), 0, cpus);
  if (!loads.ok()) return load_flag.Annotate(loads.status());
  if (loads->empty()) return load_flag.Annotate(absl::InvalidArgumentError("expected a value"));
  return loads;
}

absl::StatusOr<std::vector<int>> ResolveCpus() {
  absl::StatusOr<std::vector<int>> online = OnlineCpus();
  if (!online.ok()) return online.status();
  if (cpus_flag.value().empty()) return PlanCpusGiven() ? PlannedCpus() : online;
  absl::StatusOr<std::vector<int>> cpus = ParseCpuList(cpus_flag.value());
  if (!cpus.ok()) return cpus_flag.Annotate(cpus.status());
  if (cpus->empty()) return absl::InvalidArgumentError("--cpus: empty CPU list");
  for (int cpu : *cpus) {
    if (!std::binary_search(online->begin(), online->end(), cpu)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--cpus: CPU ", cpu, " is not online (online: ", FormatCpuList(*online), ")"));
    }
  }
  return cpus;
}

absl::StatusOr<std::vector<std::string>> ResolveEventKinds() {
  std::vector<std::string> kinds;
  std::string text = FlagText(event_kinds_flag, "cpu-clock");
  for (absl::string_view kind : absl::StrSplit(text, ',')) {
    if (kind.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--event_kinds: empty item in '", text, "'"));
    }
    if (absl::StrContains(kind, ':')) {
      absl::StatusOr<TracepointName> name = ParseTracepointName(kind);
      if (!name.ok()) return event_kinds_flag.Annotate(name.status());
    } else {
      absl::StatusOr<uint64_t> config = ParseSoftwareEventName(kind);
      if (!config.ok()) return event_kinds_flag.Annotate(config.status());
    }
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.emplace_back(kind);
  }
  return kinds;
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

absl::Status RegisterOpenFamily(const std::vector<int64_t>& events) {
  absl::StatusOr<std::vector<std::string>> strategies =
      ChoiceFlag(strategy_flag, {"event_major", "cpu_major", "parallel"});
  if (!strategies.ok()) return strategies.status();
  absl::StatusOr<std::vector<int>> cpus = ResolveCpus();
  if (!cpus.ok()) return cpus.status();
  absl::StatusOr<std::vector<std::string>> kinds = ResolveEventKinds();
  if (!kinds.ok()) return kinds.status();
  absl::StatusOr<std::vector<std::string>> phases =
      ChoiceFlag(phases_flag, {"open", "open_enabled", "lifecycle"}, "open_enabled,lifecycle");
  if (!phases.ok()) return phases.status();
  absl::StatusOr<std::vector<int64_t>> group_sizes = IntListFlag(group_size_flag, 1, 1024);
  if (!group_sizes.ok()) return group_sizes.status();
  absl::StatusOr<std::vector<int64_t>> loads = ResolveLoads(static_cast<int>(cpus->size()));
  if (!loads.ok()) return loads.status();

  const bool default_grid =
      !load_flag.is_set() && !events_flag.is_set() && !event_kinds_flag.is_set();
  for (const std::string& strategy : *strategies) {
    for (int64_t e : events) {
      for (const std::string& kind : *kinds) {
        for (const std::string& phase : *phases) {
          for (int64_t g : *group_sizes) {
            PhasePlan plan = phase == "lifecycle"      ? PhasePlan::kLifecycle
                             : phase == "open_enabled" ? PhasePlan::kOpenEnabled
                                                       : PhasePlan::kOpen;
            OpenParams params{*ParseGridOrder(strategy),
                              static_cast<int>(e),
                              kind,
                              plan,
                              static_cast<int>(g),
                              *cpus};
            std::string name =
                absl::StrCat("BM_EventOpen/strategy:", strategy, "/events:", e, "/event:", kind,
                             "/phases:", phase, "/cpus:", cpus->size());
            if (g > 1) absl::StrAppend(&name, "/group:", g);
            for (int64_t load : *loads) {
              // By default the loaded runs cover the seed's point (the most events, the
              // first kind) for every strategy and phase, not the whole grid again.
              if (load > 0 && default_grid && (e != events.back() || kind != kinds->front())) {
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

absl::Status RegisterResolveFamily(const std::vector<int64_t>& events) {
  absl::StatusOr<std::vector<std::string>> lookups =
      ChoiceFlag(pmu_lookup_flag, {"per_event", "per_pmu"});
  if (!lookups.ok()) return lookups.status();
  std::vector<std::string> names;
  absl::Status names_status;
  if (pmu_events_flag.value().empty()) {
    absl::StatusOr<std::vector<std::string>> found = ListPmuEventNames(RealSysfs());
    if (found.ok()) {
      names = *std::move(found);
    } else {
      names_status = found.status();  // no sysfs here: the benchmarks skip with this
    }
  } else {
    absl::StatusOr<std::vector<std::string>> listed = SplitEventList(pmu_events_flag.value());
    if (!listed.ok()) return pmu_events_flag.Annotate(listed.status());
    for (const std::string& name : *listed) {
      absl::StatusOr<PmuEventName> parsed = ParsePmuEventName(name);
      if (!parsed.ok()) return pmu_events_flag.Annotate(parsed.status());
    }
    names = *std::move(listed);
  }
  for (const std::string& lookup : *lookups) {
    for (int64_t e : events) {
      ResolveParams params{*ParsePmuCaching(lookup), static_cast<int>(e), names, names_status};
      std::string name =
          absl::StrCat("BM_PmuResolve/lookup:", lookup, "/events:", e, "/names:", names.size());
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
  absl::StatusOr<std::vector<int64_t>> events = IntListFlag(events_flag, 1, 100000, "100");
  if (!events.ok()) return events.status();
  if (absl::Status status = RegisterOpenFamily(*events); !status.ok()) return status;
  return RegisterResolveFamily(*events);
}

}  // namespace

PERFSCALE_FAMILY(event_open, RegisterEventOpenFamilies);

}  // namespace perfscale
