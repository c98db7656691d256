// Runs the real //benchmarks:trace_overhead binary the way a user does: tiny parameters
// and --benchmark_format=json must give the expected benchmarks and counters, the
// baseline first so that recorded runs carry overhead_pct, and a context that names the
// kernel's lock tracepoints and syscall copies; bad values, including a ring buffer over
// the mlock limit, must exit 2 before anything runs.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "benchmarks/trace_overhead/trace_recorder.h"
#include "gtest/gtest.h"
#include "lib/capabilities.h"
#include "lib/file_reader.h"
#include "lib/tracefs.h"
#include "nlohmann/json.hpp"
#include "testing/common/benchmark_json.h"
#include "testing/common/family_harness.h"

namespace perfscale {
namespace {

using ::perfscale::testing::ParseBenchmarkJson;

using Result = ::perfscale::testing::CommandResult;
using ::perfscale::testing::BadFlag;
using ::perfscale::testing::BenchmarkResult;
using ::perfscale::testing::BinaryRun;
using ::perfscale::testing::RunCommand;
using ::perfscale::testing::RunFamilyBinary;

constexpr char kBinary[] = "benchmarks/trace_overhead/trace_overhead";

std::string BinaryPath() { return ::perfscale::testing::FamilyBinaryPath(kBinary); }

class TraceOverheadBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(access(BinaryPath().c_str(), X_OK), 0) << BinaryPath() << " is not there";
  }
};

