// RunPasses: the timed pass runs with no perf event of ours on its tasks (the only perf
// fds open are KeepCountingTracepoints' own, bound to its idle process), the counting pass
// with the inherited counters, and the row gets the timed pass's figures with the
// counting pass's counts (count_ops says how many operations); --attribution=timed and
// false do what they say. The body lists this process's perf event fds while it iterates.
// Row fixtures (KeepTracepointsForRow among them): kept across a row's calls and for the
// rows that ask for the same, let go before another row's setup.
#include "benchmarks/harness/bench_support.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmarks/harness/flags.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/capabilities.h"
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
    pass.SetFigure("setup", pass.timed() ? 3 : 4);
  });
}
BENCHMARK(BM_Passes)->Iterations(50);

// A counting pass on the timed pass's threads (as BM_UprobeHit's): every named thread
// holds counting events of its own.
constexpr int kExistingThreads = 40;

// kExistingThreads threads that wait until destroyed; tids() once all have started.
class WaitingThreads {
 public:
  explicit WaitingThreads(int count) {
    for (int i = 0; i < count; ++i) {
      threads_.emplace_back([this] {
        std::unique_lock<std::mutex> lock(mu_);
        tids_.push_back(static_cast<pid_t>(gettid()));
        started_.notify_all();
        released_.wait(lock, [this] { return release_; });
      });
    }
  }
  ~WaitingThreads() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      release_ = true;
    }
    released_.notify_all();
    for (std::thread& thread : threads_) thread.join();
  }
  std::vector<pid_t> tids() {
    std::unique_lock<std::mutex> lock(mu_);
    started_.wait(lock, [this] { return tids_.size() == threads_.size(); });
    return tids_;
  }

 private:
  std::mutex mu_;
  std::condition_variable started_, released_;
  bool release_ = false;
  std::vector<pid_t> tids_;
  std::vector<std::thread> threads_;
};

void BM_ExistingThreads(benchmark::State& state) {
  PassOptions options;
  options.count_iterations = 3;
  std::unique_ptr<WaitingThreads> threads;
  RunPasses(state, options, [&](BenchmarkPass& pass) {
    if (pass.timed()) {
      threads = std::make_unique<WaitingThreads>(kExistingThreads);
    } else {
      pass.OpenCounters(threads->tids());
    }
    if (!pass.Start()) return;
    for (auto _ : pass) {
    }
    if (!pass.Stop()) return;
    pass.SetOps(static_cast<double>(pass.iterations()));
  });
}
BENCHMARK(BM_ExistingThreads)->Iterations(10);

TEST(CountingIterations, FollowsTheTimedPassOnlyAboveTheMinimum) {
  EXPECT_EQ(CountingIterations(200, 1000), 200);  // capped by count_iterations
  EXPECT_EQ(CountingIterations(200, 37), 37);     // by the timed pass: a slow row
  EXPECT_EQ(CountingIterations(200, 31), 31);
  // Timed 1, 2 or 3 iterations: one pass length, however many were timed.
  EXPECT_EQ(CountingIterations(200, 1), kMinCountingIterations);
  EXPECT_EQ(CountingIterations(200, 3), kMinCountingIterations);
  // A family asking for fewer gets exactly what it asked for.
  EXPECT_EQ(CountingIterations(2, 1), 2);
  EXPECT_EQ(CountingIterations(7, 50), 7);
  EXPECT_EQ(CountingIterations(0, 50), 1);
}

TEST(CountingIterations, TheMinimumIsInOperations) {
  // One operation an iteration (a toggle): 16 iterations, as before.
  EXPECT_EQ(CountingIterations(200, 1, 1.0), kMinCountingIterations);
  EXPECT_EQ(CountingIterations(200, 3, 3.0), kMinCountingIterations);
  // A thousand hits an iteration: one iteration already holds 16 operations.
  EXPECT_EQ(CountingIterations(20, 1, 1000.0), 1);
  EXPECT_EQ(CountingIterations(20, 10, 10000.0), 10);  // still no more than was timed
  // Five operations an iteration: four iterations make 20 >= 16.
  EXPECT_EQ(CountingIterations(200, 1, 5.0), 4);
  // A pass that said nothing of its operations keeps the iteration minimum.
  EXPECT_EQ(CountingIterations(200, 1, 0.0), kMinCountingIterations);
  // A fraction of an operation an iteration still asks for no more than 16 iterations.
  EXPECT_EQ(CountingIterations(200, 4, 1.0), kMinCountingIterations);
}

rlimit FileLimit() {
  rlimit files{};
  EXPECT_EQ(getrlimit(RLIMIT_NOFILE, &files), 0);
  return files;
}

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
  EXPECT_EQ(run.counters.at("setup").value, 3);        // SetFigure of each pass, the
  EXPECT_EQ(run.counters.at("count_setup").value, 4);  // counting pass's named so
  EXPECT_EQ(run.counters.at("count_ops").value, 14);   // SetOps of the counting pass
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
  EXPECT_EQ(run.counters.at("count_setup").value, 3);  // and its setup
  EXPECT_TRUE(run.counters.count("ctx_switches/op"));
}

