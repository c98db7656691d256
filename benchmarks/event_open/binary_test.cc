// Runs the real //benchmarks:event_open binary the way a user does, with tiny parameters,
// and checks its JSON: every benchmark ran (as root nothing skips), each BM_EventOpen
// reports its counters for events x CPUs fds, and bad flags make the binary exit 2
// naming the flag, before running.
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
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

constexpr char kBinary[] = "benchmarks/event_open/event_open";

int Cpus() { return static_cast<int>(OnlineCpus()->size()); }

std::vector<std::string> Listed(const std::vector<std::string>& flags) {
  std::vector<std::string> args = flags;
  args.push_back("--benchmark_list_tests");
  CommandResult result = RunRunfile(kBinary, args);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return absl::StrSplit(result.out, '\n', absl::SkipEmpty());
}

int CountPrefix(const std::vector<std::string>& names, absl::string_view prefix) {
  int count = 0;
  for (const std::string& name : names) count += absl::StartsWith(name, prefix);
  return count;
}

TEST(EventOpenBinary, JsonHasTheCounters) {
  BinaryRun run = RunFamilyBinary(
      kBinary, {"--event_open_events=2", "--event_open_event_kinds=dummy,sched:sched_switch",
                "--benchmark_min_time=0.002s"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_TRUE(run.json.ok()) << run.json.status() << "\n" << run.out;
  EXPECT_TRUE(run.context.contains("perf_event_paranoid"));
  // Google Benchmark compiled here with NDEBUG (third_party/benchmark.BUILD): Debian 12's
  // libbenchmark said "debug" and warned on every run that its timings may be affected.
  EXPECT_EQ(run.context.value("library_build_type", ""), "release");
  EXPECT_NE(run.context.value("library_version", ""), "");  // the source package's version
  EXPECT_FALSE(absl::StrContains(run.err, "built as DEBUG")) << run.err;
  std::vector<std::string> names = run.names();
  // 3 strategies x 2 kinds x 3 phase plans x 2 loads (0, all), then 2 lookups.
  EXPECT_EQ(CountPrefix(names, "BM_EventOpen/"), 36);
  EXPECT_EQ(CountPrefix(names, "BM_PmuResolve/"), 2);
  if (geteuid() != 0) return;  // skips are allowed without privileges; nothing more to check
  const int cpus = Cpus();
  for (const BenchmarkResult& bench : run.benchmarks) {
    SCOPED_TRACE(bench.name);
    EXPECT_TRUE(bench.Timed()) << bench.message;
    if (!absl::StartsWith(bench.name, "BM_EventOpen/")) {
      EXPECT_GT(bench.Number("sysfs_ops/event"), 0);
      continue;
    }
    EXPECT_TRUE(absl::StrContains(bench.name, absl::StrCat("/cpus:", cpus)));
    EXPECT_EQ(bench.Number("fds"), 2.0 * cpus);
    for (const char* counter : {"usecs/fd", "ipis_system/fd", "sys_us/fd"}) {
      EXPECT_TRUE(bench.Has(counter)) << counter;
    }
    EXPECT_GT(bench.Number("usecs/fd"), 0);
    if (absl::StrContains(bench.name, "/phases:lifecycle/")) {
      double shares = 0;
      for (const char* phase : {"open", "enable", "read", "disable", "close"}) {
        shares += bench.Number(absl::StrCat("share:", phase));
      }
      EXPECT_NEAR(shares, 1.0, 1e-6);
    }
  }
}

TEST(EventOpenBinary, CpuListAndStrategyFilter) {
  BinaryRun run = RunFamilyBinary(
      kBinary, {"--event_open_events=1", "--event_open_cpus=0", "--event_open_strategy=cpu_major",
                "--event_open_phases=open", "--event_open_event_kinds=cpu-clock",
                "--event_open_pmu_lookup=per_pmu", "--event_open_pmu_events=software/config=0/",
                "--benchmark_min_time=0.002s"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_TRUE(run.json.ok()) << run.json.status();
  EXPECT_EQ(run.names(),
            (std::vector<std::string>{
                "BM_EventOpen/strategy:cpu_major/events:1/event:cpu-clock/phases:open/cpus:1"
                "/manual_time",
                "BM_EventOpen/strategy:cpu_major/events:1/event:cpu-clock/phases:open/cpus:1"
                "/load:1/manual_time",
                "BM_PmuResolve/lookup:per_pmu/events:1/names:1/real_time",
            }));
}

TEST(EventOpenBinary, LoadAllIsOneHogPerCpu) {
  std::vector<std::string> listed = Listed(
      {"--event_open_events=1", "--event_open_strategy=cpu_major", "--event_open_phases=open",
       "--event_open_event_kinds=cpu-clock", "--event_open_load=all,0,1",
       "--event_open_pmu_lookup=per_pmu", "--event_open_pmu_events=software/config=0/"});
  const int cpus = Cpus();
  const std::string base = absl::StrCat(
      "BM_EventOpen/strategy:cpu_major/events:1/event:cpu-clock/phases:open/cpus:", cpus);
  std::vector<std::string> expected = {absl::StrCat(base, "/load:", cpus, "/manual_time"),
                                       base + "/manual_time"};
  if (cpus > 1) expected.push_back(base + "/load:1/manual_time");
  std::vector<std::string> names;
  for (const std::string& name : listed) {
    if (absl::StartsWith(name, "BM_EventOpen/")) names.push_back(name);
  }
  EXPECT_EQ(names, expected);
}

TEST(EventOpenBinary, QuickRunIsSmall) {
  std::vector<std::string> names = Listed({"--quick=true"});
  EXPECT_EQ(names.size(), 3u * 2 + 2);
  for (const std::string& name : names) {
    EXPECT_TRUE(absl::StrContains(name, "/events:100/")) << name;
  }
}

TEST(EventOpenBinary, BadFlagsExitTwoNamingTheFlag) {
  std::vector<BadFlag> cases;
  for (const char* flag :
       {"--event_open_events=0", "--event_open_events=abc", "--event_open_strategy=cpu-major",
        "--event_open_cpus=0-", "--event_open_cpus=4095", "--event_open_event_kinds=cycles",
        "--event_open_event_kinds=sched:", "--event_open_event_kinds=cpu-clock,,dummy",
        "--event_open_phases=close", "--event_open_strategy=", "--event_open_events=",
        "--event_open_group_size=0", "--event_open_load=4096", "--event_open_load=half",
        "--event_open_load=", "--event_open_pmu_lookup=cached", "--event_open_pmu_events=msr/tsc",
        "--event_open_pmu_events=msr"}) {
    std::string name(flag);
    cases.push_back({{name}, name.substr(0, name.find('='))});
  }
  testing::ExpectUsageErrors(kBinary, cases, {"--benchmark_list_tests"});
}

}  // namespace
}  // namespace perfscale
