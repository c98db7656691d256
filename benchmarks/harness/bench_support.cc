#include "benchmarks/harness/bench_support.h"

#include <sys/utsname.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "benchmarks/harness/profile_support.h"
#include "lib/errno_status.h"
#include "lib/flags.h"
#include "lib/json_string.h"

namespace perfscale {
namespace {

Flag& attribution_flag = DefineFlag(
    FlagInfo{
        "attribution",
        "suite",
        "count what the benchmark's own tasks cause (ipis_sent, xcalls, lock_contended, "
        "lock_wait_us, ctx_switches, cpu_migrations, page_faults per op)",
        "true or false",
        "true (false before Linux 6.4, and for BM_BreakpointThread)",
        "",
        /*is_bool=*/true,
    },
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
bool KernelPredatesAttribution() {
  struct utsname kernel;
  int major = 0, minor = 0;
  if (uname(&kernel) != 0 || std::sscanf(kernel.release, "%d.%d", &major, &minor) != 2) {
    return false;
  }
  return major < 6 || (major == 6 && minor < 4);
}

bool AttributionOn() {
  return attribution_flag.is_set() ? attribution_flag.bool_value() : !KernelPredatesAttribution();
}

}  // namespace

KernelCostMeter BenchmarkMeter(bool include_children, bool attribute_by_default) {
  bool attribute =
      attribution_flag.is_set() ? AttributionOn() : attribute_by_default && AttributionOn();
  return KernelCostMeter(include_children, attribute, CounterOptions());
}

std::string CounterSourcesJson() {
  std::string json = "{";
  auto add = [&json](absl::string_view name, absl::string_view source) {
    absl::StrAppend(&json, json.size() > 1 ? ", " : "", JsonString(name), ": ", JsonString(source));
  };
  if (AttributionOn()) {
    std::unique_ptr<TaskCounters> probe = TaskCounters::Open(CounterOptions());
    for (const CounterSource& source : probe->sources()) {
      add(TaskCounterName(source.counter),
          source.available ? source.source : absl::StrCat("unavailable: ", source.source));
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
  add("ipis_system", "/proc/interrupts function-call IPIs (CAL) received by every CPU");
  add("sys_us", "getrusage system time of this process (and reaped children where stated)");
  return json + "}";
}

bool SkipIfError(benchmark::State& state, const absl::Status& status) {
  if (status.ok()) return false;
  std::string message = IsEnvironmentLimitation(status)
                            ? absl::StrCat("SKIPPED: ", status.message())
                            : absl::StrCat("ERROR: ", status.ToString());
  state.SkipWithError(message.c_str());
  return true;
}

bool StartOrSkip(benchmark::State& state, KernelCostMeter& meter) {
  ResumeProfile();  // --profile: the timed region starts here
  return !SkipIfError(state, meter.Start());
}

void ReportKernelCost(benchmark::State& state, KernelCostMeter& meter, double ops,
                      const std::string& unit) {
  absl::StatusOr<KernelCost> cost = meter.Stop();
  PauseProfile();
  if (!cost.ok()) return;
  SetKernelCostCounters(state, *cost, meter.task_counters(), ops, unit);
}

void SetKernelCostCounters(benchmark::State& state, const KernelCost& cost,
                           const TaskCounters* counters, double ops, const std::string& unit) {
  if (ops <= 0) return;
  state.counters[absl::StrCat("ipis_system/", unit)] =
      static_cast<double>(cost.ipis.function_call) / ops;
  state.counters[absl::StrCat("sys_us/", unit)] = cost.system_seconds * 1e6 / ops;
  if (counters == nullptr || !cost.tasks.has_value()) return;
  for (TaskCounter counter : kAllTaskCounters) {
    if (!counters->available(counter)) continue;
    double value = static_cast<double>(cost.tasks->Count(counter));
    if (counter == TaskCounter::kLockWait) value /= 1000.0;  // ns -> us
    state.counters[absl::StrCat(TaskCounterName(counter), "/", unit)] = value / ops;
  }
  // Only when it happened: lock figures are then lower bounds.
  if (cost.tasks->lock_records_lost > 0) {
    state.counters["lock_records_lost"] = static_cast<double>(cost.tasks->lock_records_lost);
  }
}

}  // namespace perfscale
