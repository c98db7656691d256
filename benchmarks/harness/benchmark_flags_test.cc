// Google Benchmark aborts on some values of its own flags; CheckBenchmarkFlags must turn
// each of those into a message naming the flag, and let good values through untouched.
#include "benchmarks/harness/benchmark_flags.h"

#include "gtest/gtest.h"

namespace perfscale {
namespace {

void ExpectRejected(const std::string& arg, const std::string& flag) {
  absl::Status status = CheckBenchmarkFlags({arg});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << arg;
  EXPECT_NE(status.message().find(flag), absl::string_view::npos) << status.message();
}

TEST(BenchmarkFlagsTest, RejectsWhatGoogleBenchmarkWouldAbortOn) {
  ExpectRejected("--benchmark_repetitions=-1", "--benchmark_repetitions");
  ExpectRejected("--benchmark_repetitions=0", "--benchmark_repetitions");
  ExpectRejected("--benchmark_repetitions=lots", "--benchmark_repetitions");
  ExpectRejected("--benchmark_repetitions=99999999999999", "--benchmark_repetitions");
  ExpectRejected("--benchmark_min_time=abc", "--benchmark_min_time");
  ExpectRejected("--benchmark_min_time=-1", "--benchmark_min_time");
  ExpectRejected("--benchmark_min_time=nan", "--benchmark_min_time");
  ExpectRejected("--benchmark_min_time=100x", "--benchmark_min_time");  // plans read seconds
  ExpectRejected("--benchmark_min_time=0.5ss", "--benchmark_min_time");
  ExpectRejected("--benchmark_min_warmup_time=0.5s", "--benchmark_min_warmup_time");
  ExpectRejected("--benchmark_format=xml", "--benchmark_format");
  ExpectRejected("--benchmark_out_format=", "--benchmark_out_format");
  ExpectRejected("--benchmark_out=/nonexistent-dir/x.json", "--benchmark_out");
  ExpectRejected("--benchmark_out=", "--benchmark_out");
  ExpectRejected("--benchmark_color=purple", "--benchmark_color");
}

TEST(BenchmarkFlagsTest, RejectsWhatGoogleBenchmarkWouldIgnoreOrMisread) {
  // Each of these once exited 0 or 1 with Google Benchmark's own words, or silently ran
  // something other than what was asked.
  ExpectRejected("--benchmark_time_unit=fortnight", "--benchmark_time_unit");
  ExpectRejected("--benchmark_filter=[", "--benchmark_filter");
  ExpectRejected("--benchmark_filter=-(", "--benchmark_filter");
  ExpectRejected("--benchmark_list_tests=maybe", "--benchmark_list_tests");
  ExpectRejected("--benchmark_enable_random_interleaving=sometimes",
                 "--benchmark_enable_random_interleaving");
  ExpectRejected("--benchmark_out=/proc/x", "--benchmark_out");
  ExpectRejected("--benchmark_out=/tmp", "--benchmark_out");
}

TEST(BenchmarkFlagsTest, LetsGoodValuesAndOtherFlagsThrough) {
  EXPECT_TRUE(CheckBenchmarkFlags({"--benchmark_repetitions=10", "--benchmark_min_time=0.5",
                                   "--benchmark_min_time=0.5s", "--benchmark_format=json",
                                   "--benchmark_out_format=csv", "--benchmark_out=/tmp/x.json",
                                   "--benchmark_out=x.json", "--benchmark_color=false",
                                   "--benchmark_filter=-Thread|Enable$", "--benchmark_time_unit=ms",
                                   "--benchmark_list_tests=false", "--breakpoint_breakpoints=-1",
                                   "--benchmark_list_tests", "positional"})
                  .ok());
  EXPECT_TRUE(CheckBenchmarkFlags({}).ok());
}

}  // namespace
}  // namespace perfscale
