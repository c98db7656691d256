#include "benchmarks/harness/bench_support.h"

#include <sys/utsname.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "benchmarks/harness/flags.h"
#include "benchmarks/harness/json_string.h"
#include "benchmarks/harness/profile_support.h"
#include "benchmarks/harness/suite_plan.h"
#include "lib/errno_status.h"

namespace perfscale {
namespace {

Flag& attribution_flag = DefineFlag(
    FlagInfo{"attribution",
             "suite",
             "count what the benchmark's own tasks cause (ipis_sent, xcalls, lock_contended, "
             "lock_wait_us, ctx_switches, cpu_migrations, page_faults per op) in a counting "
             "pass after the timed one; timed: count during the timed iterations instead "
             "(times the counters too)",
             "true, false or timed",
             "true (false before Linux 6.4)",
             "",
             /*is_bool=*/true,
             {"timed"}},
    "true");

Flag& count_syscalls_flag =
    DefineSuiteBoolFlag("count_syscalls", false,
                        "with attribution, also count the syscalls of the benchmark's tasks "
                        "(syscalls per op): sizes a slowdown added per syscall (tools/perfscale "
                        "inject); the counting event slows every syscall, so not for timing");

TaskCounters::Options CounterOptions() {
  TaskCounters::Options options;
  options.count_syscalls = count_syscalls_flag.bool_value();
  return options;
}

// Before Linux 6.4 the IPI and cross-call tracepoints do not exist, so there attribution
// is off unless --attribution=true asks for it. (It was also blamed for Debian 6.1 guests
// that soft-locked; that lockup is QEMU's multi-threaded TCG, see docs/vm.md, "Guests
// that lock up", and `vm` avoids it.)
// AttributionMode() is asked on every benchmark's setup and counting pass; the running
// kernel cannot change under a process, so its release is read once.
bool KernelPredatesAttribution() {
  static const bool predates = [] {
    struct utsname kernel;
    int major = 0, minor = 0;
    if (uname(&kernel) != 0 || std::sscanf(kernel.release, "%d.%d", &major, &minor) != 2) {
      return false;
    }
    return major < 6 || (major == 6 && minor < 4);
  }();
  return predates;
}

// --attribution is a boolean that also takes "timed" (FlagInfo::also).
bool TimedAsked() { return attribution_flag.is_set() && attribution_flag.value() == "timed"; }

// The kept row fixture: the row (State::name) that last asked for it, and its key.
struct KeptFixture {
  std::string row;
  std::string key;
  std::unique_ptr<RowFixture> fixture;
};
KeptFixture& Kept() {
  static KeptFixture* kept = new KeptFixture();
  return *kept;
}

void ReleaseUnlessRow(const std::string& name) {
  if (Kept().fixture != nullptr && Kept().row != name) ReleaseRowFixtures();
}

struct KeptTracepoints : RowFixture {
  std::unique_ptr<TracepointKeepAlive> keeper;
};

}  // namespace

RowFixture* KeptRowFixture(const benchmark::State& state, const std::string& key) {
  KeptFixture& kept = Kept();
  if (kept.fixture == nullptr) return nullptr;
  if (kept.key != key) {
    ReleaseRowFixtures();
    return nullptr;
  }
  kept.row = state.name();
  return kept.fixture.get();
}

RowFixture* KeepRowFixture(const benchmark::State& state, const std::string& key,
                           std::unique_ptr<RowFixture> fixture) {
  ReleaseRowFixtures();
  KeptFixture& kept = Kept();
  kept.row = state.name();
  kept.key = key;
  kept.fixture = std::move(fixture);
  return kept.fixture.get();
}

void ReleaseRowFixtures() {
  KeptFixture& kept = Kept();
  kept.fixture.reset();
  kept.key.clear();
  kept.row.clear();
}

std::vector<std::string> KeepTracepointsForRow(const benchmark::State& state,
                                               const std::vector<std::string>& tracepoints) {
  if (tracepoints.empty()) return {};
  const std::string key = absl::StrCat("tracepoints ", absl::StrJoin(tracepoints, ","));
  absl::StatusOr<KeptTracepoints*> kept = RowFixtureFor<KeptTracepoints>(
      state, key, [&]() -> absl::StatusOr<std::unique_ptr<KeptTracepoints>> {
        absl::StatusOr<std::unique_ptr<TracepointKeepAlive>> keeper =
            TracepointKeepAlive::Open(tracepoints);
        if (!keeper.ok()) return keeper.status();
        if ((*keeper)->held().empty()) return absl::UnavailableError("none of them kept");
        auto fixture = std::make_unique<KeptTracepoints>();
        fixture->keeper = *std::move(keeper);
        return fixture;
      });
  return kept.ok() ? (*kept)->keeper->held() : std::vector<std::string>{};
}

pid_t RowTracepointsKeeper() {
  auto* kept = dynamic_cast<KeptTracepoints*>(Kept().fixture.get());
  return kept != nullptr ? kept->keeper->pid() : 0;
}

Attribution AttributionMode() {
  if (TimedAsked()) return Attribution::kTimed;
  bool on =
      attribution_flag.is_set() ? attribution_flag.bool_value() : !KernelPredatesAttribution();
  return on ? Attribution::kCountingPass : Attribution::kOff;
}

const char* AttributionName(Attribution mode) {
  switch (mode) {
    case Attribution::kOff:
      return "off";
    case Attribution::kCountingPass:
      return "counting_pass";
    case Attribution::kTimed:
      return "timed";
  }
  return "?";
}

std::unique_ptr<TracepointKeepAlive> KeepCountingTracepoints() {
  if (AttributionMode() != Attribution::kCountingPass) return nullptr;
  absl::StatusOr<std::unique_ptr<TracepointKeepAlive>> kept =
      TracepointKeepAlive::Open(CountingTracepoints());
  if (!kept.ok() || (*kept)->held().empty()) return nullptr;
  return *std::move(kept);
}

std::string CounterSourcesJson(const TracepointKeepAlive* kept) {
  std::string json = "{";
  auto add = [&json](absl::string_view name, absl::string_view source) {
    absl::StrAppend(&json, json.size() > 1 ? ", " : "", JsonString(name), ": ", JsonString(source));
  };
  const Attribution mode = AttributionMode();
  if (mode != Attribution::kOff) {
    std::unique_ptr<TaskCounters> probe = TaskCounters::Open(CounterOptions());
    const char* pass =
        mode == Attribution::kTimed ? " (during the timed iterations)" : " (the counting pass)";
    for (const CounterSource& source : probe->sources()) {
      std::string kept_here;  // the tracepoints of this source kept registered
      if (kept != nullptr) {
        for (const std::string& name : kept->held()) {
          // By system ("lock:"): the sources write lock:contention_begin/end as one.
          if (source.source.find(name.substr(0, name.find(':') + 1)) == std::string::npos) {
            continue;
          }
          absl::StrAppend(&kept_here, kept_here.empty() ? "" : ", ", name);
        }
      }
      if (!kept_here.empty()) {
        kept_here = absl::StrCat("; ", kept_here,
                                 " kept registered by an idle process of ours for the whole run");
      }
      add(TaskCounterName(source.counter), source.available
                                               ? absl::StrCat(source.source, pass, kept_here)
                                               : absl::StrCat("unavailable: ", source.source));
    }
  } else {
    for (TaskCounter counter : kAllTaskCounters) {
      add(TaskCounterName(counter),
          attribution_flag.is_set()
              ? "unavailable: --attribution=false"
              : "unavailable: off by default before Linux 6.4 (no ipi:ipi_send_cpu or "
                "csd:csd_queue_cpu); --attribution=true turns it on");
    }
  }
  add("ipis_system",
      "/proc/interrupts function-call IPIs (CAL) received by every CPU (the timed pass)");
  add("sys_us",
      "getrusage system time of this process (and reaped children where stated) (the timed "
      "pass)");
  return json + "}";
}

bool SkipIfError(benchmark::State& state, const absl::Status& status) {
  if (status.ok()) return false;
  // A skip is Google Benchmark's own (JSON "skipped", compare.py leaves the row out), not
  // an error; its console line already says "SKIPPED".
  if (IsEnvironmentLimitation(status)) {
    state.SkipWithMessage(std::string(status.message()));
  } else {
    state.SkipWithError(absl::StrCat("ERROR: ", status.ToString()));
  }
  return true;
}

namespace {

void SetSystemCounters(benchmark::State& state, const KernelCost& cost, double ops,
                       const std::string& unit) {
  if (ops <= 0) return;
  state.counters[absl::StrCat("ipis_system/", unit)] =
      static_cast<double>(cost.ipis.function_call) / ops;
  state.counters[absl::StrCat("sys_us/", unit)] = cost.system_seconds * 1e6 / ops;
}

void SetTaskCounters(benchmark::State& state, const TaskCounts& counts,
                     const TaskCounters& counters, double ops, const std::string& unit) {
  if (ops <= 0) return;
  for (TaskCounter counter : kAllTaskCounters) {
    if (!counters.available(counter)) continue;
    double value = static_cast<double>(counts.Count(counter));
    if (counter == TaskCounter::kLockWait) value /= 1000.0;  // ns -> us
    state.counters[absl::StrCat(TaskCounterName(counter), "/", unit)] = value / ops;
  }
  state.counters["count_ops"] = ops;
  // Only when it happened: lock figures are then lower bounds.
  if (counts.lock_records_lost > 0) {
    state.counters["lock_records_lost"] = static_cast<double>(counts.lock_records_lost);
  }
}

}  // namespace

BenchmarkPass::BenchmarkPass(benchmark::State& state, const PassOptions& options, bool counting,
                             bool attribute, int64_t count_iterations)
    : state_(state),
      options_(options),
      counting_(counting),
      attribute_(attribute),
      count_iterations_(count_iterations) {}

void BenchmarkPass::OpenCounters(std::vector<pid_t> existing_tasks) {
  if (meter_.has_value()) return;
  TaskCounters::Options counter_options = CounterOptions();
  if (attribute_ && !existing_tasks.empty()) {
    // Every named thread holds events of its own (an inherited copy needs no fd): 32
    // threads on 16 CPUs are ~1,800 fds, above the usual soft limit of 1,024.
    absl::StatusOr<ScopedFdLimit> limit = ScopedFdLimit::Ensure(
        TaskCounters::EventsPerTask(counter_options) * (existing_tasks.size() + 1));
    if (limit.ok()) {
      fd_limit_.emplace(*std::move(limit));
    } else {
      fd_limit_error_ = limit.status();
    }
  }
  counter_options.existing_tasks = std::move(existing_tasks);
  meter_.emplace(options_.include_children, attribute_, counter_options);
}

bool BenchmarkPass::Start() {
  OpenCounters();
  if (SkipIfError(fd_limit_error_)) return false;
  if (timed()) ResumeProfile();  // --profile: the timed region starts here
  return !SkipIfError(meter_->Start());
}

bool BenchmarkPass::Stop() {
  absl::StatusOr<KernelCost> cost = meter_->Stop();
  if (timed()) PauseProfile();
  if (SkipIfError(cost.status())) return false;
  cost_ += *cost;
  measured_ = true;
  return true;
}

BenchmarkPass::Iterator BenchmarkPass::begin() {
  Iterator it;
  it.pass_ = this;
  it.counting_ = counting_;
  if (timed()) {
    it.timed_.emplace(state_.begin());
    loop_start_ = std::chrono::steady_clock::now();
  } else {
    it.left_ = count_iterations_;
    counted_ = count_iterations_;
  }
  return it;
}

BenchmarkPass::Iterator BenchmarkPass::end() {
  Iterator it;
  it.counting_ = counting_;
  if (timed()) it.timed_.emplace(state_.end());
  return it;
}

void BenchmarkPass::TimedLoopEnded() {
  loop_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start_).count();
}

