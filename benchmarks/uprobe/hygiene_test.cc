// Runs the uprobe families in this process with tiny parameters, as the binary would,
// and checks that they ran (no error; as root with the uprobe PMU, no skip), that each
// probe counted exactly the hits (the benchmark errors otherwise), that they report
// the counters they promise, and that they leave the process as they found it: fds,
// threads (the hit workers), children (the mapping processes), fd limit.
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "lib/capabilities.h"
#include "testing/common/family_harness.h"

namespace perfscale {
namespace {

using ::perfscale::testing::BenchmarkRun;
using ::perfscale::testing::Skipped;
using ::perfscale::testing::Timed;

bool CanProbe() {
  Capabilities caps = ProbeCapabilities();
  return caps.is_root || caps.cap_perfmon || caps.cap_sys_admin;
}

TEST(UprobeFamilies, RunCleanAndReportTheirCounters) {
  ASSERT_TRUE(
      testing::RegisterFamily(
          "uprobe", {"--uprobe_threads=1,3,2", "--uprobe_calls=200", "--uprobe_site=push,nop5",
                     "--uprobe_attach_probes=1,4", "--uprobe_processes=0,3"})
          .ok());
  testing::InitializeBenchmark({"--benchmark_min_time=0.002s"});
  std::vector<BenchmarkRun> runs;
  EXPECT_TRUE(testing::LeavesProcessAsFound([&] { runs = testing::RunBenchmarks(); }));
  // 3 probe kinds x 3 thread counts, 2 sites, then 2 process counts x 2 probe counts. Each
  // kind's probe and threads are kept from 1 thread to 3 (threads added to the pool), then
  // made anew for 2 (KeptHitSetup): every row's count is its own calls, no more, no fewer.
  ASSERT_EQ(runs.size(), 3u * 3 + 2 + 2 * 2);
  const bool probes_run = CanProbe() && access("/sys/bus/event_source/devices/uprobe", F_OK) == 0;
  for (const BenchmarkRun& run : runs) {
    std::string name = run.benchmark_name();
    SCOPED_TRACE(name);
    const bool baseline = absl::StrContains(name, "/probe:none/");  // needs no privilege
    if (!baseline && !probes_run) {
      EXPECT_TRUE(Skipped(run)) << "without the PMU or CAP_PERFMON a probe row skips: "
                                << run.skip_message;
      continue;
    }
    EXPECT_TRUE(Timed(run)) << run.skip_message;
    if (absl::StartsWith(name, "BM_UprobeHit/")) {
      EXPECT_GT(run.counters.at("usecs/hit").value, 0);
      EXPECT_GT(run.counters.at("hits/s").value, 0);
      EXPECT_EQ(run.counters.count("counted/hit"), baseline ? 0u : 1u);
      if (!baseline) {
        EXPECT_GE(run.counters.at("counted/hit").value, 1.0);  // above 1: counted twice
        EXPECT_LT(run.counters.at("counted/hit").value, 1.01);
      }
      EXPECT_EQ(run.counters.count("sys_us/hit"), 1u);
    } else if (absl::StartsWith(name, "BM_UprobeSite/")) {
      // The probe (one fd) is closed by the row itself: LeavesProcessAsFound above.
      EXPECT_GT(run.counters.at("usecs/hit").value, 0);
      EXPECT_EQ(run.counters.at("counted/hit").value, 1.0);
      EXPECT_GT(run.counters.at("detach_usecs").value, 0);
      EXPECT_EQ(run.counters.count("sys_us/hit"), 1u);
    } else {
      EXPECT_TRUE(absl::StartsWith(name, "BM_UprobeAttach/"));
      EXPECT_GT(run.counters.at("usecs/probe").value, 0);
      EXPECT_EQ(run.counters.count("sys_us/probe"), 1u);
    }
  }
}

}  // namespace
}  // namespace perfscale
