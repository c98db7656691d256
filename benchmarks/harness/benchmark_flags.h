// Checks the values of Google Benchmark's own flags before Google Benchmark sees them:
// it aborts (CHECK failure) on some bad values, e.g. --benchmark_repetitions=-1 or an
// unwritable --benchmark_out, and a nightly job deserves a message and exit status 2.
//
// Example:
//   if (absl::Status s = perfscale::CheckBenchmarkFlags({argv + 1, argv + argc}); !s.ok())
//     return 2;
#ifndef PERFSCALE_BENCHMARKS_HARNESS_BENCHMARK_FLAGS_H_
#define PERFSCALE_BENCHMARKS_HARNESS_BENCHMARK_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace perfscale {

// InvalidArgument naming the first flag whose value Google Benchmark would reject or
// abort on. Flags it does not know are left for perfscale's own parser.
absl::Status CheckBenchmarkFlags(const std::vector<std::string>& args);

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_HARNESS_BENCHMARK_FLAGS_H_