int64_t BenchmarkPass::iterations() const {
  return timed() ? static_cast<int64_t>(state_.iterations()) : counted_;
}

void BenchmarkPass::SetIterationTime(double seconds) {
  if (counting()) return;
  state_.SetIterationTime(seconds);
  manual_seconds_ += seconds;
}

bool BenchmarkPass::SkipIfError(const absl::Status& status) {
  if (status.ok()) return false;
  if (timed()) return perfscale::SkipIfError(state_, status);
  return perfscale::SkipIfError(
      state_, absl::Status(status.code(), absl::StrCat("counting pass: ", status.message())));
}

namespace {

// Whether Google Benchmark will report this call, decided as its runner (1.7.1,
// BenchmarkRunner::RunWarmUp, DoOneRepetition, ShouldReportIterationResults) decides.
// With --benchmark_min_warmup_time (the suite's repetitions ask for it) the first calls
// warm up, sized like the others, until one measures min_warmup_time; none is reported.
// Then, with min_time, the calls of the first repetition grow their iterations (at least
// +1 each, from the count the warm-up started with) until one measures min_time or has
// 1e9 iterations: that one is reported, the others are discarded; the later repetitions
// are one call each with its iterations. A counting pass of a discarded call is work no
// row shows (on the instruction clock, 179 passes for 102 rows with a 0.9 x min_time test).
// Measured means manual time where the plan set it (the very sum Google Benchmark makes),
// else the loop's real time, which starts and stops a hair after Google Benchmark's timer:
// hence 100 us of slack, so that a reported call is never left without its counts.
bool WillBeReported(double manual_seconds, double loop_seconds, int64_t iterations) {
  const RunControl& control = CurrentRunControl();
  if (control.min_time <= 0) return true;  // fixed iterations, or not planned
  struct Seen {
    bool warmed_up = false;
    int64_t last_iterations = 0;
  };
  static auto* seen = new std::map<std::string, Seen>;
  Seen& benchmark = (*seen)[control.name];
  const double measured = control.manual_time ? manual_seconds : loop_seconds;
  const double slack = control.manual_time ? 0 : 100e-6;
  if (control.min_warmup_time > 0 && !benchmark.warmed_up) {
    benchmark.warmed_up = measured >= control.min_warmup_time - slack;
    return false;
  }
  const bool repeated = benchmark.last_iterations == iterations;
  benchmark.last_iterations = iterations;
  constexpr int64_t kMaxIterations = 1000000000000;  // benchmark_runner.cc (1.9; 1e9 in 1.7)
  return repeated || iterations >= kMaxIterations || measured >= control.min_time - slack;
}

}  // namespace

