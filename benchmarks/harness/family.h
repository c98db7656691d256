// How a benchmark family joins a binary. Families register their benchmarks only after
// the command line is parsed, because their argument lists depend on flags and on the
// machine (online CPUs, breakpoint slots). A family that rejects its flags makes the
// binary exit non-zero before anything runs.
//
// Example (at namespace scope in a family's .cc):
//   absl::Status RegisterBreakpointFamily() { ...benchmark::RegisterBenchmark(...)... }
//   PERFSCALE_FAMILY(breakpoint, RegisterBreakpointFamily);
#ifndef PERFSCALE_BENCHMARKS_HARNESS_FAMILY_H_
#define PERFSCALE_BENCHMARKS_HARNESS_FAMILY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "benchmarks/harness/flags.h"

namespace perfscale {

struct Family {
  std::string name;
  absl::Status (*register_benchmarks)();
};

// Returns a dummy so it can initialize a static.
int AddFamily(const char* name, absl::Status (*register_benchmarks)());
const std::vector<Family>& Families();

// True under `--quick` (tools/perfscale run --quick): families shrink their default
// parameter lists to a smoke run of seconds. Explicit flags still win.
bool QuickRun();

// What a family's flag defaults depend on: --quick, and PlannedCpuCount().
FlagEnv FamilyFlagEnv();

// True when this run will execute the benchmark registered as `name`: it is not only
// listing (--benchmark_list_tests) and --benchmark_filter selects the name (Google
// Benchmark's rules: a POSIX extended regex searched in the name, a leading '-' excludes).
// A family checks what it needs from the machine (a writable directory, ...) only for
// benchmarks that will run, so a run of other families never fails on it.
bool WillRun(const std::string& name);

// Set by main once the flags are parsed; until then every benchmark will run.
void SetRunSelection(const std::string& filter, bool list_only);

// The CPUs families size their default parameter lists by: the online CPUs, or
// 0..N-1 under `--plan_cpus=N` (only with --plan: a plan for another machine's size).
int PlannedCpuCount();
std::vector<int> PlannedCpus();
bool PlanCpusGiven();
// A usage error when --plan_cpus is bad, or given without --plan (`plan_only`).
absl::Status CheckPlanCpus(bool plan_only);

}  // namespace perfscale

#define PERFSCALE_FAMILY(name, fn) \
  [[maybe_unused]] static const int perfscale_family_##name = ::perfscale::AddFamily(#name, fn)

#endif  // PERFSCALE_BENCHMARKS_HARNESS_FAMILY_H_