TEST(RunPasses, OffLeavesTheCountsOut) {
  BenchmarkRun run = RunWith({"--attribution=false"});
  EXPECT_STREQ(AttributionName(AttributionMode()), "off");
  EXPECT_EQ(seen.timed_fds, 0);
  EXPECT_EQ(seen.counting_fds, -1);
  EXPECT_FALSE(run.counters.count("count_ops"));
  EXPECT_EQ(run.counters.at("setup").value, 3);
  EXPECT_FALSE(run.counters.count("count_setup"));
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

// 41 tasks x a dozen events are more fds than a soft limit just above what is open: the
// counting pass raises it for its events, and puts it back.
TEST(RunPasses, ExistingThreadsGetTheFdsTheirEventsNeed) {
  if (!CountersOpen()) GTEST_SKIP() << "no perf events here";
  Parse({"--attribution=true"});
  const rlimit before = FileLimit();
  rlimit low = before;
  low.rlim_cur = static_cast<rlim_t>(*CountOpenFds() + 64);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<BenchmarkRun> runs = ::perfscale::testing::RunBenchmarks("BM_ExistingThreads");
  const rlimit after = FileLimit();
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &before), 0);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_TRUE(::perfscale::testing::Timed(runs[0])) << runs[0].skip_message;
  EXPECT_EQ(runs[0].counters.at("count_ops").value, 3);
  // Counters with no fallback (ctx_switches has getrusage's): each needs its 41 events.
  EXPECT_TRUE(runs[0].counters.count("xcalls/op"));
  EXPECT_TRUE(runs[0].counters.count("lock_contended/op"));
  EXPECT_EQ(after.rlim_cur, low.rlim_cur);
}

// Where the hard limit is too low, the row is skipped (the machine's limit, not a fault)
// saying how to raise it. In a child of
// its own: a hard limit once lowered is raised again only with CAP_SYS_RESOURCE.
TEST(RunPasses, ExistingThreadsAboveTheHardFdLimitSkipTheRowSayingHow) {
  if (!CountersOpen()) GTEST_SKIP() << "no perf events here";
  Parse({"--attribution=true"});
  EXPECT_EXIT(
      {
        rlimit low = FileLimit();
        low.rlim_cur = low.rlim_max = static_cast<rlim_t>(*CountOpenFds() + 64);
        if (setrlimit(RLIMIT_NOFILE, &low) != 0) _exit(3);
        std::vector<BenchmarkRun> runs = ::perfscale::testing::RunBenchmarks("BM_ExistingThreads");
        if (runs.size() != 1 || !::perfscale::testing::Skipped(runs[0])) _exit(4);
        fprintf(stderr, "row skipped: %s\n", runs[0].skip_message.c_str());
        _exit(0);
      },
      ::testing::ExitedWithCode(0), "row skipped: counting pass: needs .*ulimit -Hn");
}

// KeepTracepointsForRow: what each call of each row saw holding its tracepoints.
std::vector<pid_t> keepers_seen;  // one per call, in order: RowTracepointsKeeper() in the body

void RunRowKeeping(benchmark::State& state, const std::vector<std::string>& tracepoints) {
  if (!tracepoints.empty()) KeepTracepointsForRow(state, tracepoints);
  RunPasses(state, PassOptions(), [&](BenchmarkPass& pass) {
    if (pass.timed()) keepers_seen.push_back(RowTracepointsKeeper());
    if (!pass.Start()) return;
    for (auto _ : pass) {
    }
    if (!pass.Stop()) return;
    pass.SetOps(static_cast<double>(pass.iterations()));
  });
}
void BM_RowKeepsSwitch(benchmark::State& state) { RunRowKeeping(state, {"sched:sched_switch"}); }
void BM_RowKeepsSwitchToo(benchmark::State& state) { RunRowKeeping(state, {"sched:sched_switch"}); }
void BM_RowKeepsWakeup(benchmark::State& state) { RunRowKeeping(state, {"sched:sched_wakeup"}); }
void BM_RowKeepsNothing(benchmark::State& state) { RunRowKeeping(state, {}); }
// Two calls of each (repetitions), in this order.
BENCHMARK(BM_RowKeepsSwitch)->Iterations(3)->Repetitions(2);
BENCHMARK(BM_RowKeepsSwitchToo)->Iterations(3)->Repetitions(2);
BENCHMARK(BM_RowKeepsWakeup)->Iterations(3)->Repetitions(2);
BENCHMARK(BM_RowKeepsNothing)->Iterations(3)->Repetitions(2);

