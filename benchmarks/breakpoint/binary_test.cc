// Runs the real //benchmarks:breakpoint binary the way a user does: tiny parameters and
// --benchmark_format=json must give the expected benchmarks with perf bench's counters
// and the run context; bad values must exit 2 before anything runs, naming the flag.
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "benchmarks/breakpoint/breakpoint_slots.h"
#include "gtest/gtest.h"
#include "lib/capabilities.h"
#include "lib/file_reader.h"
#include "nlohmann/json.hpp"
#include "testing/common/family_harness.h"

namespace perfscale {
namespace {

using ::perfscale::testing::BadFlag;
using ::perfscale::testing::BenchmarkResult;
using ::perfscale::testing::BinaryRun;
using ::perfscale::testing::RunFamilyBinary;

constexpr char kBinary[] = "benchmarks/breakpoint/breakpoint";

std::string BinaryPath() { return ::perfscale::testing::FamilyBinaryPath(kBinary); }

class BreakpointBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(access(BinaryPath().c_str(), X_OK), 0) << BinaryPath() << " is not there";
  }
};

TEST_F(BreakpointBinaryTest, JsonHasTheBenchmarksCountersAndContext) {
  if (absl::Status s = ProbeCapabilities().RequireBreakpointPmu(); !s.ok()) {
    GTEST_SKIP() << s.message();
  }
  BinaryRun run = RunFamilyBinary(
      kBinary,
      {"--breakpoint_breakpoints=0,1", "--breakpoint_parallelism=1", "--breakpoint_threads=2",
       "--breakpoint_repeat=2", "--breakpoint_passive=0,2", "--breakpoint_active=1",
       "--breakpoint_placement=unpinned,same_cpu", "--benchmark_min_time=0.01s"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_TRUE(run.json.ok()) << run.json.status() << "\n" << run.out;

  const nlohmann::json& context = run.context;
  for (const char* key : {"kernel_release", "perf_event_paranoid", "online_cpus", "num_online_cpus",
                          "hypervisor", "clocksource", "breakpoints_fire", "perfscale_revision"}) {
    ASSERT_TRUE(context.contains(key)) << "context has no " << key;
    ASSERT_TRUE(context.at(key).is_string()) << key;
    EXPECT_FALSE(context.at(key).get<std::string>().empty()) << key;
  }
  // Which source each kernel-cost counter used: a JSON object in a string (our own,
  // strict JSON).
  ASSERT_TRUE(context.contains("counter_sources"));
  std::string sources = context.at("counter_sources").get<std::string>();
  nlohmann::json parsed_sources = nlohmann::json::parse(sources, nullptr, false);
  ASSERT_TRUE(parsed_sources.is_object()) << sources;
  for (const char* key : {"ipis_sent", "xcalls", "lock_contended", "lock_wait_us", "ctx_switches",
                          "cpu_migrations", "page_faults", "ipis_system", "sys_us"}) {
    EXPECT_TRUE(parsed_sources.contains(key)) << "counter_sources has no " << key;
  }
  utsname names{};
  ASSERT_EQ(uname(&names), 0);
  EXPECT_EQ(context.at("kernel_release"), names.release);
  absl::StatusOr<std::string> paranoid = ReadTextFile("/proc/sys/kernel/perf_event_paranoid");
  ASSERT_TRUE(paranoid.ok());
  EXPECT_EQ(context.at("perf_event_paranoid"), std::string(absl::StripAsciiWhitespace(*paranoid)));
  // The firing probe's verdict: the binary ran on this machine, in this environment.
  const std::string fires = context.at("breakpoints_fire").get<std::string>();
  if (BreakpointsFire().ok()) {
    EXPECT_EQ(fires, "yes");
  } else {
    EXPECT_TRUE(absl::StartsWith(fires, "no: hardware breakpoints")) << fires;
  }

  for (const BenchmarkResult& benchmark : run.benchmarks) {
    SCOPED_TRACE(benchmark.name);
    EXPECT_TRUE(benchmark.Timed()) << benchmark.message;
    EXPECT_EQ(benchmark.time_unit, "us");
    for (const char* counter : {"usecs/op", "ipis_system/op", "sys_us/op"}) {
      EXPECT_GE(benchmark.Number(counter), 0.0) << counter;
    }
    if (absl::StartsWith(benchmark.name, "BM_BreakpointThread/")) {
      // parallelism 1: the per-CPU figure is the figure.
      EXPECT_DOUBLE_EQ(benchmark.Number("usecs/op/cpu"), benchmark.Number("usecs/op"));
    }
    EXPECT_GT(benchmark.Number("usecs/op"), 0.0);
  }
  std::vector<std::string> listed = run.names();
  std::set<std::string> names_seen(listed.begin(), listed.end());
  std::set<std::string> expected = {
      "BM_BreakpointThread/breakpoints:0/parallelism:1/threads:2/real_time",
      "BM_BreakpointThread/breakpoints:1/parallelism:1/threads:2/real_time",
      "BM_BreakpointEnable/passive:0/active:1/placement:unpinned/real_time",
      "BM_BreakpointEnable/passive:0/active:1/placement:same_cpu/real_time",
      "BM_BreakpointEnable/passive:2/active:1/placement:unpinned/real_time",
      "BM_BreakpointEnable/passive:2/active:1/placement:same_cpu/real_time",
  };
  EXPECT_EQ(names_seen, expected);
  EXPECT_EQ(listed.size(), expected.size());
}

// --profile on the enable/disable toggle, threads on the other CPU: the side file named
// in the context holds the benchmark, and its kernel path goes through perf_ioctl (the
// seed's profile: smp_call_function_single under the ioctl).
TEST_F(BreakpointBinaryTest, ProfileNamesTheKernelPathOfTheToggle) {
  if (absl::Status s = ProbeCapabilities().RequireBreakpointPmu(); !s.ok()) {
    GTEST_SKIP() << s.message();
  }
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "placement other_cpus needs 2 CPUs";
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string path = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/breakpoint.profile.json");
  BinaryRun run = RunFamilyBinary(
      kBinary, {"--breakpoint_passive=2", "--breakpoint_active=0",
                "--breakpoint_placement=other_cpus", "--benchmark_filter=BM_BreakpointEnable",
                "--benchmark_min_time=0.2s", "--profile", absl::StrCat("--profile_out=", path)});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_TRUE(run.json.ok()) << run.json.status();
  ASSERT_TRUE(run.context.contains("profile_file"));
  EXPECT_EQ(run.context.at("profile_file"), path);
  absl::StatusOr<std::string> text = ReadTextFile(path);
  ASSERT_TRUE(text.ok()) << text.status();
  // Our own file: strict JSON.
  nlohmann::json profile = nlohmann::json::parse(*text, nullptr, false);
  ASSERT_TRUE(profile.is_object()) << *text;
  ASSERT_TRUE(profile.contains("benchmarks")) << *text;
  const nlohmann::json& benchmarks = profile.at("benchmarks");
  ASSERT_EQ(benchmarks.size(), 1u) << *text;
  const nlohmann::json& entry = benchmarks[0];
  EXPECT_EQ(entry.at("name"), "BM_BreakpointEnable/passive:2/active:0/placement:other_cpus");
  EXPECT_GT(entry.at("samples").get<double>(), 0) << *text;
  std::string kernel_symbols = profile.at("kernel_symbols").get<std::string>();
  std::string note = entry.at("note").get<std::string>();
  if (kernel_symbols != "ok" || !note.empty()) {
    GTEST_SKIP() << "no kernel symbols: " << kernel_symbols << " " << note;
  }
  double ioctl_children = 0;
  for (const nlohmann::json& symbol : entry.at("symbols")) {
    if (symbol.at("symbol") == "perf_ioctl") ioctl_children = symbol.at("children").get<double>();
  }
  EXPECT_GT(ioctl_children, 0.5) << *text;
}

// The default run times with no perf event of ours and counts in a pass of its
// own; the counts equal those of the old way (--attribution=timed, counted while timed):
// toggling a breakpoint that 2 blocked threads on the other CPU inherited is 2 function
// calls per disable and per enable, 4 per op either way. Thread churn has counts too.
TEST_F(BreakpointBinaryTest, CountsFromTheCountingPassEqualThoseCountedWhileTimed) {
  if (absl::Status s = ProbeCapabilities().RequireBreakpointPmu(); !s.ok()) {
    GTEST_SKIP() << s.message();
  }
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "placement other_cpus needs 2 CPUs";
  std::map<std::string, double> xcalls;
  for (const char* mode : {"true", "timed"}) {
    SCOPED_TRACE(mode);
    BinaryRun run = RunFamilyBinary(
        kBinary,
        {absl::StrCat("--attribution=", mode), "--breakpoint_breakpoints=1",
         "--breakpoint_parallelism=1", "--breakpoint_threads=2", "--breakpoint_repeat=2",
         "--breakpoint_passive=2", "--breakpoint_active=0", "--breakpoint_placement=other_cpus",
         "--benchmark_min_time=0.05s",
         // Every repetition's row has its counts: the calls Google Benchmark
         // discards while it warms up (as the suite's repetitions ask) and sizes
         // the iterations are the only ones not counted.
         "--benchmark_min_warmup_time=0.02", "--benchmark_repetitions=2",
         "--benchmark_report_aggregates_only=false", "--benchmark_display_aggregates_only=false"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    ASSERT_TRUE(run.json.ok()) << run.json.status();
    ASSERT_TRUE(run.context.contains("attribution"));
    EXPECT_EQ(run.context.at("attribution"),
              std::string(mode) == "true" ? "counting_pass" : "timed");
    int rows = 0;
    for (const BenchmarkResult& benchmark : run.benchmarks) {
      SCOPED_TRACE(benchmark.name);
      if (absl::EndsWith(benchmark.name, "_mean") || absl::EndsWith(benchmark.name, "_median") ||
          absl::EndsWith(benchmark.name, "_stddev") || absl::EndsWith(benchmark.name, "_cv")) {
        continue;
      }
      ++rows;
      ASSERT_TRUE(benchmark.Timed()) << benchmark.message;
      if (!benchmark.numbers.count("xcalls/op")) GTEST_SKIP() << "no xcalls counter here";
      EXPECT_GT(benchmark.Number("count_ops"), 0.0);
      EXPECT_TRUE(benchmark.numbers.count("ctx_switches/op")) << "no ctx_switches/op";
      if (absl::StartsWith(benchmark.name, "BM_BreakpointEnable/")) {
        xcalls[mode] = benchmark.Number("xcalls/op");
        if (std::string(mode) == "true") {
          // Sized by iterations: at most the pass's 200, no more than were timed unless
          // that was under the minimum of 16.
          EXPECT_LE(benchmark.Number("count_ops"), 200.0);
          EXPECT_GE(benchmark.Number("count_ops"), 16.0);
          EXPECT_LE(benchmark.Number("count_ops"), std::max(16.0, benchmark.Number("iterations")));
        } else {
          EXPECT_EQ(benchmark.Number("count_ops"), benchmark.Number("iterations"));
        }
      } else {
        // Thread churn has counts too: every create+join switches to the new thread and
        // back (a toggle of breakpoints that blocked threads inherited need not switch).
        EXPECT_GT(benchmark.Number("ctx_switches/op"), 0.0);
        // One churn iteration counted: repeat x threads thread create+joins.
        if (std::string(mode) == "true") {
          EXPECT_EQ(benchmark.Number("count_ops"), 4.0);
        }
      }
    }
    EXPECT_EQ(rows, 4) << "2 benchmarks x 2 repetitions";
  }
  EXPECT_NEAR(xcalls["true"], 4.0, 4.0 * 0.05);
  EXPECT_NEAR(xcalls["timed"], 4.0, 4.0 * 0.05);
}

// Each enable row says how many inheriting threads last ran on another CPU than the
// toggler's when its loop began, for the timed pass and for the pass its counts came
// from: none where they share its CPU, every one where they do not, and, left to the
// scheduler, some share of them. Pinned to other CPUs, each of those costs at least 2
// cross-CPU calls per toggle (xcalls/op).
TEST_F(BreakpointBinaryTest, EachEnableRowSaysHowManyCopiesSatOnOtherCpus) {
  if (absl::Status s = ProbeCapabilities().RequireBreakpointPmu(); !s.ok()) {
    GTEST_SKIP() << s.message();
  }
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "placement other_cpus needs 2 CPUs";
  BinaryRun run = RunFamilyBinary(
      kBinary, {"--breakpoint_passive=2", "--breakpoint_active=1",
                "--breakpoint_placement=unpinned,same_cpu,other_cpus",
                "--benchmark_filter=BM_BreakpointEnable", "--benchmark_min_time=0.02s"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_TRUE(run.json.ok()) << run.json.status();
  std::map<std::string, const BenchmarkResult*> rows;
  for (const BenchmarkResult& benchmark : run.benchmarks) {
    rows[benchmark.name.substr(0, benchmark.name.find("/real_time"))] = &benchmark;
  }
  const std::string prefix = "BM_BreakpointEnable/passive:2/active:1/placement:";
  for (const char* placement : {"unpinned", "same_cpu", "other_cpus"}) {
    SCOPED_TRACE(placement);
    ASSERT_TRUE(rows.count(prefix + placement));
    const BenchmarkResult& row = *rows.at(prefix + placement);
    ASSERT_TRUE(row.Timed()) << row.message;
    for (const char* figure : {"copies_on_other_cpus", "count_copies_on_other_cpus"}) {
      ASSERT_TRUE(row.numbers.count(figure)) << figure;
      const double copies = row.Number(figure);
      if (std::string(placement) == "same_cpu") {
        EXPECT_EQ(copies, 0.0) << figure;
      } else if (std::string(placement) == "other_cpus") {
        EXPECT_EQ(copies, 3.0) << figure;
      }
      EXPECT_GE(copies, 0.0) << figure;
      EXPECT_LE(copies, 3.0) << figure;
    }
    if (std::string(placement) == "other_cpus" && row.numbers.count("xcalls/op")) {
      // At least 2 per copy elsewhere; the spinning thread's CPU may add a few calls of
      // its own (6.41 per op seen for 3 copies), never another copy's worth.
      const double copies = row.Number("count_copies_on_other_cpus");
      EXPECT_GE(row.Number("xcalls/op"), 2 * copies - 0.05);
      EXPECT_LT(row.Number("xcalls/op"), 2 * (copies + 1));
    }
  }
}

TEST_F(BreakpointBinaryTest, BenchmarkFilterSelectsAFamily) {
  ::perfscale::testing::CommandResult result = ::perfscale::testing::RunRunfile(
      kBinary,
      {"--breakpoint_breakpoints=0", "--breakpoint_parallelism=1", "--breakpoint_passive=0",
       "--breakpoint_active=1", "--breakpoint_placement=unpinned", "--benchmark_filter=Thread",
       "--benchmark_list_tests=true"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  // By default 20 threads per batch, and 2048/CPUs (at least 250): thousands of live
  // inherited breakpoints, where the seed's kernels slow down.
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const long large = std::max(250L, (2048 + cpus - 1) / cpus);
  EXPECT_EQ(result.out,
            absl::StrCat("BM_BreakpointThread/breakpoints:0/parallelism:1/threads:20/real_time\n",
                         "BM_BreakpointThread/breakpoints:0/parallelism:1/threads:", large,
                         "/real_time\n"));
}

TEST_F(BreakpointBinaryTest, QuickChurnsTwentyThreadsABatch) {
  ::perfscale::testing::CommandResult result = ::perfscale::testing::RunRunfile(
      kBinary, {"--quick", "--breakpoint_breakpoints=0", "--breakpoint_parallelism=1",
                "--benchmark_filter=Thread", "--benchmark_list_tests=true"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "BM_BreakpointThread/breakpoints:0/parallelism:1/threads:20/real_time\n");
}

TEST_F(BreakpointBinaryTest, BadValuesExitTwoNamingTheFlagBeforeRunning) {
  std::vector<BadFlag> cases = {
      {{"--breakpoint_breakpoints=-1"}, "--breakpoint_breakpoints=-1: -1 is out of range"},
      {{"--breakpoint_breakpoints=99"}, "--breakpoint_breakpoints=99: 99 is out of range"},
      {{"--breakpoint_breakpoints=0,x"}, "--breakpoint_breakpoints=0,x: 'x' is not an integer"},
      {{"--breakpoint_threads=0"}, "--breakpoint_threads=0: 0 is out of range"},
      {{"--breakpoint_repeat=-5"}, "--breakpoint_repeat=-5: -5 is out of range"},
      {{"--breakpoint_parallelism=abc"}, "--breakpoint_parallelism=abc: 'abc' is not an integer"},
      {{"--breakpoint_parallelism=0"}, "--breakpoint_parallelism=0: 0 is out of range"},
      {{"--breakpoint_passive=-1"}, "--breakpoint_passive=-1: -1 is out of range"},
      {{"--breakpoint_active=4-2"}, "--breakpoint_active=4-2: descending range '4-2'"},
      {{"--breakpoint_placement=bogus"}, "--breakpoint_placement=bogus: unknown value 'bogus'"},
      {{"--attribution=maybe"},
       "--attribution=maybe: 'maybe' is not a boolean (allowed: true, false or timed)"},
      {{"--unknown_flag=1"}, "unknown flag --unknown_flag"},
      {{"--breakpoint_threads"}, "flag --breakpoint_threads needs a value"},
      {{"stray"}, "unexpected argument 'stray'"},
      {{"--profile_hz=0"}, "--profile_hz=0: 0 is out of range"},
      {{"--profile=maybe"}, "--profile"},
      {{"--profile", "--profile_out=/nonexistent/dir/p.json"},
       "--profile_out: cannot write '/nonexistent/dir/p.json'"},
      // More threads than this process may create: 4096 workers x 100001 threads.
      {{"--breakpoint_parallelism=4096", "--breakpoint_threads=100000"},
       "--breakpoint_parallelism=4096 --breakpoint_threads=100000: needs"},
  };
  absl::StatusOr<BreakpointSlots> slots = ProbeBreakpointSlots();
  if (slots.ok() && slots->hardware < 64) {
    std::string too_many = absl::StrCat(slots->hardware + 1);
    cases.push_back({{"--breakpoint_breakpoints=0," + too_many},
                     absl::StrCat("--breakpoint_breakpoints=0,", too_many, ": ", too_many,
                                  " breakpoints asked for, but the hardware has ", slots->hardware,
                                  " breakpoint slots")});
  }
  ::perfscale::testing::ExpectUsageErrors(kBinary, cases);
}

}  // namespace
}  // namespace perfscale
