// Runs the event_open families in this process with tiny parameters, as the binary
// would, and checks that they ran (no error, no skip as root), report the counters they
// promise, and leave the process as they found it: fds, threads, affinity, fd limit and
// children.
#include <sys/resource.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "lib/capabilities.h"
#include "lib/cpu_set.h"
#include "testing/common/family_harness.h"

namespace perfscale {
namespace {

using ::perfscale::testing::BenchmarkRun;
using ::perfscale::testing::Timed;

TEST(EventOpenFamilies, RunCleanAndReportTheirCounters) {
  if (absl::Status s = ProbeCapabilities().RequireSystemWide(); !s.ok()) {
    GTEST_SKIP() << s.message();
  }
  ASSERT_TRUE(
      testing::RegisterFamily("event_open", {"--event_open_events=3", "--event_open_group_size=1,2",
                                             "--event_open_event_kinds=cpu-clock,dummy"})
          .ok());
  testing::InitializeBenchmark({"--benchmark_min_time=0.002s"});

  // A soft fd limit just above what is open makes the benchmarks raise it (they need
  // 3 x CPUs fds plus headroom), so the test sees that it is put back.
  rlimit files{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &files), 0);
  rlimit lowered = files;
  lowered.rlim_cur = std::min<rlim_t>(files.rlim_cur, static_cast<rlim_t>(*CountOpenFds() + 12));
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lowered), 0);
  std::vector<BenchmarkRun> runs;
  EXPECT_TRUE(testing::LeavesProcessAsFound([&] { runs = testing::RunBenchmarks(); }));
  setrlimit(RLIMIT_NOFILE, &files);

  int cpus = static_cast<int>(OnlineCpus()->size());
  // 3 strategies x 2 kinds x 3 phase plans x 2 group sizes x 2 loads (0, all: the hog
  // threads are among those counted above), and 2 lookups.
  EXPECT_EQ(runs.size(), 3u * 2 * 3 * 2 * 2 + 2);
  int open_runs = 0;
  for (const BenchmarkRun& run : runs) {
    std::string name = run.benchmark_name();
    EXPECT_TRUE(Timed(run)) << name << ": " << run.skip_message;
    if (absl::StartsWith(name, "BM_EventOpen/")) {
      ++open_runs;
      EXPECT_EQ(run.counters.at("fds").value, 3.0 * cpus) << name;
      for (const char* counter : {"usecs/fd", "ipis_system/fd", "sys_us/fd"}) {
        EXPECT_EQ(run.counters.count(counter), 1u) << name << " lacks " << counter;
      }
      EXPECT_GT(run.counters.at("usecs/fd").value, 0) << name;
      if (absl::StrContains(name, "/phases:lifecycle/")) {
        double shares = 0;
        for (const char* phase : {"open", "enable", "read", "disable", "close"}) {
          shares += run.counters.at(absl::StrCat("share:", phase)).value;
        }
        EXPECT_NEAR(shares, 1.0, 1e-9) << name;
      }
      EXPECT_EQ(run.counters.count("weak_fallbacks"), absl::StrContains(name, "/group:2") ? 1u : 0u)
          << name;
      EXPECT_EQ(run.report_label, "") << name;  // affinity is never refused here
    } else {
      EXPECT_TRUE(absl::StartsWith(name, "BM_PmuResolve/")) << name;
      EXPECT_GT(run.counters.at("usecs/event").value, 0) << name;
      EXPECT_GT(run.counters.at("sysfs_ops/event").value, 0) << name;
    }
  }
  EXPECT_EQ(open_runs, 72);
}

}  // namespace
}  // namespace perfscale