int64_t CountingIterations(int64_t count_iterations, int64_t timed_iterations, double timed_ops) {
  const int64_t wanted = std::max<int64_t>(1, count_iterations);
  int64_t minimum = kMinCountingIterations;
  if (timed_ops > 0 && timed_iterations > 0) {
    const double ops_per_iteration = timed_ops / static_cast<double>(timed_iterations);
    minimum = std::clamp<int64_t>(
        static_cast<int64_t>(std::ceil(static_cast<double>(kMinCountingOps) / ops_per_iteration)),
        1, kMinCountingIterations);
  }
  return std::max(std::min(wanted, minimum), std::min(wanted, timed_iterations));
}

namespace {

// A pass's SetFigure values as counters, each name after `prefix`.
void SetFigures(benchmark::State& state, const std::map<std::string, double>& figures,
                absl::string_view prefix) {
  for (const auto& [name, value] : figures) state.counters[absl::StrCat(prefix, name)] = value;
}

}  // namespace

void RunPasses(benchmark::State& state, const PassOptions& options, const PassBody& body) {
  ReleaseUnlessRow(state.name());  // another row's fixture goes before this row's setup
  const Attribution mode = AttributionMode();
  BenchmarkPass timed(state, options, /*counting=*/false,
                      /*attribute=*/mode == Attribution::kTimed, 0);
  body(timed);
  if (state.skipped() || !timed.measured_) return;
  SetFigures(state, timed.figures_, "");
  SetSystemCounters(state, timed.cost_, timed.ops_, options.unit);
  if (mode == Attribution::kTimed) {
    SetFigures(state, timed.figures_, "count_");  // the counts came from its setup
    if (timed.cost_.tasks.has_value() && timed.meter_->task_counters() != nullptr) {
      SetTaskCounters(state, *timed.cost_.tasks, *timed.meter_->task_counters(), timed.ops_,
                      options.unit);
    }
    return;
  }
  if (mode == Attribution::kOff) return;
  if (!WillBeReported(timed.manual_seconds_, timed.loop_seconds_,
                      static_cast<int64_t>(state.iterations()))) {
    return;
  }
  const int64_t iterations =
      CountingIterations(options.count_iterations, state.iterations(), timed.ops_);
  BenchmarkPass counting(state, options, /*counting=*/true, /*attribute=*/true, iterations);
  // Whatever the body writes in this pass, the row's own figures are the timed pass's.
  benchmark::UserCounters timed_counters = state.counters;
  body(counting);
  state.counters = std::move(timed_counters);
  if (state.skipped() || !counting.measured_) return;
  SetFigures(state, counting.figures_, "count_");
  if (counting.cost_.tasks.has_value() && counting.meter_->task_counters() != nullptr) {
    SetTaskCounters(state, *counting.cost_.tasks, *counting.meter_->task_counters(), counting.ops_,
                    options.unit);
  }
}

}  // namespace perfscale