bool Reaped(pid_t pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

// Kept across a row's calls and into the next row that records the same; let go before
// the setup of a row that records something else or nothing, and after the run.
TEST(KeepTracepointsForRow, HoldsForTheRowAndGoesBeforeTheNextRowsSetup) {
  Parse({"--attribution=false"});  // the counting keeper is main's, not started here
  keepers_seen.clear();
  std::vector<BenchmarkRun> runs;
  EXPECT_TRUE(::perfscale::testing::LeavesProcessAsFound(
      [&] { runs = ::perfscale::testing::RunBenchmarks("BM_RowKeeps"); }));
  for (const BenchmarkRun& run : runs) EXPECT_TRUE(::perfscale::testing::Timed(run));
  ASSERT_EQ(keepers_seen.size(), 8u);
  if (keepers_seen[0] == 0) {
    GTEST_SKIP() << "sched:sched_switch cannot be kept here (no perf events or tracefs)";
  }
  EXPECT_EQ(keepers_seen[1], keepers_seen[0]) << "a second call of the row started its own";
  EXPECT_EQ(keepers_seen[2], keepers_seen[0]) << "the next row records the same: kept";
  EXPECT_EQ(keepers_seen[3], keepers_seen[0]);
  EXPECT_NE(keepers_seen[4], 0);
  EXPECT_NE(keepers_seen[4], keepers_seen[0]) << "another tracepoint: another keeper";
  EXPECT_EQ(keepers_seen[5], keepers_seen[4]);
  EXPECT_EQ(keepers_seen[6], 0) << "a row that records nothing ran with another row's kept";
  EXPECT_EQ(keepers_seen[7], 0);
  EXPECT_TRUE(Reaped(keepers_seen[0]));
  EXPECT_TRUE(Reaped(keepers_seen[4]));
  EXPECT_EQ(RowTracepointsKeeper(), 0) << "still kept after the run";
  ResetFlagsForTest();
}

// Row fixtures: what each call saw kept, and when each fixture was made and let go.
std::vector<std::string> fixture_log;
struct LoggedFixture : RowFixture {
  explicit LoggedFixture(int made) : id(made) { fixture_log.push_back(absl::StrCat("make ", id)); }
  ~LoggedFixture() override { fixture_log.push_back(absl::StrCat("drop ", id)); }
  int id;
};
int fixtures_made = 0;

void RunWithFixture(benchmark::State& state, const std::string& key) {
  LoggedFixture* fixture = nullptr;
  if (!key.empty()) {
    absl::StatusOr<LoggedFixture*> kept = RowFixtureFor<LoggedFixture>(state, key, [] {
      return absl::StatusOr<std::unique_ptr<LoggedFixture>>(
          std::make_unique<LoggedFixture>(++fixtures_made));
    });
    ASSERT_TRUE(kept.ok());
    fixture = *kept;
  }
  RunPasses(state, PassOptions(), [&](BenchmarkPass& pass) {
    if (pass.timed()) {
      const std::string row = state.name().substr(0, state.name().find('/'));
      fixture_log.push_back(
          absl::StrCat(row, " with ", fixture != nullptr ? absl::StrCat(fixture->id) : "none"));
    }
    if (!pass.Start()) return;
    for (auto _ : pass) {
    }
    if (!pass.Stop()) return;
    pass.SetOps(static_cast<double>(pass.iterations()));
  });
}
void BM_FixtureA(benchmark::State& state) { RunWithFixture(state, "a"); }
void BM_FixtureAToo(benchmark::State& state) { RunWithFixture(state, "a"); }
void BM_FixtureB(benchmark::State& state) { RunWithFixture(state, "b"); }
void BM_FixtureNone(benchmark::State& state) { RunWithFixture(state, ""); }
BENCHMARK(BM_FixtureA)->Iterations(3)->Repetitions(2);
BENCHMARK(BM_FixtureAToo)->Iterations(3)->Repetitions(2);
BENCHMARK(BM_FixtureB)->Iterations(3)->Repetitions(2);
BENCHMARK(BM_FixtureNone)->Iterations(3)->Repetitions(2);

// Made once for the rows that ask for the same key, let go before the setup of a row that
// asks for another or for none, and after the run.
TEST(RowFixture, SharedByTheRowsThatAskAndGoneBeforeTheNextRowsSetup) {
  Parse({"--attribution=false"});
  fixture_log.clear();
  fixtures_made = 0;
  ::perfscale::testing::RunBenchmarks("BM_Fixture");
  EXPECT_THAT(fixture_log,
              ::testing::ElementsAre("make 1", "BM_FixtureA with 1", "BM_FixtureA with 1",
                                     "BM_FixtureAToo with 1", "BM_FixtureAToo with 1", "drop 1",
                                     "make 2", "BM_FixtureB with 2", "BM_FixtureB with 2", "drop 2",
                                     "BM_FixtureNone with none", "BM_FixtureNone with none"));
  fixture_log.clear();
  ::perfscale::testing::RunBenchmarks("BM_FixtureB");
  EXPECT_THAT(fixture_log, ::testing::ElementsAre("make 3", "BM_FixtureB with 3",
                                                  "BM_FixtureB with 3", "drop 3"))
      << "the last row's fixture outlived the run";
  ResetFlagsForTest();
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
