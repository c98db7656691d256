#include "benchmarks/trace_overhead/trace_recorder.h"

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "benchmarks/trace_overhead/pipe_pingpong.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/capabilities.h"
#include "lib/errno_status.h"
#include "lib/file_reader.h"
#include "testing/common/process_state.h"

namespace perfscale {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kMounts[] = "sysfs /sys sysfs rw 0 0\nnone /sys/kernel/tracing tracefs rw 0 0\n";

// A tracefs with exactly the given events ("lock:contention_begin" -> id), listed in its
// available_events too.
TextFileReader FakeTracefs(std::map<std::string, std::string> events, std::string mounts = kMounts,
                           bool readable = true) {
  return [events, mounts, readable](const std::string& path) -> absl::StatusOr<std::string> {
    if (path == "/proc/mounts") return mounts;
    if (!readable) return ErrnoStatus(EACCES, path);
    if (path == "/sys/kernel/tracing/available_events") {
      std::string listed;
      for (const auto& [name, id] : events) absl::StrAppend(&listed, name, "\n");
      return listed;
    }
    for (const auto& [name, id] : events) {
      std::string subsystem = name.substr(0, name.find(':'));
      std::string event = name.substr(name.find(':') + 1);
      if (path == absl::StrCat("/sys/kernel/tracing/events/", subsystem, "/", event, "/id")) {
        return id + "\n";
      }
    }
    return ErrnoStatus(ENOENT, path);
  };
}

TEST(TracepointSetTest, LockIsEveryLockTracepointTheKernelHas) {
  // A lockdep kernel with lock_stat: six, sorted.
  auto lockdep = FakeTracefs({{"lock:lock_acquire", "1"},
                              {"lock:lock_acquired", "2"},
                              {"lock:lock_contended", "3"},
                              {"lock:lock_release", "4"},
                              {"lock:contention_begin", "5"},
                              {"lock:contention_end", "6"},
                              {"sched:sched_switch", "7"}});
  absl::StatusOr<std::vector<std::string>> set = TracepointSet("lock", lockdep);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_THAT(*set, ElementsAre("lock:contention_begin", "lock:contention_end", "lock:lock_acquire",
                                "lock:lock_acquired", "lock:lock_contended", "lock:lock_release"));
  // Most kernels: the contention tracepoints only.
  set = TracepointSet("lock",
                      FakeTracefs({{"lock:contention_begin", "5"}, {"lock:contention_end", "6"}}));
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_THAT(*set, ElementsAre("lock:contention_begin", "lock:contention_end"));
}

TEST(SubsystemTracepointsTest, ParsesAvailableEvents) {
  // As the kernel lists them: unsorted, other subsystems between.
  constexpr char kAvailable[] =
      "lock:contention_end\nsched:sched_switch\nlock:contention_begin\n"
      "lockd:xprt_lookup_rpcb\n  lock:lock_acquire  \n\nnot a line\nlock:\n:lock\n"
      "lock:contention_end\nlock:bad/name\n";
  EXPECT_THAT(SubsystemTracepoints(kAvailable, "lock"),
              ElementsAre("lock:contention_begin", "lock:contention_end", "lock:lock_acquire"));
  EXPECT_THAT(SubsystemTracepoints(kAvailable, "sched"), ElementsAre("sched:sched_switch"));
  EXPECT_TRUE(SubsystemTracepoints("", "lock").empty());
  EXPECT_TRUE(SubsystemTracepoints(kAvailable, "irq").empty());
}

TEST(TracepointSetTest, NoLockTracepointsSaysWhatWouldGiveThem) {
  absl::StatusOr<std::vector<std::string>> set =
      TracepointSet("lock", FakeTracefs({{"sched:sched_switch", "7"}}));
  ASSERT_TRUE(absl::IsNotFound(set.status())) << set.status();
  EXPECT_THAT(std::string(set.status().message()), HasSubstr("available_events"));
  EXPECT_THAT(std::string(set.status().message()), HasSubstr("lock:contention_begin"));
  EXPECT_THAT(std::string(set.status().message()), HasSubstr("CONFIG_LOCKDEP"));
}

TEST(TracepointSetTest, UnreadableTracefsSaysPermissionNotMissing) {
  absl::StatusOr<std::vector<std::string>> set =
      TracepointSet("lock", FakeTracefs({{"lock:contention_begin", "5"}}, kMounts, false));
  ASSERT_TRUE(absl::IsPermissionDenied(set.status())) << set.status();
  EXPECT_THAT(std::string(set.status().message()), HasSubstr("lock tracepoints"));
  EXPECT_THAT(std::string(set.status().message()), HasSubstr("available_events"));
  EXPECT_THAT(std::string(set.status().message()), HasSubstr("root"));
}

TEST(TracepointSetTest, UnmountedTracefsSaysHowToMountIt) {
  absl::StatusOr<std::vector<std::string>> set =
      TracepointSet("lock", FakeTracefs({}, "sysfs /sys sysfs rw 0 0\n"));
  ASSERT_TRUE(absl::IsNotFound(set.status())) << set.status();
  EXPECT_THAT(std::string(set.status().message()), HasSubstr("mount -t tracefs"));
}

TEST(TracepointSetTest, FixedSetsAndUnknownNames) {
  EXPECT_THAT(*TracepointSet("sched", FakeTracefs({})),
              ElementsAre("sched:sched_switch", "sched:sched_wakeup"));
  EXPECT_THAT(*TracepointSet("syscalls", FakeTracefs({})),
              ElementsAre("raw_syscalls:sys_enter", "raw_syscalls:sys_exit"));
  absl::StatusOr<std::vector<std::string>> unknown = TracepointSet("locks", FakeTracefs({}));
  EXPECT_TRUE(absl::IsInvalidArgument(unknown.status()));
  EXPECT_THAT(std::string(unknown.status().message()), HasSubstr("'locks'"));
}

TEST(RecordingAttrTest, LooksLikePerfLockRecord) {
  perf_event_attr attr = RecordingAttr(42, /*callchains=*/false, /*inherit=*/false);
  EXPECT_EQ(attr.type, static_cast<uint32_t>(PERF_TYPE_TRACEPOINT));
  EXPECT_EQ(attr.config, 42u);
  EXPECT_EQ(attr.sample_period, 1u);
  EXPECT_EQ(attr.freq, 0u);
  const uint64_t wanted = PERF_SAMPLE_RAW | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                          PERF_SAMPLE_IP | PERF_SAMPLE_ID | PERF_SAMPLE_PERIOD;
  EXPECT_EQ(attr.sample_type, wanted);
  EXPECT_EQ(attr.disabled, 1u);
  EXPECT_EQ(attr.inherit, 0u);
  EXPECT_EQ(attr.sample_id_all, 1u);
  EXPECT_EQ(attr.read_format, static_cast<uint64_t>(PERF_FORMAT_LOST));
  EXPECT_EQ(RecordingAttr(42, false, false, /*count_lost=*/false).read_format, 0u);

  perf_event_attr chained = RecordingAttr(42, /*callchains=*/true, /*inherit=*/true);
  EXPECT_EQ(chained.sample_type, wanted | PERF_SAMPLE_CALLCHAIN);
  EXPECT_EQ(chained.sample_max_stack, 8u);
  EXPECT_EQ(chained.inherit, 1u);
}

TEST(TraceRecorderTest, RejectsBadOptionsBeforeOpeningAnything) {
  TraceRecorderOptions options;
  EXPECT_TRUE(absl::IsInvalidArgument(TraceRecorder::Open(options).status()));
  options.tracepoints = {"sched:sched_switch"};
  options.ring_pages = 3;
  EXPECT_TRUE(absl::IsInvalidArgument(TraceRecorder::Open(options).status()));
  options.ring_pages = 1;
  options.tracepoints = {"sched_switch"};  // no subsystem
  EXPECT_TRUE(absl::IsInvalidArgument(TraceRecorder::Open(options).status()));
}

TEST(TraceRecorderTest, UnknownTracepointIsNotFoundAndNamed) {
  TraceRecorderOptions options;
  options.tracepoints = {"sched:sched_switch", "sched:no_such_event"};
  absl::StatusOr<std::unique_ptr<TraceRecorder>> recorder =
      TraceRecorder::Open(options, FakeTracefs({{"sched:sched_switch", "7"}}));
  ASSERT_TRUE(absl::IsNotFound(recorder.status())) << recorder.status();
  EXPECT_THAT(std::string(recorder.status().message()), HasSubstr("sched:no_such_event"));
}

TEST(TraceRecorderTest, UnreadableTracefsNamesTheTracepointAndPermission) {
  TraceRecorderOptions options;
  options.tracepoints = {"sched:sched_switch"};
  absl::StatusOr<std::unique_ptr<TraceRecorder>> recorder =
      TraceRecorder::Open(options, FakeTracefs({{"sched:sched_switch", "7"}}, kMounts, false));
  ASSERT_TRUE(absl::IsPermissionDenied(recorder.status())) << recorder.status();
  EXPECT_THAT(std::string(recorder.status().message()), HasSubstr("sched:sched_switch"));
}

TEST(TraceRecorderTest, MissingTracefsNamesTheTracepoint) {
  TraceRecorderOptions options;
  options.tracepoints = {"sched:sched_switch"};
  absl::StatusOr<std::unique_ptr<TraceRecorder>> recorder =
      TraceRecorder::Open(options, FakeTracefs({}, "sysfs /sys sysfs rw 0 0\n"));
  ASSERT_TRUE(absl::IsNotFound(recorder.status())) << recorder.status();
  EXPECT_THAT(std::string(recorder.status().message()), HasSubstr("sched:sched_switch"));
  EXPECT_THAT(std::string(recorder.status().message()), HasSubstr("tracefs"));
}

// Kernel-backed from here on: skip only where this machine cannot trace at all.
absl::StatusOr<std::unique_ptr<TraceRecorder>> OpenOrSkipReason(const TraceRecorderOptions& options,
                                                                std::string* skip) {
  // The families' gate, which mounts tracefs on a machine where nothing did yet.
  if (absl::Status tracefs = ProbeCapabilities().RequireTracefs(); !tracefs.ok()) {
    *skip = tracefs.ToString();
    return tracefs;
  }
  absl::StatusOr<std::unique_ptr<TraceRecorder>> recorder = TraceRecorder::Open(options);
  if (!recorder.ok() && IsEnvironmentLimitation(recorder.status())) {
    *skip = recorder.status().ToString();
  }
  return recorder;
}

struct PingPongRun {
  TraceStats stats;
  int round_trips = 0;
};

// Records `options` while the caller and a peer created after Open do `round_trips`.
absl::StatusOr<PingPongRun> RecordPingPong(const TraceRecorderOptions& options,
                                           PipePingPong::Peer peer, int round_trips,
                                           std::string* skip) {
  absl::StatusOr<std::unique_ptr<TraceRecorder>> recorder = OpenOrSkipReason(options, skip);
  if (!recorder.ok()) return recorder.status();
  absl::StatusOr<std::unique_ptr<PipePingPong>> pingpong = PipePingPong::Start(peer);
  if (!pingpong.ok()) return pingpong.status();
  if (absl::Status warm = (*pingpong)->RoundTrip(); !warm.ok()) return warm;
  if (absl::Status enabled = (*recorder)->Enable(); !enabled.ok()) return enabled;
  for (int i = 0; i < round_trips; ++i) {
    if (absl::Status trip = (*pingpong)->RoundTrip(); !trip.ok()) return trip;
  }
  absl::StatusOr<TraceStats> stats = (*recorder)->Stop();
  if (!stats.ok()) return stats.status();
  if (absl::Status stopped = (*pingpong)->Stop(); !stopped.ok()) return stopped;
  return PingPongRun{*stats, round_trips};
}

class TaskScopeTest : public ::testing::TestWithParam<PipePingPong::Peer> {};

// Every round trip is 4 syscalls (the caller's write and read, the peer's read return
// and write, plus the peer's next read entering): 8 sys_enter/sys_exit samples. Half
// of that would mean the peer, created after Open, did not inherit the events.
TEST_P(TaskScopeTest, RecordsEverySyscallOfBothTasks) {
  TraceRecorderOptions options;
  options.tracepoints = {"raw_syscalls:sys_enter", "raw_syscalls:sys_exit"};
  options.scope = TraceScope::kTask;
  // 2 MiB holds the whole run, so nothing is lost however late the reader runs.
  options.ring_pages = 512;
  std::string skip;
  constexpr int kTrips = 2000;
  absl::StatusOr<PingPongRun> run = RecordPingPong(options, GetParam(), kTrips, &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_TRUE(run.ok()) << run.status();
  const TraceStats& stats = run->stats;
  EXPECT_EQ(stats.lost, 0u);
  EXPECT_GE(stats.samples + stats.lost, 8u * kTrips);
  EXPECT_LE(stats.samples + stats.lost, 8u * kTrips + 200);
  EXPECT_GE(stats.records, stats.samples);
  // Each sample: header, ip, pid/tid, time, id, cpu, period, raw size + payload.
  EXPECT_GE(stats.bytes, stats.samples * 64);
  EXPECT_GE(stats.drains, 1u);
}

INSTANTIATE_TEST_SUITE_P(Peers, TaskScopeTest,
                         ::testing::Values(PipePingPong::Peer::kProcess,
                                           PipePingPong::Peer::kThread),
                         [](const ::testing::TestParamInfo<PipePingPong::Peer>& param_info) {
                           return param_info.param == PipePingPong::Peer::kProcess ? "Process"
                                                                                   : "Thread";
                         });

TEST(TraceRecorderTest, CallchainsMakeEverySampleLarger) {
  TraceRecorderOptions options;
  options.tracepoints = {"raw_syscalls:sys_enter"};
  options.scope = TraceScope::kTask;
  options.ring_pages = 64;
  std::string skip;
  absl::StatusOr<PingPongRun> plain =
      RecordPingPong(options, PipePingPong::Peer::kThread, 500, &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_TRUE(plain.ok()) << plain.status();
  options.callchains = true;
  absl::StatusOr<PingPongRun> chained =
      RecordPingPong(options, PipePingPong::Peer::kThread, 500, &skip);
  ASSERT_TRUE(chained.ok()) << chained.status();
  ASSERT_GT(plain->stats.samples, 0u);
  ASSERT_GT(chained->stats.samples, 0u);
  double plain_size = static_cast<double>(plain->stats.bytes) / plain->stats.samples;
  double chained_size = static_cast<double>(chained->stats.bytes) / chained->stats.samples;
  // At least the entry count and one kernel frame; at most context marks + 8 frames.
  EXPECT_GE(chained_size, plain_size + 16);
  EXPECT_LE(chained_size, plain_size + 8 * (2 + kTraceCallchainDepth) + 8);
}

TEST(TraceRecorderTest, SystemWideSeesTheScheduler) {
  TraceRecorderOptions options;
  options.tracepoints = {"sched:sched_switch", "sched:sched_wakeup"};
  options.scope = TraceScope::kSystemWide;
  options.ring_pages = 64;
  std::string skip;
  constexpr int kTrips = 1000;
  absl::StatusOr<PingPongRun> run =
      RecordPingPong(options, PipePingPong::Peer::kProcess, kTrips, &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_TRUE(run.ok()) << run.status();
  // A blocking round trip wakes both sides once.
  EXPECT_GE(run->stats.samples + run->stats.lost, static_cast<uint64_t>(kTrips));
}

TEST(TraceRecorderTest, TinyBufferAccountsForEverySampleOrItsLoss) {
  TraceRecorderOptions options;
  options.tracepoints = {"raw_syscalls:sys_enter", "raw_syscalls:sys_exit"};
  options.scope = TraceScope::kTask;
  options.callchains = true;
  options.ring_pages = 1;
  std::string skip;
  constexpr int kTrips = 5000;
  absl::StatusOr<PingPongRun> run =
      RecordPingPong(options, PipePingPong::Peer::kThread, kTrips, &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_TRUE(run.ok()) << run.status();
  const TraceStats& stats = run->stats;
  if (!stats.lost_exact) GTEST_SKIP() << "this kernel does not count lost samples per event";
  // Every syscall of both tasks is a sample, written or counted as lost.
  EXPECT_GE(stats.samples + stats.lost, 8u * kTrips);
  EXPECT_LE(stats.samples + stats.lost, 8u * kTrips + 400);
  // What the records reported can only lag behind the kernel's count.
  EXPECT_LE(stats.lost_reported, stats.lost);
  if (stats.lost_reported > 0) {
    EXPECT_GT(stats.lost_records, 0u);
  }
}

TEST(TraceRecorderTest, FileSinkWritesEveryByteAndLeavesNoFile) {
  char dir_template[] = "/tmp/perfscale-recorder-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  TraceRecorderOptions options;
  options.tracepoints = {"raw_syscalls:sys_enter", "raw_syscalls:sys_exit"};
  options.scope = TraceScope::kTask;
  options.ring_pages = 8;
  options.sink = TraceSink::kFile;
  options.file_dir = dir;
  std::string skip;
  absl::StatusOr<PingPongRun> run =
      RecordPingPong(options, PipePingPong::Peer::kThread, 3000, &skip);
  EXPECT_EQ(testing::CountDirEntries(dir), 0);
  rmdir(dir.c_str());
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_TRUE(run.ok()) << run.status();
  // The 32 KiB buffer filled: either the reader drained more than it holds, or, when the
  // reader fell behind (a loaded machine), the kernel dropped what did not fit.
  EXPECT_TRUE(run->stats.bytes > 8u * 4096 || run->stats.lost > 0)
      << "bytes " << run->stats.bytes << ", lost " << run->stats.lost;
  EXPECT_EQ(run->stats.bytes_written, run->stats.bytes);
}

TEST(TraceRecorderTest, UnwritableFileDirIsAnErrorAtOpen) {
  TraceRecorderOptions options;
  options.tracepoints = {"raw_syscalls:sys_enter"};
  options.sink = TraceSink::kFile;
  options.file_dir = "/nonexistent/perfscale";
  absl::StatusOr<std::unique_ptr<TraceRecorder>> recorder = TraceRecorder::Open(options);
  if (absl::IsPermissionDenied(recorder.status())) GTEST_SKIP() << recorder.status();
  EXPECT_FALSE(recorder.ok());
  EXPECT_THAT(std::string(recorder.status().message()), HasSubstr("/nonexistent/perfscale"));
}

TEST(TraceRecorderTest, LeavesFdsThreadsAndMappingsAsFound) {
  absl::StatusOr<testing::ProcessState> before = testing::CaptureProcessState();
  ASSERT_TRUE(before.ok()) << before.status();
  const int mappings = testing::CountPerfMappings();
  TraceRecorderOptions options;
  options.tracepoints = {"sched:sched_switch", "sched:sched_wakeup"};
  options.scope = TraceScope::kSystemWide;
  options.ring_pages = 4;
  std::string skip;
  {
    absl::StatusOr<std::unique_ptr<TraceRecorder>> recorder = OpenOrSkipReason(options, &skip);
    if (!skip.empty()) GTEST_SKIP() << skip;
    ASSERT_TRUE(recorder.ok()) << recorder.status();
    EXPECT_GT((*recorder)->event_count(), 0u);
    EXPECT_EQ((*recorder)->event_count(), 2 * (*recorder)->buffer_count());
    EXPECT_EQ(testing::CountPerfMappings(),
              mappings + static_cast<int>((*recorder)->buffer_count()));
    ASSERT_TRUE((*recorder)->Enable().ok());
    usleep(2000);
    EXPECT_TRUE((*recorder)->Stop().ok());
    EXPECT_TRUE(absl::IsFailedPrecondition((*recorder)->Stop().status()));
  }
  EXPECT_EQ(*testing::CaptureProcessStateSettled(*before), *before);
  {
    // Destroyed while recording, without Stop.
    absl::StatusOr<std::unique_ptr<TraceRecorder>> recorder = TraceRecorder::Open(options);
    ASSERT_TRUE(recorder.ok()) << recorder.status();
    ASSERT_TRUE((*recorder)->Enable().ok());
  }
  EXPECT_EQ(*testing::CaptureProcessStateSettled(*before), *before);
  // Fails half-way: CPU 0's events and buffer exist when the impossible CPU is tried.
  options.cpus = {0, 65535};
  absl::StatusOr<std::unique_ptr<TraceRecorder>> failed = TraceRecorder::Open(options);
  EXPECT_FALSE(failed.ok());
  EXPECT_THAT(std::string(failed.status().message()), HasSubstr("sched:sched_switch"));
  EXPECT_EQ(*testing::CaptureProcessStateSettled(*before), *before);
  EXPECT_EQ(testing::CountPerfMappings(), mappings);
}

}  // namespace
}  // namespace perfscale
