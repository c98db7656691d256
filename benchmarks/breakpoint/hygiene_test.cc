// Runs every benchmark the breakpoint families register, one at a time and briefly, and
// checks that each leaves the process as it found it: open fds, threads
// (/proc/self/task), child processes, and the running thread's CPU affinity. Also runs
// them while every breakpoint slot is already taken, so the skip paths (which return
// from the middle of setup) are held to the same standard.
//
// The family registers against perfscale's flags, so this sets small values through the
// family-test harness (testing/common/family_harness.h), as the shared main would.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "benchmarks/breakpoint/breakpoint_slots.h"
#include "benchmarks/harness/family.h"
#include "gtest/gtest.h"
#include "lib/background_threads.h"
#include "lib/capabilities.h"
#include "lib/cpu_set.h"
#include "lib/perf_attr.h"
#include "lib/perf_event.h"
#include "testing/common/family_harness.h"

namespace perfscale {
namespace {

using ::perfscale::testing::BenchmarkRun;
using ::perfscale::testing::CaptureProcessState;
using ::perfscale::testing::CaptureProcessStateSettled;
using ::perfscale::testing::ExactFilter;
using ::perfscale::testing::InitializeBenchmark;
using ::perfscale::testing::LeavesProcessAsFound;
using ::perfscale::testing::ListBenchmarks;
using ::perfscale::testing::ProcessState;
using ::perfscale::testing::RegisterFamily;
using ::perfscale::testing::RunBenchmarks;
using ::perfscale::testing::Skipped;
using ::perfscale::testing::Timed;

bool AffinityHasTwoCpus() {
  absl::StatusOr<CpuMask> mask = GetAffinity();
  return mask.ok() && mask->Cpus().size() >= 2;
}

// The shapes RegisterEnableFamily builds when both --breakpoint_passive and --breakpoint_active are
// given: every pair, each in every placement except the pair with no inheriting threads at all
// (placement moves nothing there, so it is registered once, unpinned).
std::set<std::string> ExpectedNames(const std::vector<std::string>& placements) {
  std::set<std::string> names;
  for (int b : {0, 1}) {
    for (int p : {1, 2}) {
      names.insert(absl::StrCat("BM_BreakpointThread/breakpoints:", b, "/parallelism:", p,
                                "/threads:2/real_time"));
    }
  }
  for (int passive : {0, 2}) {
    for (int active : {0, 1}) {
      for (const std::string& placement : placements) {
        if (passive == 0 && active == 0 && placement != "unpinned") continue;
        names.insert(absl::StrCat("BM_BreakpointEnable/passive:", passive, "/active:", active,
                                  "/placement:", placement, "/real_time"));
      }
    }
  }
  return names;
}

class BreakpointHygieneTest : public ::testing::Test {
 protected:
  // Registration is process-wide and may only happen once.
  static void SetUpTestSuite() {
    skip_reason_ = new std::string;
    names_ = new std::vector<std::string>;
    if (absl::Status s = ProbeCapabilities().RequireBreakpointPmu(); !s.ok()) {
      *skip_reason_ = std::string(s.message());
      return;
    }
    placements_ = new std::vector<std::string>{"unpinned", "same_cpu"};
    // other_cpus needs a second CPU; on one it skips by design, which is not a leak.
    if (AffinityHasTwoCpus()) placements_->push_back("other_cpus");
    std::string placement_flag;
    for (const std::string& p : *placements_) {
      absl::StrAppend(&placement_flag, placement_flag.empty() ? "" : ",", p);
    }
    registration_ = new absl::Status(RegisterFamily(
        "breakpoint",
        {"--breakpoint_breakpoints=0,1", "--breakpoint_parallelism=1,2", "--breakpoint_threads=2",
         "--breakpoint_repeat=2", "--breakpoint_passive=0,2", "--breakpoint_active=0,1",
         "--breakpoint_placement=" + placement_flag}));
    if (!registration_->ok()) return;
    InitializeBenchmark({"--benchmark_min_time=0.01s"});
    *names_ = ListBenchmarks();
  }

  void SetUp() override {
    if (!skip_reason_->empty()) GTEST_SKIP() << *skip_reason_;
    ASSERT_TRUE(registration_->ok()) << *registration_;
  }

  // Runs one benchmark by its exact name and returns its reports.
  static std::vector<BenchmarkRun> RunOne(const std::string& name) {
    return RunBenchmarks(ExactFilter(name));
  }

