#include "benchmarks/bench_support.h"

#include "absl/strings/str_cat.h"
#include "benchmarks/profile_support.h"
#include "lib/errno_status.h"

namespace perfscale {

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
  if (!cost.ok() || ops <= 0) return;
  state.counters[absl::StrCat("ipis/", unit)] = static_cast<double>(cost->ipis.function_call) / ops;
  state.counters[absl::StrCat("sys_us/", unit)] = cost->system_seconds * 1e6 / ops;
}

}  // namespace perfscale
