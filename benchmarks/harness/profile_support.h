// `--profile`: a kernel and user profile of every benchmark's timed region, the way the
// seed mails explain their figures (`perf record -g` + `perf report --children`).
//
// Families register through RegisterNamedBenchmark, which opens a CpuProfiler (disabled)
// before the benchmark function runs, so every thread and process the benchmark creates
// inherits it. StartOrSkip (bench_support) resumes it where timing starts;
// ReportKernelCost, or PauseProfile where a family has no such call, pauses it. The
// samples of every call of one benchmark (Google Benchmark's sizing runs and
// repetitions) are added up under its name. At exit the binary writes the top symbols of
// each benchmark, self and children shares, to the file named by the run's JSON context
// key `profile_file`, and prints the top of each to stderr.
//
// With --profile off (the default) all of this is one flag test per call.
//
// Example (a family's registration):
//   perfscale::RegisterNamedBenchmark(name, BM_BreakpointEnable, params)->UseRealTime();
#ifndef PERFSCALE_BENCHMARKS_HARNESS_PROFILE_SUPPORT_H_
#define PERFSCALE_BENCHMARKS_HARNESS_PROFILE_SUPPORT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "benchmark/benchmark.h"

namespace perfscale {

// Profiles (when --profile is on) every call of the benchmark, under `name`.
class ProfileScope {
 public:
  explicit ProfileScope(const std::string& name);
  ~ProfileScope();
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  std::string name_;
};

template <typename Fn, typename... Args>
benchmark::internal::Benchmark* RegisterNamedBenchmark(const std::string& name, Fn fn,
                                                       Args... args) {
  return benchmark::RegisterBenchmark(name.c_str(), [name, fn, args...](benchmark::State& state) {
    ProfileScope profile(name);
    fn(state, args...);
  });
}

// Start and end of the timed region; no-ops unless a profile is open.
void ResumeProfile();
void PauseProfile();

// After perfscale's flags are parsed: checks --profile's flags, and when profiling is
// on, records the output file (`args`: the command line as given, for --benchmark_out)
// in the run context. InvalidArgument names the flag.
absl::Status SetUpProfiling(const std::vector<std::string>& args);

// Writes the profile file; ok (and nothing written) when --profile is off.
absl::Status FinishProfiling();

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_HARNESS_PROFILE_SUPPORT_H_
