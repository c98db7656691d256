// What every family's tests share, in the two ways a family is tested:
//
// In process (a family's `*_family_test`): the family registers against perfscale's
// flags as the shared main has it do (flags parsed, then registration), Google Benchmark
// runs what it registered with a reporter that keeps every run, and the process must be
// left as it was found (testing/common/process_state.h).
//
// The binary (a family's `binary_test`): the real //benchmarks:<family> is run as a user
// runs it, its --benchmark_format=json output read back, and bad flag values must exit 2
// naming the flag before anything runs.
//
// Example (in process):
//   ASSERT_TRUE(RegisterFamily("breakpoint", {"--breakpoint_threads=2"}).ok());
//   std::vector<BenchmarkRun> runs;
//   EXPECT_TRUE(LeavesProcessAsFound([&] { runs = RunBenchmarks(); }));
//
// Example (the binary):
//   BinaryRun run = RunFamilyBinary("benchmarks/breakpoint", {"--breakpoint_threads=2"});
//   ASSERT_EQ(run.exit_code, 0) << run.err;
//   for (const BenchmarkResult& b : run.benchmarks) EXPECT_GT(b.Number("usecs/op"), 0);
#ifndef PERFSCALE_TESTING_COMMON_FAMILY_HARNESS_H_
#define PERFSCALE_TESTING_COMMON_FAMILY_HARNESS_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "benchmark/benchmark.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "testing/common/process_state.h"
#include "testing/common/run_command.h"

namespace perfscale {
namespace testing {

// ---- In process.

using BenchmarkRun = benchmark::BenchmarkReporter::Run;

// A row the library timed: neither skipped (SkipWithMessage) nor failed (SkipWithError).
inline bool Timed(const BenchmarkRun& run) {
  return run.skipped == benchmark::internal::NotSkipped;
}
inline bool Skipped(const BenchmarkRun& run) {
  return run.skipped == benchmark::internal::SkippedWithMessage;
}

// Keeps every run's report; prints nothing.
class CollectingReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    runs_.insert(runs_.end(), runs.begin(), runs.end());
  }
  const std::vector<Run>& runs() const { return runs_; }

 private:
  std::vector<Run> runs_;
};

// A mutable, null-terminated argv built from strings; argv[0] is the test's name.
class Argv {
 public:
  explicit Argv(std::vector<std::string> args);
  int* argc() { return &argc_; }
  char** argv() { return pointers_.data(); }

 private:
  std::vector<std::string> args_;
  std::vector<char*> pointers_;
  int argc_ = 0;
};

// Resets perfscale's flags, parses `flags` and registers the family named `family` (every
// linked family when empty), as the shared main does. The first error, if any.
absl::Status RegisterFamily(absl::string_view family, const std::vector<std::string>& flags);

// Google Benchmark's own flags (benchmark::Initialize); e.g. {"--benchmark_min_time=0.01"}.
void InitializeBenchmark(const std::vector<std::string>& flags);

// Runs the registered benchmarks `filter` selects (Google Benchmark's regex) and returns
// their reports; what the last row kept (a row fixture: bench_support.h) goes, as in main.
std::vector<BenchmarkRun> RunBenchmarks(const std::string& filter = ".");
// The names of the registered benchmarks, in registration order.
std::vector<std::string> ListBenchmarks();
// A filter that selects exactly `name`.
std::string ExactFilter(const std::string& name);

// Runs `body`, then compares the process with the state before it (fds, threads, children,
// affinity, RLIMIT_NOFILE), waiting up to `settle_ms` for exiting threads to leave.
::testing::AssertionResult LeavesProcessAsFound(const std::function<void()>& body,
                                                int settle_ms = 2000);

// ---- The binary.

// One entry of the JSON's "benchmarks".
struct BenchmarkResult {
  std::string name;
  bool error = false;    // "error_occurred": SkipWithError
  bool skipped = false;  // "skipped": SkipWithMessage, what the environment forbids
  std::string message;   // "error_message" or "skip_message", whichever the row has
  bool Timed() const { return !error && !skipped; }
  std::string label;
  std::string time_unit;
  std::map<std::string, double> numbers;  // every numeric field: counters, times, iterations

  bool Has(const std::string& key) const { return numbers.count(key) != 0; }
  // The number, or a test failure (and -1) when there is none.
  double Number(const std::string& key) const;
};

struct BinaryRun : CommandResult {
  absl::StatusOr<nlohmann::json> json = absl::UnknownError("not parsed");
  nlohmann::json context = nlohmann::json::object();  // the JSON's "context"
  std::vector<BenchmarkResult> benchmarks;            // in output order
  std::vector<std::string> names() const;
};

// The path of a family binary (a data dependency), e.g. "benchmarks/breakpoint".
std::string FamilyBinaryPath(absl::string_view binary);

// Runs the binary with `flags` plus --benchmark_format=json and reads the output; `json`
// holds why it could not be read.
BinaryRun RunFamilyBinary(absl::string_view binary, const std::vector<std::string>& flags);

// A usage error: `args` must make the binary exit 2, with `message` in stderr, before
// running anything (no benchmark name on stdout or stderr).
struct BadFlag {
  std::vector<std::string> args;
  std::string message;
};
// Checks each case, with `common` appended to its args.
void ExpectUsageErrors(absl::string_view binary, const std::vector<BadFlag>& cases,
                       const std::vector<std::string>& common = {});

}  // namespace testing
}  // namespace perfscale

#endif  // PERFSCALE_TESTING_COMMON_FAMILY_HARNESS_H_
