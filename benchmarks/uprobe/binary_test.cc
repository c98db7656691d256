// Runs the real //benchmarks:uprobe binary the way a user does, with tiny parameters,
// and checks its JSON: every benchmark ran (as root with the uprobe PMU nothing skips),
// the probes counted every hit, the rates agree with the times, the default thread list
// follows the CPU count, and bad flags make the binary exit 2 naming the flag.
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "lib/cpu_set.h"
#include "testing/common/family_harness.h"

namespace perfscale {
namespace {

using ::perfscale::testing::BadFlag;
using ::perfscale::testing::BenchmarkResult;
using ::perfscale::testing::BinaryRun;
using ::perfscale::testing::CommandResult;
using ::perfscale::testing::RunFamilyBinary;
using ::perfscale::testing::RunRunfile;

constexpr char kBinary[] = "benchmarks/uprobe/uprobe";

std::vector<std::string> Listed(const std::vector<std::string>& flags) {
  std::vector<std::string> args = flags;
  args.push_back("--benchmark_list_tests");
  CommandResult result = RunRunfile(kBinary, args);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return absl::StrSplit(result.out, '\n', absl::SkipEmpty());
}

TEST(UprobeBinary, JsonHasTheCounters) {
  BinaryRun run =
      RunFamilyBinary(kBinary, {"--uprobe_threads=2", "--uprobe_calls=500",
                                "--uprobe_attach_probes=3", "--uprobe_processes=2",
                                "--uprobe_site=nop5,return", "--benchmark_min_time=0.002s"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_TRUE(run.json.ok()) << run.json.status() << "\n" << run.out;
  EXPECT_EQ(run.names(), (std::vector<std::string>{
                             "BM_UprobeHit/probe:none/threads:2/manual_time",
                             "BM_UprobeHit/probe:uprobe/threads:2/manual_time",
                             "BM_UprobeHit/probe:uretprobe/threads:2/manual_time",
                             "BM_UprobeSite/site:nop5/manual_time",
                             "BM_UprobeSite/site:return/manual_time",
                             "BM_UprobeAttach/probes:3/processes:2/manual_time",
                         }));
  if (geteuid() != 0 || access("/sys/bus/event_source/devices/uprobe", F_OK) != 0) return;
  for (const BenchmarkResult& bench : run.benchmarks) {
    SCOPED_TRACE(bench.name);
    EXPECT_TRUE(bench.Timed()) << bench.message;
    if (absl::StartsWith(bench.name, "BM_UprobeAttach/")) {
      EXPECT_GT(bench.Number("usecs/probe"), 0);
      EXPECT_EQ(bench.Number("processes"), 2);
      EXPECT_NEAR(bench.Number("open_usecs/probe") + bench.Number("close_usecs/probe"),
                  bench.Number("usecs/probe"), bench.Number("usecs/probe") * 1e-6);
      // The counting pass attaches 3 probes (all of them: fewer than 4), in 1 or 2
      // iterations (never more than the timed pass ran).
      EXPECT_TRUE(bench.Number("count_ops") == 3 || bench.Number("count_ops") == 6)
          << bench.Number("count_ops");
      continue;
    }
    if (absl::StartsWith(bench.name, "BM_UprobeSite/")) {
      // One thread's 500 calls a round, the probe's own count equal to them; attach, the
      // first hit and detach timed apart; the site read back as int3 or rewritten.
      EXPECT_GT(bench.Number("usecs/hit"), 0);
      EXPECT_EQ(bench.Number("counted/hit"), 1.0);
      EXPECT_EQ(static_cast<int64_t>(bench.Number("count_ops")) % 500, 0);
      for (const char* phase : {"attach_usecs", "first_hit_usecs", "detach_usecs"}) {
        EXPECT_GT(bench.Number(phase), 0) << phase;
      }
      const double optimized = bench.Number("optimized");
      EXPECT_TRUE(optimized == 0 || optimized == 1) << optimized;
      EXPECT_TRUE(absl::StrContains(bench.label, optimized == 1 ? "(rewritten)" : "(int3)"))
          << bench.label;
      continue;
    }
    // The counting pass: 1 to 20 rounds of both threads' 500 calls, on the timed pass's
    // threads (and probe: counted/hit is checked in that pass too, or the row fails).
    const double count_ops = bench.Number("count_ops");
    EXPECT_GE(count_ops, 1000);
    EXPECT_LE(count_ops, 20000);
    EXPECT_EQ(static_cast<int64_t>(count_ops) % 1000, 0) << count_ops;
    // usecs/hit is per call of one thread; hits/s counts both threads' calls.
    const double usecs = bench.Number("usecs/hit");
    EXPECT_GT(usecs, 0);
    EXPECT_NEAR(bench.Number("hits/s"), 2 * 1e6 / usecs, 2 * 1e6 / usecs * 0.01);
    if (!absl::StrContains(bench.name, "probe:none")) {
      EXPECT_GE(bench.Number("counted/hit"), 1.0);  // above 1: a call counted twice
      EXPECT_LT(bench.Number("counted/hit"), 1.01);
    }
  }
}

TEST(UprobeBinary, ThreadsFollowTheCpus) {
  const int cpus = static_cast<int>(OnlineCpus()->size());
  std::vector<std::string> names =
      Listed({"--uprobe_probe=none", "--uprobe_attach_probes=1", "--uprobe_processes=0"});
  std::vector<std::string> threads;
  for (const std::string& name : names) {
    if (!absl::StartsWith(name, "BM_UprobeHit/")) continue;
    std::vector<std::string> parts = absl::StrSplit(name, '/');
    ASSERT_GE(parts.size(), 3u);
    threads.push_back(parts[2].substr(std::string("threads:").size()));
  }
  ASSERT_FALSE(threads.empty());
  EXPECT_EQ(threads.front(), "1");
  EXPECT_EQ(threads.back(), absl::StrCat(2 * cpus));
  EXPECT_TRUE(absl::c_linear_search(threads, absl::StrCat(cpus))) << absl::StrJoin(threads, ",");
}

TEST(UprobeBinary, QuickRunIsSmall) {
  const int cpus = static_cast<int>(OnlineCpus()->size());
  std::vector<std::string> names = Listed({"--quick=true"});
  // 3 probe kinds x (1, CPUs) threads, 2 sites (nop1, nop5), then 2 process counts x 4
  // probes.
  EXPECT_EQ(names.size(), 3u * (cpus == 1 ? 1 : 2) + 2 + 2);
  EXPECT_TRUE(absl::c_linear_search(names, "BM_UprobeSite/site:nop5/manual_time"));
}

TEST(UprobeBinary, BadFlagsExitTwoNamingTheFlag) {
  std::vector<BadFlag> cases;
  for (const char* flag :
       {"--uprobe_threads=0", "--uprobe_threads=abc", "--uprobe_threads=", "--uprobe_probe=kprobe",
        "--uprobe_probe=", "--uprobe_calls=0", "--uprobe_calls=1e3", "--uprobe_attach_probes=257",
        "--uprobe_attach_probes=0", "--uprobe_processes=-1", "--uprobe_processes=many",
        "--uprobe_site=nop7", "--uprobe_site=", "--uprobe_site=mov,ret"}) {
    std::string name(flag);
    cases.push_back({{name}, name.substr(0, name.find('='))});
  }
  testing::ExpectUsageErrors(kBinary, cases, {"--benchmark_list_tests"});
}

}  // namespace
}  // namespace perfscale
