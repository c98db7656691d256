// What every family does the same way around Google Benchmark: turning a Status into a
// skip or an error, and reporting the kernel's cost per operation as counters.
//
// Example:
//   perfscale::KernelCostMeter meter;
//   if (!perfscale::StartOrSkip(state, meter)) return;
//   for (auto _ : state) { ... }
//   perfscale::ReportKernelCost(state, meter, /*ops=*/state.iterations());
#ifndef PERFSCALE_BENCHMARKS_BENCH_SUPPORT_H_
#define PERFSCALE_BENCHMARKS_BENCH_SUPPORT_H_

#include <string>

#include "absl/status/status.h"
#include "benchmark/benchmark.h"
#include "lib/kernel_cost.h"

namespace perfscale {

// Marks the benchmark skipped (what the environment forbids: "SKIPPED: <reason>") or
// failed (anything else: "ERROR: <status>"). Returns true when `status` was not ok.
bool SkipIfError(benchmark::State& state, const absl::Status& status);

// Also resumes the --profile sampling (profile_support.h) and ReportKernelCost pauses it.
bool StartOrSkip(benchmark::State& state, KernelCostMeter& meter);

// Sets "ipis/<unit>" (function-call IPIs, system-wide) and "sys_us/<unit>" (this
// process's system time) per operation.
void ReportKernelCost(benchmark::State& state, KernelCostMeter& meter, double ops,
                      const std::string& unit = "op");

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_BENCH_SUPPORT_H_