TEST_F(TraceOverheadBinaryTest, JsonHasTheBaselineFirstAndTheCounters) {
  Capabilities caps = ProbeCapabilities();
  if (absl::Status s = caps.RequireTracefs(); !s.ok()) GTEST_SKIP() << s.message();
  BinaryRun run = RunFamilyBinary(
      kBinary, {"--trace_overhead_sets=none,sched", "--trace_overhead_recorder=ring",
                "--trace_overhead_callchains=off,on", "--trace_overhead_scope=task",
                "--trace_overhead_placement=unpinned", "--trace_overhead_ring_pages=16",
                "--trace_overhead_tracepoints=nosuch:event", "--benchmark_filter=BM_PipePingPong",
                "--benchmark_min_time=0.01s"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_TRUE(run.json.ok()) << run.json.status() << "\n" << run.out;
  for (const BenchmarkResult& benchmark : run.benchmarks) {
    const std::string& name = benchmark.name;
    SCOPED_TRACE(name);
    if (absl::StrContains(name, "set:custom")) {
      // Well-formed but not on this kernel: a skip naming the tracepoint.
      EXPECT_TRUE(benchmark.skipped) << benchmark.message;
      EXPECT_TRUE(absl::StrContains(benchmark.message, "nosuch:event")) << benchmark.message;
      continue;
    }
    ASSERT_TRUE(benchmark.Timed()) << benchmark.message;
    EXPECT_EQ(benchmark.time_unit, "us");
    EXPECT_GT(benchmark.Number("usecs/op"), 0.0);
    EXPECT_GE(benchmark.Number("ipis_system/op"), 0.0);
    EXPECT_GE(benchmark.Number("sys_us/op"), 0.0);
    if (absl::StrContains(name, "set:none")) continue;
    EXPECT_EQ(benchmark.label, "sched:sched_switch,sched:sched_wakeup");
    EXPECT_GT(benchmark.Number("samples/op"), 0.0);
    EXPECT_GT(benchmark.Number("bytes/op"), benchmark.Number("samples/op") * 48);
    EXPECT_GE(benchmark.Number("lost"), 0.0);
    // Present, and a percentage of a positive figure: finite and above -100.
    EXPECT_GT(benchmark.Number("overhead_pct"), -100.0);
  }
  std::vector<std::string> expected = {
      "BM_PipePingPong/set:none/tasks:processes/placement:unpinned/real_time",
      "BM_PipePingPong/set:sched/callchains:off/scope:task/tasks:processes/placement:unpinned/"
      "sink:discard/real_time",
      "BM_PipePingPong/set:sched/callchains:on/scope:task/tasks:processes/placement:unpinned/"
      "sink:discard/real_time",
      "BM_PipePingPong/set:custom/callchains:off/scope:task/tasks:processes/"
      "placement:unpinned/sink:discard/real_time",
      "BM_PipePingPong/set:custom/callchains:on/scope:task/tasks:processes/"
      "placement:unpinned/sink:discard/real_time",
  };
  EXPECT_EQ(run.names(), expected);
}

// recorder:bpf on every set and scope: the BPF side's counters beside the shared ones.
TEST_F(TraceOverheadBinaryTest, BpfRecorderReportsWhatItAggregated) {
  BinaryRun run = RunFamilyBinary(
      kBinary, {"--trace_overhead_sets=none,lock,sched,syscalls", "--trace_overhead_recorder=bpf",
                "--trace_overhead_scope=cpu,task", "--trace_overhead_placement=same_cpu",
                "--benchmark_filter=BM_PipePingPong", "--benchmark_min_time=0.01s"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_TRUE(run.json.ok()) << run.json.status() << "\n" << run.out;
  for (const BenchmarkResult& benchmark : run.benchmarks) {
    const std::string& name = benchmark.name;
    SCOPED_TRACE(name);
    if (!benchmark.Timed()) {
      const std::string& message = benchmark.message;
      // Only what the machine forbids may stop it: as root, only missing BTF (at run or
      // build time) or a build without bpftool or clang.
      EXPECT_TRUE(benchmark.skipped) << message;
      EXPECT_TRUE(geteuid() != 0 || absl::StrContains(message, "BTF") ||
                  absl::StrContains(message, "was not built"))
          << message;
      continue;
    }
    if (absl::StrContains(name, "set:none")) continue;
    for (const char* counter : {"usecs/op", "overhead_pct", "samples/op", "bytes/op", "lost",
                                "bpf_pairs/op", "bpf_wait_us/op", "bpf_keys", "bpf_unpaired",
                                "bpf_wait_p50_us", "bpf_wait_p99_us", "bpf_wait_max_us"}) {
      EXPECT_GE(benchmark.Number(counter), counter == std::string("overhead_pct") ? -100.0 : 0.0)
          << counter;
    }
    EXPECT_EQ(benchmark.Number("lost"), 0.0);
    EXPECT_TRUE(absl::StartsWith(benchmark.label, "bpf ")) << name;
    if (!absl::StrContains(name, "set:lock")) {
      // Every round trip switches and makes syscalls; contention may not happen at all.
      EXPECT_GT(benchmark.Number("samples/op"), 1.0);
      EXPECT_GT(benchmark.Number("bpf_pairs/op"), 0.5);
    }
  }
  std::vector<std::string> expected = {
      "BM_PipePingPong/set:none/tasks:processes/placement:same_cpu/real_time"};
  for (const char* set : {"lock", "sched", "syscalls"}) {
    for (const char* scope : {"cpu", "task"}) {
      expected.push_back(absl::StrCat("BM_PipePingPong/set:", set, "/recorder:bpf/scope:", scope,
                                      "/tasks:processes/placement:same_cpu/real_time"));
    }
  }
  EXPECT_EQ(run.names(), expected);
}

TEST_F(TraceOverheadBinaryTest, WithoutTheBaselineThereIsNoOverhead) {
  if (absl::Status s = ProbeCapabilities().RequireTracefs(); !s.ok()) {
    GTEST_SKIP() << s.message();
  }
  BinaryRun run = RunFamilyBinary(
      kBinary, {"--trace_overhead_sets=sched", "--trace_overhead_recorder=ring",
                "--trace_overhead_callchains=off", "--trace_overhead_scope=task",
                "--trace_overhead_ring_pages=16", "--trace_overhead_placement=unpinned",
                "--trace_overhead_syscall_tracepoints=syscalls", "--benchmark_min_time=0.01s"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_TRUE(run.json.ok()) << run.json.status();
  ASSERT_EQ(run.benchmarks.size(), 3u);  // the ping-pong's sched, each syscall's syscalls
  for (const BenchmarkResult& benchmark : run.benchmarks) {
    EXPECT_FALSE(benchmark.Has("overhead_pct")) << benchmark.name;
  }
}

// BM_TracedSyscall: the baseline first, then the raw and the per-syscall events of each
// syscall, one enter and one exit sample a call; the user memory the kernel's events
// copy, named alike in the label, the counter and the run's context; and the context's
// lock tracepoints are every lock tracepoint the kernel lists, as the lock row records.
TEST_F(TraceOverheadBinaryTest, TracedSyscallsAndTheKernelsListsInTheContext) {
  if (absl::Status s = ProbeCapabilities().RequireTracefs(); !s.ok()) GTEST_SKIP() << s.message();
  BinaryRun run =
      RunFamilyBinary(kBinary, {"--trace_overhead_sets=lock", "--trace_overhead_recorder=ring",
                                "--trace_overhead_callchains=off", "--trace_overhead_scope=task",
                                "--trace_overhead_placement=same_cpu",
                                "--trace_overhead_ring_pages=16", "--benchmark_min_time=0.01s"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_TRUE(run.json.ok()) << run.json.status() << "\n" << run.out;
  std::vector<std::string> expected = {
      "BM_PipePingPong/set:lock/callchains:off/scope:task/tasks:processes/placement:same_cpu/"
      "sink:discard/real_time"};
  for (const char* syscall : {"write", "openat"}) {
    for (const char* events : {"none", "raw_syscalls", "syscalls"}) {
      expected.push_back(absl::StrCat("BM_TracedSyscall/syscall:", syscall, "/tracepoints:", events,
                                      "/real_time"));
    }
  }
  EXPECT_EQ(run.names(), expected);

  absl::StatusOr<std::string> available =
      ReadTextFile(absl::StrCat(*TracefsRoot(), "/available_events"));
  ASSERT_TRUE(available.ok()) << available.status();
  const std::string lock_list = absl::StrJoin(SubsystemTracepoints(*available, "lock"), ",");
  if (lock_list.empty()) {
    EXPECT_TRUE(absl::StartsWith(run.context.value("lock_tracepoints", ""), "unavailable: "));
  } else {
    EXPECT_EQ(run.context.value("lock_tracepoints", ""), lock_list);
    EXPECT_EQ(run.benchmarks[0].label, lock_list);
  }
  const std::string copies = run.context.value("syscall_user_fields", "");
  EXPECT_FALSE(copies.empty());

  for (const BenchmarkResult& benchmark : run.benchmarks) {
    const std::string& name = benchmark.name;
    if (!absl::StartsWith(name, "BM_TracedSyscall/")) continue;
    SCOPED_TRACE(name);
    ASSERT_TRUE(benchmark.Timed()) << benchmark.message;
    EXPECT_GT(benchmark.Number("usecs/op"), 0.0);
    if (absl::StrContains(name, "tracepoints:none")) {
      EXPECT_FALSE(benchmark.Has("samples/op"));
      continue;
    }
    EXPECT_GT(benchmark.Number("overhead_pct"), -100.0);
    // An enter and an exit a call (written or lost in 16 pages), and little else: the
    // thread makes no other syscall while it is recorded but the recorder's enable and
    // disable.
    const double iterations = benchmark.Number("iterations");
    const double per_call = benchmark.Number("samples/op") + benchmark.Number("lost") / iterations;
    EXPECT_GE(per_call, 2.0);
    EXPECT_LT(per_call, 2.2);
    const bool own = absl::StrContains(name, "tracepoints:syscalls");
    const std::string syscall = absl::StrContains(name, "syscall:write") ? "write" : "openat";
    const std::string enter = absl::StrCat("syscalls:sys_enter_", syscall);
    EXPECT_TRUE(
        absl::StartsWith(benchmark.label, own ? absl::StrCat(enter, ",syscalls:sys_exit_", syscall)
                                              : "raw_syscalls:sys_enter,"))
        << benchmark.label;
    // What the context says this kernel's enter event copies, the row says too.
    const bool copied = absl::StrContains(copies, enter + ":");
    EXPECT_EQ(benchmark.Number("user_fields") > 0, own && copied);
    EXPECT_EQ(absl::StrContains(benchmark.label, "; copied: " + enter), own && copied)
        << benchmark.label;
  }
}

TEST_F(TraceOverheadBinaryTest, BadValuesExitTwoNamingTheFlagBeforeRunning) {
  std::vector<BadFlag> cases = {
      {{"--trace_overhead_ring_pages=1000"},
       "--trace_overhead_ring_pages=1000: ring buffer size must be a power of two"},
      {{"--trace_overhead_ring_pages=0"}, "--trace_overhead_ring_pages=0: 0 is out of range"},
      {{"--trace_overhead_ring_pages=lots"},
       "--trace_overhead_ring_pages=lots: 'lots' is not an integer"},
      {{"--trace_overhead_sets=none,locks"},
       "--trace_overhead_sets=none,locks: unknown value 'locks'"},
      {{"--trace_overhead_sets="}, "--trace_overhead_sets"},
      {{"--trace_overhead_tracepoints=sched_switch"},
       "--trace_overhead_tracepoints=sched_switch: bad tracepoint name 'sched_switch'"},
      {{"--trace_overhead_tracepoints=sched:../x"},
       "--trace_overhead_tracepoints=sched:../x: bad tracepoint name"},
      {{"--trace_overhead_callchains=yes"}, "--trace_overhead_callchains=yes: unknown value 'yes'"},
      {{"--trace_overhead_scope=all"}, "--trace_overhead_scope=all: unknown value 'all'"},
      {{"--trace_overhead_tasks=fibers"}, "--trace_overhead_tasks=fibers: unknown value 'fibers'"},
      {{"--trace_overhead_placement=far"}, "--trace_overhead_placement=far: unknown value 'far'"},
      {{"--trace_overhead_sink=null"}, "--trace_overhead_sink=null: unknown value 'null'"},
      {{"--trace_overhead_recorder=perf"}, "--trace_overhead_recorder=perf: unknown value 'perf'"},
      {{"--trace_overhead_recorder="}, "--trace_overhead_recorder"},
      {{"--trace_overhead_syscalls=read"}, "--trace_overhead_syscalls=read: unknown value 'read'"},
      {{"--trace_overhead_syscalls="}, "--trace_overhead_syscalls"},
      {{"--trace_overhead_syscall_tracepoints=lock"},
       "--trace_overhead_syscall_tracepoints=lock: unknown value 'lock'"},
  };
  ::perfscale::testing::ExpectUsageErrors(kBinary, cases);
}

// Without CAP_IPC_LOCK (dropped from the bounding set, so root's exec cannot regain it)
// and with a 64 KiB RLIMIT_MEMLOCK, perf lock's 1024-page buffers on every CPU exceed
// what the kernel would lock: the binary says so and exits 2 before running anything.
TEST_F(TraceOverheadBinaryTest, RingBuffersOverTheMlockLimitExitTwo) {
  if (access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/setpriv";
  if (access("/bin/sh", X_OK) != 0) GTEST_SKIP() << "no /bin/sh";
  std::string script = absl::StrCat(
      "ulimit -l 64 && exec /usr/bin/setpriv --bounding-set=-ipc_lock --inh-caps=-ipc_lock ",
      BinaryPath(),
      " --trace_overhead_sets=none,sched --trace_overhead_ring_pages=1024 --benchmark_list_tests");
  Result result = RunCommand({"/bin/sh", "-c", script});
  if (result.exit_code == 0) {
    // perf_event_paranoid -1 lifts the limit; nothing to check then.
    GTEST_SKIP() << "no mlock limit applies: " << result.err;
  }
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_TRUE(absl::StrContains(result.err, "--trace_overhead_ring_pages=1024:")) << result.err;
  EXPECT_TRUE(absl::StrContains(result.err, "perf_event_mlock_kb")) << result.err;
  EXPECT_TRUE(absl::StrContains(result.err, "RLIMIT_MEMLOCK 64 KiB")) << result.err;
  EXPECT_FALSE(absl::StrContains(result.out, "BM_")) << result.out;

  // The same default size, not asked for: the binary runs, the recorded runs skip
  // with the reason (so that `all` still runs every other family).
  std::string by_default = absl::StrCat(
      "ulimit -l 64 && exec /usr/bin/setpriv --bounding-set=-ipc_lock --inh-caps=-ipc_lock ",
      BinaryPath(),
      " --trace_overhead_sets=none,sched --trace_overhead_recorder=ring "
      "--trace_overhead_callchains=off --trace_overhead_scope=task "
      "--trace_overhead_placement=unpinned --benchmark_filter=BM_PipePingPong "
      "--benchmark_min_time=0.01s --benchmark_format=json");
  Result defaulted = RunCommand({"/bin/sh", "-c", by_default});
  ASSERT_EQ(defaulted.exit_code, 0) << defaulted.err;
  absl::StatusOr<nlohmann::json> doc = ParseBenchmarkJson(defaulted.out);
  ASSERT_TRUE(doc.ok()) << doc.status() << defaulted.out;
  ASSERT_TRUE(doc->contains("benchmarks")) << defaulted.out;
  const nlohmann::json& benchmarks = doc->at("benchmarks");
  ASSERT_EQ(benchmarks.size(), 2u);
  const nlohmann::json& recorded = benchmarks[1];
  // A skip in Google Benchmark's own form (1.8+), not an error.
  EXPECT_FALSE(recorded.contains("error_occurred")) << recorded.dump();
  ASSERT_TRUE(recorded.contains("skipped"));
  EXPECT_EQ(recorded.at("skipped"), true);
  std::string why = recorded.value("skip_message", "");
  EXPECT_TRUE(absl::StartsWith(why, "the default --trace_overhead_ring_pages=1024")) << why;
  EXPECT_TRUE(absl::StrContains(why, "RLIMIT_MEMLOCK 64 KiB")) << why;

  // The baselines alone map nothing: no limit applies.
  std::string none_only = absl::StrCat(
      "ulimit -l 64 && exec /usr/bin/setpriv --bounding-set=-ipc_lock --inh-caps=-ipc_lock ",
      BinaryPath(),
      " --trace_overhead_sets=none --trace_overhead_syscall_tracepoints=none "
      "--trace_overhead_ring_pages=1024 --benchmark_list_tests");
  Result baseline = RunCommand({"/bin/sh", "-c", none_only});
  EXPECT_EQ(baseline.exit_code, 0) << baseline.err;
}

}  // namespace
}  // namespace perfscale
