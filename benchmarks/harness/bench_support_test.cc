// RunPasses: the timed pass runs with no perf event of ours on its tasks (the only perf
// fds open are KeepCountingTracepoints' own, bound to its idle process), the counting pass
// with the inherited counters, and the row gets the timed pass's figures with the
// counting pass's counts (count_ops says how many operations); --attribution=timed and
// false do what they say. The body lists this process's perf event fds while it iterates.
#include "benchmarks/harness/bench_support.h"

#include <algorithm>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "lib/flags.h"
#include "testing/common/family_harness.h"
#include "testing/common/process_state.h"

namespace perfscale {
namespace {

using ::perfscale::testing::BenchmarkRun;

struct Seen {
  int timed_fds = -1;  // perf fds open during the timed iterations
  std::vector<int> timed_fd_list;
  int counting_fds = -1;  // during the counting pass; -1: it did not run
  int64_t counting_iterations = 0;
};

Seen seen;

void BM_Passes(benchmark::State& state) {
  PassOptions options;
  options.count_iterations = 7;
  RunPasses(state, options, [&](BenchmarkPass& pass) {
    pass.OpenCounters();
    std::thread task([] {});  // a task created after the counters: it inherits them
    task.join();
    if (!pass.Start()) return;
    int fds = -1;
    std::vector<int> fd_list;
    for (auto _ : pass) {
      fds = ::perfscale::testing::CountPerfEventFds();
      fd_list = ::perfscale::testing::PerfEventFds();
    }
    if (!pass.Stop()) return;
    if (pass.timed()) seen.timed_fd_list = fd_list;
    pass.SetOps(2.0 * static_cast<double>(pass.iterations()));
    (pass.timed() ? seen.timed_fds : seen.counting_fds) = fds;
    if (pass.counting()) seen.counting_iterations = pass.iterations();
    state.counters["pass"] = pass.timed() ? 1 : 2;  // the timed pass's must stay
  });
}
BENCHMARK(BM_Passes)->Iterations(50);

void Parse(const std::vector<std::string>& flags) {
  ResetFlagsForTest();
  ::perfscale::testing::Argv argv(flags);
  EXPECT_TRUE(ParseFlags(*argv.argc(), argv.argv()).ok());
}

// Runs BM_Passes with the flags already parsed.
BenchmarkRun RunParsed() {
  seen = Seen{};
  std::vector<BenchmarkRun> runs = ::perfscale::testing::RunBenchmarks("BM_Passes");
  EXPECT_EQ(runs.size(), 1u);
  return runs.empty() ? BenchmarkRun() : runs[0];
}

BenchmarkRun RunWith(const std::vector<std::string>& flags) {
  Parse(flags);
  return RunParsed();
}

bool CountersOpen() {
  std::unique_ptr<TaskCounters> probe = TaskCounters::Open();
  return ::perfscale::testing::CountPerfEventFds() > 0;
}

TEST(RunPasses, TimesWithoutPerfEventsAndCountsInAPassOfItsOwn) {
  if (!CountersOpen()) GTEST_SKIP() << "no perf events here: nothing to keep out of timing";
  BenchmarkRun run = RunWith({"--attribution=true"});
  EXPECT_EQ(AttributionMode(), Attribution::kCountingPass);
  EXPECT_STREQ(AttributionName(AttributionMode()), "counting_pass");
  EXPECT_EQ(seen.timed_fds, 0) << "a perf event was open while timing";
  EXPECT_GT(seen.counting_fds, 0);
  EXPECT_EQ(seen.counting_iterations, 7);  // count_iterations, below the timed 50
  EXPECT_EQ(run.iterations, 50);
  EXPECT_EQ(run.counters.at("pass").value, 1);
  EXPECT_EQ(run.counters.at("count_ops").value, 14);  // SetOps of the counting pass
  ASSERT_TRUE(run.counters.count("ctx_switches/op"));
  EXPECT_TRUE(run.counters.count("ipis_system/op"));  // the timed pass's
  EXPECT_TRUE(run.counters.count("sys_us/op"));
}

// As main runs the suite: the counting tracepoints kept registered by an idle process.
// Every perf fd open while timing must be the keeper's (a counter on the measured tasks
// would be one more), and the keeper's events count nothing of the measured tasks.
TEST(RunPasses, KeptTracepointsAreTheOnlyPerfEventsWhileTiming) {
  if (!CountersOpen()) GTEST_SKIP() << "no perf events here";
  Parse({"--attribution=true"});
  std::unique_ptr<TracepointKeepAlive> kept = KeepCountingTracepoints();
  if (kept == nullptr) GTEST_SKIP() << "no counting tracepoint could be kept here";
  EXPECT_NE(kept->pid(), getpid());
  std::vector<int> kept_fds = kept->fds();
  std::sort(kept_fds.begin(), kept_fds.end());
  BenchmarkRun run = RunParsed();
  EXPECT_EQ(seen.timed_fd_list, kept_fds) << "a perf event other than the keeper's while timing";
  EXPECT_GT(seen.counting_fds, static_cast<int>(kept_fds.size()));
  EXPECT_TRUE(run.counters.count("ctx_switches/op"));
  absl::StatusOr<std::vector<uint64_t>> counts = kept->Counts();
  ASSERT_TRUE(counts.ok()) << counts.status();
  for (uint64_t count : *counts) EXPECT_EQ(count, 0u);
  Parse({"--attribution=false"});
  EXPECT_EQ(KeepCountingTracepoints(), nullptr) << "kept with the counters off";
  Parse({"--attribution=timed"});
  EXPECT_EQ(KeepCountingTracepoints(), nullptr) << "kept with the counters timed";
  ResetFlagsForTest();
}

TEST(RunPasses, TimedModeCountsDuringTheTimedIterations) {
  if (!CountersOpen()) GTEST_SKIP() << "no perf events here";
  BenchmarkRun run = RunWith({"--attribution=timed"});
  EXPECT_STREQ(AttributionName(AttributionMode()), "timed");
  EXPECT_GT(seen.timed_fds, 0);
  EXPECT_EQ(seen.counting_fds, -1) << "no counting pass in the timed mode";
  EXPECT_EQ(run.counters.at("count_ops").value, 100);  // the timed pass's 50 x 2
  EXPECT_TRUE(run.counters.count("ctx_switches/op"));
}

TEST(RunPasses, OffLeavesTheCountsOut) {
  BenchmarkRun run = RunWith({"--attribution=false"});
  EXPECT_STREQ(AttributionName(AttributionMode()), "off");
  EXPECT_EQ(seen.timed_fds, 0);
  EXPECT_EQ(seen.counting_fds, -1);
  EXPECT_FALSE(run.counters.count("count_ops"));
  EXPECT_FALSE(run.counters.count("ctx_switches/op"));
  EXPECT_TRUE(run.counters.count("sys_us/op"));
}

TEST(RunPasses, LeavesTheProcessAsFound) {
  EXPECT_TRUE(::perfscale::testing::LeavesProcessAsFound([] { RunWith({"--attribution=true"}); }));
  // The keeper's thread and events go with it.
  EXPECT_TRUE(::perfscale::testing::LeavesProcessAsFound([] {
    Parse({"--attribution=true"});
    std::unique_ptr<TracepointKeepAlive> kept = KeepCountingTracepoints();
    RunParsed();
  }));
}

TEST(AttributionFlag, TakesBooleansAndTimedOnly) {
  ResetFlagsForTest();
  ::perfscale::testing::Argv argv({"--attribution=sometimes"});
  absl::Status parsed = ParseFlags(*argv.argc(), argv.argv());
  EXPECT_FALSE(parsed.ok());
  EXPECT_NE(parsed.message().find("allowed: true, false or timed"), std::string::npos)
      << parsed.message();
  ResetFlagsForTest();
}

}  // namespace
}  // namespace perfscale
