// Runs the trace_overhead family in this process with tiny parameters, the way the
// benchmark binary does (flags, then registration, then Google Benchmark), and checks
// what every run reports and that the process is left as found: fds, threads,
// children (the forked peers) and the calling thread's affinity (pinned placements).
#include <map>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "benchmarks/harness/flags.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/common/family_harness.h"

namespace perfscale {
namespace {

using ::testing::HasSubstr;

struct RunResult {
  bool skipped = false;  // SkipWithMessage
  bool timed = false;    // neither skipped nor failed
  std::string message;
  std::string label;
  int64_t iterations = 0;
  std::map<std::string, double> counters;
};

// The runs by name, counters as plain numbers.
std::map<std::string, RunResult> ByName(const std::vector<testing::BenchmarkRun>& runs) {
  std::map<std::string, RunResult> results;
  for (const testing::BenchmarkRun& run : runs) {
    RunResult& result = results[run.benchmark_name()];
    result.skipped = testing::Skipped(run);
    result.timed = testing::Timed(run);
    result.message = run.skip_message;
    result.label = run.report_label;
    result.iterations = static_cast<int64_t>(run.iterations);
    for (const auto& [name, counter] : run.counters) result.counters[name] = counter.value;
  }
  return results;
}

absl::Status RegisterWithFlags(const std::vector<std::string>& flags) {
  return testing::RegisterFamily("trace_overhead", flags);
}

TEST(TraceOverheadFamilyTest, RejectsBadFlagsBeforeRegistering) {
  struct Case {
    std::string flag;
    std::string expect;
  };
  for (const Case& c : std::vector<Case>{
           {"--trace_overhead_ring_pages=1000", "power of two"},
           {"--trace_overhead_ring_pages=0", "--trace_overhead_ring_pages"},
           {"--trace_overhead_sets=none,locks", "locks"},
           {"--trace_overhead_tracepoints=sched_switch", "sched_switch"},
           {"--trace_overhead_callchains=maybe", "maybe"},
           {"--trace_overhead_scope=process", "process"},
           {"--trace_overhead_tasks=fibers", "fibers"},
           {"--trace_overhead_placement=numa", "numa"},
           {"--trace_overhead_sink=pipe", "pipe"},
           {"--trace_overhead_recorder=perf", "perf"},
       }) {
    absl::Status status = RegisterWithFlags({c.flag});
    EXPECT_FALSE(status.ok()) << c.flag;
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.expect)) << c.flag;
  }
  ResetFlagsForTest();
}

TEST(TraceOverheadFamilyTest, EveryLayoutRunsReportsAndLeavesTheProcessAsFound) {
  std::map<std::string, RunResult> results;
  absl::Status registered;
  EXPECT_TRUE(testing::LeavesProcessAsFound([&] {
    registered = RegisterWithFlags(
        {"--trace_overhead_sets=none,syscalls", "--trace_overhead_callchains=off,on",
         "--trace_overhead_scope=cpu,task", "--trace_overhead_tasks=processes,threads",
         "--trace_overhead_placement=unpinned,same_cpu,other_cpus",
         "--trace_overhead_ring_pages=16", "--trace_overhead_sink=discard,file",
         "--trace_overhead_tracepoints=sched:no_such_event",
         "--trace_overhead_syscall_tracepoints=none,raw_syscalls,syscalls"});
    if (registered.ok()) results = ByName(testing::RunBenchmarks());
    benchmark::ClearRegisteredBenchmarks();
    ResetFlagsForTest();
  }));
  ASSERT_TRUE(registered.ok()) << registered;

  // 2 tasks x 3 placements x (1 none + 2 sets x 2 callchains x 2 scopes x 2 sinks for the
  // ring recorder + 2 scopes of syscalls for the BPF recorder, which has no custom set),
  // then 2 syscalls x 3 kinds of events (BM_TracedSyscall).
  EXPECT_EQ(results.size(), 2u * 3u * (1u + 2u * 2u * 2u * 2u + 2u) + 2u * 3u);
  int pinned_skips = 0;
  for (const auto& [name, run] : results) {
    SCOPED_TRACE(name);
    if (name.find("other_cpus") != std::string::npos && run.skipped &&
        run.message.find("at least 2 CPUs") != std::string::npos) {
      ++pinned_skips;  // a one-CPU machine
      continue;
    }
    if (name.find("set:custom") != std::string::npos) {
      // A well-formed name the kernel does not have: skipped, naming it.
      EXPECT_TRUE(run.skipped) << run.message;
      EXPECT_THAT(run.message, HasSubstr("sched:no_such_event"));
      continue;
    }
    ASSERT_TRUE(run.timed) << run.message;
    EXPECT_GT(run.counters.at("usecs/op"), 0);
    if (name.find("BM_TracedSyscall/") == 0) {
      // One syscall an iteration; recorded, an enter and an exit (written or lost).
      const bool recorded = name.find("tracepoints:none") == std::string::npos;
      EXPECT_EQ(run.counters.count("samples/op"), recorded ? 1u : 0u);
      EXPECT_EQ(run.counters.count("overhead_pct"), recorded ? 1u : 0u);
      if (recorded) {
        EXPECT_GE(run.counters.at("samples/op") + run.counters.at("lost") / run.iterations, 2.0);
      }
      continue;
    }
    if (name.find("set:none") != std::string::npos) {
      EXPECT_EQ(run.counters.count("samples/op"), 0u);
      continue;
    }
    if (name.find("recorder:bpf") != std::string::npos) {
      // The caller's write and read, entered and exited, each paired.
      EXPECT_THAT(run.label, HasSubstr("bpf syscalls: "));
      EXPECT_GE(run.counters.at("samples/op"), 4.0);
      EXPECT_GE(run.counters.at("bpf_pairs/op"), 2.0);
      EXPECT_EQ(run.counters.at("lost"), 0.0);
      EXPECT_EQ(run.counters.count("overhead_pct"), 1u);
      continue;
    }
    EXPECT_EQ(run.label, "raw_syscalls:sys_enter,raw_syscalls:sys_exit");
    // Every round trip is at least the caller's write and read, entered and exited:
    // each a sample, written or lost (16-page buffers can overflow on a busy machine).
    ASSERT_GT(run.iterations, 0);
    EXPECT_GE(run.counters.at("samples/op") + run.counters.at("lost") / run.iterations, 4.0);
    // The same for the bytes: a lost sample wrote none (seen on a loaded machine).
    EXPECT_GT(run.counters.at("bytes/op") + run.counters.at("lost") / run.iterations * 56,
              4.0 * 56);
    EXPECT_EQ(run.counters.count("lost"), 1u);
    // The none run of the same layout ran first in this process.
    EXPECT_EQ(run.counters.count("overhead_pct"), 1u);
  }
  (void)pinned_skips;
}

}  // namespace
}  // namespace perfscale

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Tiny runs: this checks behaviour, not speed.
  perfscale::testing::InitializeBenchmark({"--benchmark_min_time=0.005s"});
  return RUN_ALL_TESTS();
}
