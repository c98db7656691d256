#include "benchmarks/harness/suite_plan.h"

#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "benchmarks/harness/family.h"
#include "benchmarks/harness/flags.h"
#include "lib/capabilities.h"
#include "lib/cpu_set.h"
#include "lib/file_reader.h"
#include "lib/perf_attr.h"
#include "lib/perf_event.h"
#include "lib/tracefs.h"

namespace perfscale {
namespace {

Flag& budget_flag = DefineSuiteFlag(
    "budget", "10m", "seconds, or a duration with s, m or h: 300, 90s, 10m, 1h",
    "wall-time budget the whole run is planned to fit (iteration counts shrink to fit)");
Flag& plan_flag = DefineSuiteBoolFlag(
    "plan", false, "print the plan (benchmarks, iterations, estimated time) and exit");

// The most each benchmark gets by default: 0.3 s of measured time (Google Benchmark's
// default is 0.5 s), which keeps the default suite within 5 minutes on 2 CPUs;
// --benchmark_min_time sets it.
constexpr double kDefaultTarget = 0.3;
// The least: below it the figures are mostly noise.
constexpr double kLeastTarget = 0.01;

struct Entry {
  benchmark::internal::Benchmark* benchmark;
  std::string name;
  TimeMode mode;
  CostModel cost;
};

std::vector<Entry>& Entries() {
  static auto* entries = new std::vector<Entry>;
  return *entries;
}

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Median seconds of `rounds` calls of `op`, each repeated `per_round` times (per op).
template <class Op>
double Measure(int rounds, int per_round, Op op) {
  std::vector<double> samples;
  for (int r = 0; r < rounds; ++r) {
    Clock::time_point start = Clock::now();
    for (int i = 0; i < per_round; ++i) op();
    samples.push_back(SecondsSince(start) / per_round);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

double ProbeRoundTrip() {
  int ping[2], pong[2];
  if (pipe(ping) != 0) return 0;
  if (pipe(pong) != 0) {
    close(ping[0]);
    close(ping[1]);
    return 0;
  }
  constexpr int kTrips = 300;
  std::thread peer([&] {
    char token;
    for (int i = 0; i < kTrips; ++i) {
      if (read(ping[0], &token, 1) != 1 || write(pong[1], &token, 1) != 1) break;
    }
  });
  char token = 'x';
  Clock::time_point start = Clock::now();
  int done = 0;
  for (; done < kTrips; ++done) {
    if (write(ping[1], &token, 1) != 1 || read(pong[0], &token, 1) != 1) break;
  }
  double seconds = SecondsSince(start);
  close(ping[1]);  // the peer sees EOF if the loop stopped early
  peer.join();
  for (int fd : {ping[0], pong[0], pong[1]}) close(fd);
  return done > 0 ? seconds / done : 0;
}

// An ioctl on an event bound to another CPU, from this one: the kernel's function call
// there is what event_major and breakpoint toggling pay per fd or inherited copy.
// Also opening and closing an enabled event there, as event_major does for every fd.
absl::StatusOr<std::pair<double, double>> ProbeRemoteOp(const Capabilities& caps) {
  if (absl::Status allowed = caps.RequireSystemWide(); !allowed.ok()) return allowed;
  absl::StatusOr<std::vector<int>> online = OnlineCpus();
  if (!online.ok()) return online.status();
  if (online->size() < 2) return absl::FailedPreconditionError("one CPU");
  absl::StatusOr<ScopedAffinity> pinned = ScopedAffinity::PinTo(online->front());
  if (!pinned.ok()) return pinned.status();
  perf_event_attr attr = SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK);
  attr.disabled = 1;
  absl::StatusOr<PerfEvent> event = PerfEvent::Open(attr, -1, online->back());
  if (!event.ok()) return event.status();
  double toggle = Measure(5, 20,
                          [&] {
                            (void)event->Enable();
                            (void)event->Disable();
                          }) /
                  2;
  attr.disabled = 0;
  double open_close = Measure(3, 20, [&] { (void)PerfEvent::Open(attr, -1, online->back()); });
  return std::make_pair(toggle, open_close);
}

absl::StatusOr<double> ProbeTracepointTeardown(const Capabilities& caps) {
  if (absl::Status allowed = caps.RequireSystemWide(); !allowed.ok()) return allowed;
  if (absl::Status tracefs = caps.RequireTracefs(); !tracefs.ok()) return tracefs;
  absl::StatusOr<uint64_t> id = TracepointId("sched:sched_switch");
  if (!id.ok()) return id.status();
  perf_event_attr attr = TracepointAttr(*id);
  attr.disabled = 1;
  // One close: it waits for grace periods (tens of ms), and only sizes the plan.
  absl::StatusOr<PerfEvent> event = PerfEvent::Open(attr, -1, 0);
  if (!event.ok()) return event.status();
  Clock::time_point start = Clock::now();
  event->Close();
  return SecondsSince(start);
}

std::string Seconds(double seconds) {
  if (seconds < 1e-3) return absl::StrFormat("%.1f us", seconds * 1e6);
  if (seconds < 1) return absl::StrFormat("%.1f ms", seconds * 1e3);
  return absl::StrFormat("%.2f s", seconds);
}

// Google Benchmark 1.7.1's search for an iteration count (PredictNumItersNeeded): 1
// iteration, then 10x more until a run is significant (over a tenth of the target), then
// one jump to 1.4x the target. Every call repeats the setup.
double AdaptiveWall(const Cost& cost, double target) {
  double wall = 0;
  double iters = 1;
  for (int calls = 0; calls < 20; ++calls) {
    double measured = iters * cost.iteration;
    wall += cost.setup + iters * (cost.iteration + cost.untimed);
    if (measured >= target || iters >= 1e9) break;
    double multiplier = measured / target > 0.1 ? target * 1.4 / std::max(measured, 1e-9) : 10;
    iters = std::max(std::round(multiplier * iters), iters + 1);
  }
  return wall;
}

// Fixed counts where the search would repeat expensive setup or untimed work: those
// benchmarks get the target as wall time, not as measured time.
bool WantsFixedIterations(const Cost& cost) {
  return cost.untimed > cost.iteration || cost.setup > 0.1 || cost.iteration > 0.05;
}

int64_t FixedIterations(const Cost& cost, double target) {
  double per_iteration = std::max(cost.iteration + cost.untimed, 1e-9);
  return static_cast<int64_t>(std::clamp(std::floor(target / per_iteration), 1.0, 1e6));
}

double FixedWall(const Cost& cost, double target) {
  return cost.setup + FixedIterations(cost, target) * (cost.iteration + cost.untimed);
}

double Wall(const Cost& cost, double target) {
  return WantsFixedIterations(cost) ? FixedWall(cost, target) : AdaptiveWall(cost, target);
}

std::string EscapeRegex(const std::string& text) {
  std::string escaped;
  for (char c : text) {
    if (std::strchr(".[]{}()\\*+?|^$", c) != nullptr) escaped.push_back('\\');
    escaped.push_back(c);
  }
  return escaped;
}

std::string TimeSuffix(TimeMode mode) {
  return mode == TimeMode::kReal ? "/real_time" : "/manual_time";
}

// The selection Google Benchmark would make from the names without the plan's segments.
std::vector<const Entry*> Select() {
  std::vector<const Entry*> selected;
  for (const Entry& entry : Entries()) {
    if (WillRun(entry.name + TimeSuffix(entry.mode))) selected.push_back(&entry);
  }
  return selected;
}

std::string FamilyOf(const std::string& name) { return name.substr(0, name.find('/')); }

std::function<void(const std::string&)>& StartListener() {
  static auto* listener = new std::function<void(const std::string&)>;
  return *listener;
}

}  // namespace

std::string FormatClock(double seconds) {
  long total = std::lround(std::max(seconds, 0.0));
  if (total >= 3600) {
    return absl::StrFormat("%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
  }
  return absl::StrFormat("%ld:%02ld", total / 60, total % 60);
}

void SetStartListener(std::function<void(const std::string&)> listener) {
  StartListener() = std::move(listener);
}

std::map<std::string, RunControl>& PlannedMinTimes() {
  static auto* min_times = new std::map<std::string, RunControl>;
  return *min_times;
}

RunControl& Current() {
  static auto* current = new RunControl;
  return *current;
}

void NoteBenchmarkStarting(const std::string& name) {
  auto planned = PlannedMinTimes().find(name);
  Current() = planned != PlannedMinTimes().end() ? planned->second : RunControl{name, -1, false};
  if (StartListener()) StartListener()(name);
}

const RunControl& CurrentRunControl() { return Current(); }

benchmark::internal::Benchmark* AddPlanned(benchmark::internal::Benchmark* benchmark,
                                           const std::string& name, TimeMode mode, CostModel cost) {
  if (mode == TimeMode::kReal) {
    benchmark->UseRealTime();
  } else {
    benchmark->UseManualTime();
  }
  Entries().push_back(Entry{benchmark, name, mode, std::move(cost)});
  return benchmark;
}

UnitCosts ProbeUnitCosts() {
  UnitCosts u;
  Capabilities caps = ProbeCapabilities();
  u.thread = Measure(3, 10, [] { std::thread([] {}).join(); });
  u.process = Measure(3, 3, [] {
    pid_t child = fork();
    if (child == 0) _exit(0);
    if (child > 0) waitpid(child, nullptr, 0);
  });
  perf_event_attr dummy = SoftwareAttr(PERF_COUNT_SW_DUMMY);
  dummy.disabled = 1;
  if (PerfEvent::Open(dummy, 0, -1).ok()) {
    u.event_fd = Measure(3, 30, [&] { (void)PerfEvent::Open(dummy, 0, -1); });
  } else {
    u.event_fd = 5e-6;
    u.assumed.push_back("event fd");
  }
  if (absl::StatusOr<std::pair<double, double>> remote = ProbeRemoteOp(caps); remote.ok()) {
    u.remote_op = remote->first;
    u.remote_fd = remote->second;
  } else {
    u.remote_op = 10 * u.event_fd;
    u.remote_fd = u.event_fd + 2 * u.remote_op;
    u.assumed.push_back("remote op");
  }
  if (absl::StatusOr<double> teardown = ProbeTracepointTeardown(caps); teardown.ok()) {
    u.tracepoint_teardown = *teardown;
  } else {
    u.tracepoint_teardown = 0.03;
    u.assumed.push_back("tracepoint teardown");
  }
  const std::string task = absl::StrCat("/proc/self/task/", syscall(SYS_gettid));
  u.proc_task = Measure(3, 5, [&] {
    (void)ReadTextFile(task + "/status");
    (void)ReadTextFile(task + "/maps");
  });
  u.round_trip = ProbeRoundTrip();
  return u;
}

absl::StatusOr<double> ParseDuration(const std::string& text) {
  double scale = 1;
  std::string number = text;
  if (!number.empty()) {
    switch (number.back()) {
      case 's':
        number.pop_back();
        break;
      case 'm':
        scale = 60;
        number.pop_back();
        break;
      case 'h':
        scale = 3600;
        number.pop_back();
        break;
      default:
        break;
    }
  }
  double value = 0;
  if (!absl::SimpleAtod(number, &value) || !(value > 0) || value * scale > 7 * 24 * 3600) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a duration: seconds, or a number with s, m or h"));
  }
  return value * scale;
}

bool PlanOnly() { return plan_flag.bool_value(); }

absl::StatusOr<SuitePlan> PlanSuite(const PlanRequest& request) {
  SuitePlan plan;
  absl::StatusOr<double> budget = ParseDuration(budget_flag.value());
  if (!budget.ok()) return budget_flag.Reject(budget_flag.value(), budget.status());
  plan.budget_seconds = *budget;
  if (absl::Status cpus = CheckPlanCpus(PlanOnly()); !cpus.ok()) return cpus;
  if (request.list_only) return plan;  // names stay as registered
  const std::vector<const Entry*> all_selected = Select();
  const std::vector<const Entry*>* selected = &all_selected;

  Clock::time_point probe_start = Clock::now();
  UnitCosts units = ProbeUnitCosts();
  double probe_seconds = SecondsSince(probe_start);
  std::vector<Cost> costs;
  for (const Entry* entry : *selected) costs.push_back(entry->cost(units));

  const double most = request.min_time > 0 ? request.min_time : kDefaultTarget;
  const int reps = std::max(1, request.repetitions);
  auto total = [&](double target) {
    double sum = 0;
    for (const Cost& cost : costs) sum += reps * Wall(cost, target);
    return sum;
  };
  // Each benchmark's target: the most it may have, or less so that the run fits.
  double target = most;
  if (total(most) > plan.budget_seconds) {
    double low = std::min(kLeastTarget, most), high = most;
    for (int i = 0; i < 40; ++i) {
      double mid = (low + high) / 2;
      (total(mid) > plan.budget_seconds ? high : low) = mid;
    }
    target = low;
  }

  std::vector<std::string> exact;
  std::map<std::string, std::pair<int, double>> per_family;  // count, seconds
  std::string details;
  int fixed = 0;
  for (size_t i = 0; i < selected->size(); ++i) {
    const Entry& entry = *(*selected)[i];
    const Cost& cost = costs[i];
    double wall = reps * Wall(cost, target);
    std::string control;
    if (WantsFixedIterations(cost)) {
      int64_t iterations = FixedIterations(cost, target);
      entry.benchmark->Iterations(iterations);
      PlannedMinTimes()[entry.name] =
          RunControl{entry.name, 0, entry.mode == TimeMode::kManual, request.min_warmup_time};
      control = absl::StrCat("iterations:", iterations);
      ++fixed;
    } else {
      entry.benchmark->MinTime(target);
      PlannedMinTimes()[entry.name] =
          RunControl{entry.name, target, entry.mode == TimeMode::kManual, request.min_warmup_time};
      control = absl::StrFormat("min_time:%0.3f", target);
    }
    exact.push_back(EscapeRegex(absl::StrCat(entry.name, "/", control, TimeSuffix(entry.mode))));
    plan.runs.push_back(PlannedRun{entry.name + TimeSuffix(entry.mode), wall});
    plan.estimate_seconds += wall;
    auto& [count, seconds] = per_family[FamilyOf(entry.name)];
    ++count;
    seconds += wall;
    absl::StrAppend(&details, absl::StrFormat("  %8s  %-17s %s\n", Seconds(wall), control,
                                              entry.name + TimeSuffix(entry.mode)));
  }
  // Google Benchmark matches its filter against names that now carry the plan's
  // segments; hand it exactly the selection made above.
  if (selected->size() == Entries().size()) {
    benchmark::SetBenchmarkFilter(".");
  } else if (!selected->empty()) {  // else the filter stays, and matches nothing
    benchmark::SetBenchmarkFilter(absl::StrCat("^(", absl::StrJoin(exact, "|"), ")$"));
  }

  std::string& text = plan.text;
  absl::StrAppendFormat(&text,
                        "plan: %d benchmarks for %d CPUs%s, %d repetition(s), budget %s: "
                        "estimated %s\n",
                        static_cast<int>(selected->size()), PlannedCpuCount(),
                        PlanCpusGiven() ? " (--plan_cpus; this machine's costs per operation)" : "",
                        reps, FormatClock(plan.budget_seconds), FormatClock(plan.estimate_seconds));
  absl::StrAppendFormat(&text,
                        "  each benchmark: %s measured (min_time), or a fixed count of iterations "
                        "filling %s of wall time where setup or untimed work dominates (%d)\n",
                        Seconds(target), Seconds(target), fixed);
  if (target < most) {
    absl::StrAppendFormat(&text, "  (shortened from %s to fit the budget)\n", Seconds(most));
  }
  if (plan.estimate_seconds > plan.budget_seconds) {
    absl::StrAppendFormat(&text,
                          "  OVER BUDGET even at %s per benchmark: narrow the parameter lists "
                          "or --benchmark_filter, or raise --budget\n",
                          Seconds(target));
  }
  absl::StrAppendFormat(
      &text,
      "  probe (%s): thread %s, fork %s, event fd %s, remote op %s, remote fd %s, tracepoint "
      "teardown %s, /proc task %s, pipe round trip %s%s\n",
      Seconds(probe_seconds), Seconds(units.thread), Seconds(units.process),
      Seconds(units.event_fd), Seconds(units.remote_op), Seconds(units.remote_fd),
      Seconds(units.tracepoint_teardown), Seconds(units.proc_task), Seconds(units.round_trip),
      units.assumed.empty() ? ""
                            : absl::StrCat(" (assumed: ", absl::StrJoin(units.assumed, ", "), ")"));
  for (const auto& [family, count_seconds] : per_family) {
    absl::StrAppendFormat(&text, "  %-22s %4d  %8s\n", family, count_seconds.first,
                          FormatClock(count_seconds.second));
  }
  if (PlanOnly()) text += details;
  return plan;
}

}  // namespace perfscale
