// What every family does the same way around Google Benchmark: turning a Status into a
// skip or an error, and reporting the kernel's cost per operation as counters.
//
// Example:
//   perfscale::KernelCostMeter meter = perfscale::BenchmarkMeter();  // before any thread
//   ... create the benchmark's threads or processes ...
//   if (!perfscale::StartOrSkip(state, meter)) return;
//   for (auto _ : state) { ... }
//   perfscale::ReportKernelCost(state, meter, /*ops=*/state.iterations());
#ifndef PERFSCALE_BENCHMARKS_HARNESS_BENCH_SUPPORT_H_
#define PERFSCALE_BENCHMARKS_HARNESS_BENCH_SUPPORT_H_

#include <string>

#include "absl/status/status.h"
#include "benchmark/benchmark.h"
#include "lib/kernel_cost.h"

namespace perfscale {

// Marks the benchmark skipped (what the environment forbids: "SKIPPED: <reason>") or
// failed (anything else: "ERROR: <status>"). Returns true when `status` was not ok.
bool SkipIfError(benchmark::State& state, const absl::Status& status);

// The meter of every family: with the attributed counters of lib/task_counters.h unless
// --attribution=false. Construct it before the benchmark creates the threads or processes
// whose cost it should count: only tasks created afterwards inherit the counters.
// `attribute_by_default` false: only with an explicit --attribution=true (for benchmarks
// whose figure the inherited counters would change, e.g. thread creation).
KernelCostMeter BenchmarkMeter(bool include_children = false, bool attribute_by_default = true);

// The run context's "counter_sources": a JSON object from each counter's name prefix
// (ipis_sent, ..., ipis_system, sys_us) to where it came from, or "unavailable: why".
std::string CounterSourcesJson();

// Also resumes the --profile sampling (profile_support.h) and ReportKernelCost pauses it.
bool StartOrSkip(benchmark::State& state, KernelCostMeter& meter);

// Sets per operation: "ipis_system/<unit>" (function-call IPIs received by every CPU,
// /proc/interrupts), "sys_us/<unit>" (this process's system time) and, when the meter
// attributes, each available counter of lib/task_counters.h ("ipis_sent/<unit>", ...).
void ReportKernelCost(benchmark::State& state, KernelCostMeter& meter, double ops,
                      const std::string& unit = "op");

// The same from a cost summed over several Start/Stop windows.
void SetKernelCostCounters(benchmark::State& state, const KernelCost& cost,
                           const TaskCounters* counters, double ops, const std::string& unit);

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_HARNESS_BENCH_SUPPORT_H_