  static std::string* skip_reason_;
  static absl::Status* registration_;
  static std::vector<std::string>* placements_;
  static std::vector<std::string>* names_;
};

std::string* BreakpointHygieneTest::skip_reason_ = nullptr;
absl::Status* BreakpointHygieneTest::registration_ = nullptr;
std::vector<std::string>* BreakpointHygieneTest::placements_ = nullptr;
std::vector<std::string>* BreakpointHygieneTest::names_ = nullptr;

TEST_F(BreakpointHygieneTest, RegistersTheShapesTheFlagsAskFor) {
  ASSERT_EQ(Families().size(), 1u);
  EXPECT_EQ(Families()[0].name, "breakpoint");
  std::set<std::string> registered(names_->begin(), names_->end());
  EXPECT_EQ(registered.size(), names_->size()) << "a benchmark name is registered twice";
  EXPECT_EQ(registered, ExpectedNames(*placements_));
}

TEST_F(BreakpointHygieneTest, EachBenchmarkLeavesProcessAsFound) {
  ASSERT_FALSE(names_->empty());
  for (const std::string& name : *names_) {
    SCOPED_TRACE(name);
    EXPECT_FALSE(testing::HasChildren());
    std::vector<BenchmarkRun> runs;
    EXPECT_TRUE(LeavesProcessAsFound([&] { runs = RunOne(name); }));

    ASSERT_EQ(runs.size(), 1u);
    const BenchmarkRun& run = runs[0];
    EXPECT_EQ(run.benchmark_name(), name);
    EXPECT_TRUE(Timed(run)) << run.skip_message;
    EXPECT_GT(run.iterations, 0);
    for (const char* counter : {"usecs/op", "ipis_system/op", "sys_us/op"}) {
      auto it = run.counters.find(counter);
      ASSERT_NE(it, run.counters.end()) << "no counter " << counter;
      EXPECT_GE(it->second.value, 0.0) << counter;
    }
    EXPECT_GT(run.counters.at("usecs/op").value, 0.0);
    if (absl::StartsWith(name, "BM_BreakpointThread/")) {
      ASSERT_NE(run.counters.find("usecs/op/cpu"), run.counters.end());
      int parallelism = absl::StrContains(name, "/parallelism:2/") ? 2 : 1;
      EXPECT_DOUBLE_EQ(run.counters.at("usecs/op/cpu").value,
                       run.counters.at("usecs/op").value * parallelism);
    }
  }
}

// With every slot taken by this thread and by the threads it creates (the enable family
// opens its breakpoint on a thread of its own), the benchmarks that need a breakpoint
// must skip with the kernel's reason, and still leave nothing behind (the enable family
// has already pinned its thread when its open fails).
TEST_F(BreakpointHygieneTest, SkipsWhenSlotsAreTakenAndLeavesProcessAsFound) {
  absl::StatusOr<BreakpointSlots> slots = ProbeBreakpointSlots();
  ASSERT_TRUE(slots.ok()) << slots.status();
  static volatile char taken[64];
  std::vector<PerfEvent> held;
  for (int i = 0; i < slots->free; ++i) {
    BreakpointSpec spec;
    spec.address = &taken[i];
    spec.inherit = true;
    absl::StatusOr<PerfEvent> event = PerfEvent::Open(BreakpointAttr(spec), 0, -1);
    ASSERT_TRUE(event.ok()) << event.status();
    held.push_back(*std::move(event));
  }
  int skipped = 0;
  for (const std::string& name : *names_) {
    SCOPED_TRACE(name);
    std::vector<BenchmarkRun> runs;
    EXPECT_TRUE(LeavesProcessAsFound([&] { runs = RunOne(name); }));
    ASSERT_EQ(runs.size(), 1u);
    bool needs_breakpoint = !absl::StrContains(name, "/breakpoints:0/");
    if (needs_breakpoint) {
      EXPECT_TRUE(Skipped(runs[0])) << runs[0].skip_message;
      EXPECT_TRUE(absl::StrContains(runs[0].skip_message, "breakpoint slots"))
          << runs[0].skip_message;
      ++skipped;
    } else {
      EXPECT_TRUE(Timed(runs[0])) << runs[0].skip_message;
    }
  }
  EXPECT_GT(skipped, 0);
}

// What a careless benchmark leaves behind, for checking the checker.
struct Leftovers {
  int fd = -1;
  std::unique_ptr<BackgroundThreads> thread;
  pid_t child = -1;
};
Leftovers* leftovers = nullptr;

void BM_LeavesThingsBehindForTest(benchmark::State& state) {
  for (auto _ : state) {
  }
  if (leftovers->fd >= 0) return;  // once is enough, however often it is called
  leftovers->fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  absl::StatusOr<std::unique_ptr<BackgroundThreads>> thread =
      BackgroundThreads::Start(BackgroundThreads::kParked, 1);
  if (thread.ok()) leftovers->thread = *std::move(thread);
  leftovers->child = fork();
  if (leftovers->child == 0) {
    pause();
    _exit(0);
  }
  absl::StatusOr<CpuMask> mask = GetAffinity();
  if (mask.ok()) SetAffinity(std::vector<int>{mask->Cpus().back()}).IgnoreError();
}

// The comparison above must be able to fail: a benchmark that leaks an fd, a thread, a
// child and its pinning is caught on every count.
TEST_F(BreakpointHygieneTest, CheckerCatchesABenchmarkThatLeaks) {
  if (!AffinityHasTwoCpus()) GTEST_SKIP() << "an affinity change needs 2 CPUs to show";
  leftovers = new Leftovers;
  benchmark::RegisterBenchmark("BM_LeavesThingsBehindForTest", BM_LeavesThingsBehindForTest);
  absl::StatusOr<ProcessState> before = CaptureProcessState();
  ASSERT_TRUE(before.ok()) << before.status();

  std::vector<BenchmarkRun> runs = RunOne("BM_LeavesThingsBehindForTest");

  absl::StatusOr<ProcessState> after = CaptureProcessStateSettled(*before, /*timeout_ms=*/100);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_NE(*after, *before);
  EXPECT_EQ(after->open_fds, before->open_fds + 1);
  EXPECT_EQ(after->threads, before->threads + 1);
  EXPECT_TRUE(after->has_children);
  EXPECT_NE(after->affinity, before->affinity);

  // Clean up, and the state is back.
  close(leftovers->fd);
  leftovers->thread.reset();
  if (leftovers->child > 0) {
    kill(leftovers->child, SIGKILL);
    waitpid(leftovers->child, nullptr, 0);
  }
  ASSERT_TRUE(SetAffinity(before->affinity).ok());
  delete leftovers;
  leftovers = nullptr;
  absl::StatusOr<ProcessState> cleaned = CaptureProcessStateSettled(*before);
  ASSERT_TRUE(cleaned.ok()) << cleaned.status();
  EXPECT_EQ(*cleaned, *before);
}

}  // namespace
}  // namespace perfscale
