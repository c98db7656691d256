// How long the suite will take, decided before it starts. Each family registers its
// benchmarks with a cost model in the units a short probe measures on this machine
// (thread create+join, fork, event open+close, IPI, RCU teardown, /proc read, pipe round
// trip). Before anything runs, the planner probes, estimates every benchmark that the
// filter selects, and gives each a fixed iteration count (where setup or untimed work
// dominates, e.g. closing tracepoint events costs an RCU grace period per iteration) or
// a minimum time (where iterations are cheap and Google Benchmark's own search fits),
// scaled down as far as needed for the whole run to fit --budget. --plan prints the plan
// and runs nothing; with --plan_cpus=N the families size their defaults for N CPUs, so a
// plan for a bigger machine can be checked here (with this machine's per-operation costs).
//
// Example (in a family's registration):
//   perfscale::RegisterPlanned(name, perfscale::TimeMode::kManual,
//                              [=](const perfscale::UnitCosts& u) {
//                                return perfscale::Cost{/*setup=*/0, fds * u.event_fd, 0};
//                              },
//                              BM_EventOpen, params)
//       ->Unit(benchmark::kMicrosecond);
#ifndef PERFSCALE_BENCHMARKS_HARNESS_SUITE_PLAN_H_
#define PERFSCALE_BENCHMARKS_HARNESS_SUITE_PLAN_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmark/benchmark.h"
#include "benchmarks/harness/profile_support.h"

namespace perfscale {

// Seconds per operation, measured by the probe (or assumed, then named in `assumed`).
struct UnitCosts {
  double thread = 0;               // create and join one thread
  double process = 0;              // fork, exit and reap one child
  double event_fd = 0;             // open and close one perf event on this CPU
  double remote_op = 0;            // one ioctl on an event bound to another CPU (an IPI)
  double remote_fd = 0;            // open (enabled) and close one event bound to another CPU
  double tracepoint_teardown = 0;  // closing a tracepoint's last event (an RCU grace period)
  double proc_task = 0;            // reading one task's /proc status and maps
  double round_trip = 0;           // one pipe round trip between two threads
  std::vector<std::string> assumed;
};

// One benchmark's cost on the planned machine.
struct Cost {
  double setup = 0;      // per call of the benchmark function, outside the loop
  double iteration = 0;  // one iteration, measured
  double untimed = 0;    // per iteration, not measured (manual time), e.g. closing fds
};

enum class TimeMode { kReal, kManual };

using CostModel = std::function<Cost(const UnitCosts&)>;

// Records the benchmark for the planner; `name` is what Google Benchmark registers.
benchmark::internal::Benchmark* AddPlanned(benchmark::internal::Benchmark* benchmark,
                                           const std::string& name, TimeMode mode, CostModel cost);

// Called with the benchmark's name each time its function starts (progress display).
void SetStartListener(std::function<void(const std::string&)> listener);
void NoteBenchmarkStarting(const std::string& name);

// How the plan runs the benchmark whose function runs now (the last one noted starting):
// min_time > 0: Google Benchmark sizes its iterations over several calls of the first
// repetition, and reports a call once its measured time reaches min_time; 0: a fixed
// count of iterations, every call reported; -1: not planned (a test), unknown.
struct RunControl {
  std::string name;
  double min_time = -1;
  bool manual_time = false;    // Google Benchmark measures the manual time, else real time
  double min_warmup_time = 0;  // --benchmark_min_warmup_time: unreported calls first
};
const RunControl& CurrentRunControl();

// RegisterNamedBenchmark (profiled under `name`) plus AddPlanned, with real or manual
// time set; every call tells the start listener first.
template <class Function, class... Args>
benchmark::internal::Benchmark* RegisterPlanned(const std::string& name, TimeMode mode,
                                                CostModel cost, Function function, Args... args) {
  auto noted = [name, function](benchmark::State& state, Args... bound) {
    NoteBenchmarkStarting(name);
    function(state, bound...);
  };
  return AddPlanned(RegisterNamedBenchmark(name, noted, args...), name, mode, std::move(cost));
}

// The registered name Google Benchmark prints without our run-control segments:
// `name/real_time` or `name/manual_time`.
struct PlannedRun {
  std::string name;
  double estimate_seconds = 0;  // wall time, all repetitions
};

struct SuitePlan {
  std::vector<PlannedRun> runs;  // in registration order
  double estimate_seconds = 0;
  double budget_seconds = 0;
  std::string text;  // what --plan prints (and every run, to stderr, before starting)
};

// What the command line asked for that shapes the plan.
struct PlanRequest {
  std::string filter;          // --benchmark_filter
  double min_time = 0;         // --benchmark_min_time when given, else 0
  double min_warmup_time = 0;  // --benchmark_min_warmup_time when given, else 0
  int repetitions = 1;         // --benchmark_repetitions
  bool list_only = false;      // --benchmark_list_tests: nothing runs, nothing is probed
};

// Probes, estimates and applies the plan to every benchmark the filter selects
// (WillRun: Iterations or MinTime), and narrows Google Benchmark's filter to exactly that
// selection. Errors are usage errors (--budget, --plan_cpus without --plan).
absl::StatusOr<SuitePlan> PlanSuite(const PlanRequest& request);

// --plan: print the plan and run nothing.
bool PlanOnly();

// What the probe measures (exposed for tests).
UnitCosts ProbeUnitCosts();

// 75.4 -> "1:15", 3725 -> "1:02:05".
std::string FormatClock(double seconds);

// "90", "90s", "10m", "1h" -> seconds.
absl::StatusOr<double> ParseDuration(const std::string& text);

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_HARNESS_SUITE_PLAN_H_
