#include "benchmarks/bench_support.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "benchmarks/profile_support.h"
#include "lib/errno_status.h"
#include "lib/flags.h"

namespace perfscale {
namespace {

Flag& attribution_flag =
    DefineBoolFlag("attribution", true,
                   "count what the benchmark's own tasks cause (ipis_sent, xcalls, lock_contended, "
                   "lock_wait_us, ctx_switches, cpu_migrations, page_faults per op)");

bool AttributionOn() { return attribution_flag.bool_value(); }

std::string JsonString(absl::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

KernelCostMeter BenchmarkMeter(bool include_children, bool attribute_by_default) {
  bool attribute = attribution_flag.is_set() ? AttributionOn() : attribute_by_default;
  return KernelCostMeter(include_children, attribute);
}

std::string CounterSourcesJson() {
  std::string json = "{";
  auto add = [&json](absl::string_view name, absl::string_view source) {
    absl::StrAppend(&json, json.size() > 1 ? ", " : "", JsonString(name), ": ", JsonString(source));
  };
  if (AttributionOn()) {
    std::unique_ptr<TaskCounters> probe = TaskCounters::Open();
    for (const CounterSource& source : probe->sources()) {
      add(TaskCounterName(source.counter),
          source.available ? source.source : absl::StrCat("unavailable: ", source.source));
    }
  } else {
    for (TaskCounter counter : kAllTaskCounters) {
      add(TaskCounterName(counter), "unavailable: --attribution=false");
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
