// PerfEvent against the real kernel: a hardware breakpoint that counts the writes it
// watches and stops when disabled, software and tracepoint events, CLOEXEC, move-only
// ownership, and the advice ExplainPerfEventOpenError gives for each errno, both
// synthesized and provoked for real (ENOSPC from a fifth breakpoint, EMFILE from a
// lowered fd limit).
#include "lib/perf_event.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "lib/capabilities.h"
#include "lib/errno_status.h"
#include "lib/file_reader.h"
#include "lib/perf_attr.h"
#include "lib/tracefs.h"

namespace perfscale {
namespace {

std::string ParanoidText() {
  absl::StatusOr<std::string> text = ReadTextFile("/proc/sys/kernel/perf_event_paranoid");
  if (!text.ok()) return "unknown";
  std::string value = *text;
  while (!value.empty() && (value.back() == '\n' || value.back() == ' ')) value.pop_back();
  return value;
}

int OpenFds() {
  absl::StatusOr<int> fds = CountOpenFds();
  EXPECT_TRUE(fds.ok()) << fds.status();
  return fds.ok() ? *fds : -1;
}

// Written through a volatile pointer so every store reaches memory and trips the
// breakpoint.
volatile int watched_word = 0;

class BreakpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (absl::Status s = ProbeCapabilities().RequireBreakpointPmu(); !s.ok()) {
      GTEST_SKIP() << s.message();
    }
  }
};

// What counts hits needs breakpoints that fire, which some hypervisors never deliver.
class FiringBreakpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (absl::Status s = ProbeCapabilities().RequireFiringBreakpoints(); !s.ok()) {
      GTEST_SKIP() << s.message();
    }
  }
};

TEST_F(FiringBreakpointTest, InheritedBreakpointCountsWritesAndToggles) {
  BreakpointSpec spec;
  spec.address = &watched_word;
  spec.length = sizeof(watched_word);
  spec.access = BreakpointAccess::kWrite;
  spec.inherit = true;
  absl::StatusOr<PerfEvent> event = PerfEvent::Open(BreakpointAttr(spec), 0, -1);
  ASSERT_TRUE(event.ok()) << event.status();
  ASSERT_TRUE(event->valid());

  ASSERT_TRUE(event->Reset().ok());
  for (int i = 0; i < 10; ++i) watched_word = i;
  absl::StatusOr<uint64_t> count = event->ReadCount();
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, 10u);

  ASSERT_TRUE(event->Disable().ok());
  for (int i = 0; i < 5; ++i) watched_word = i;
  count = event->ReadCount();
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, 10u) << "a disabled breakpoint still counted";

  ASSERT_TRUE(event->Enable().ok());
  for (int i = 0; i < 3; ++i) watched_word = i;
  count = event->ReadCount();
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, 13u);

  ASSERT_TRUE(event->Reset().ok());
  count = event->ReadCount();
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, 0u);

  // Toggling many times keeps working (the benchmark's one operation).
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(event->Disable().ok());
    ASSERT_TRUE(event->Enable().ok());
  }
}

TEST_F(FiringBreakpointTest, StartsDisabledWhenAsked) {
  BreakpointSpec spec;
  spec.address = &watched_word;
  spec.length = sizeof(watched_word);
  spec.access = BreakpointAccess::kWrite;
  spec.disabled = true;
  absl::StatusOr<PerfEvent> event = PerfEvent::Open(BreakpointAttr(spec), 0, -1);
  ASSERT_TRUE(event.ok()) << event.status();
  watched_word = 1;
  EXPECT_EQ(*event->ReadCount(), 0u);
  ASSERT_TRUE(event->Enable().ok());
  watched_word = 2;
  EXPECT_EQ(*event->ReadCount(), 1u);
}

TEST_F(BreakpointTest, FifthBreakpointOnX86IsResourceExhaustedAboutSlots) {
#if !defined(__x86_64__) && !defined(__i386__)
  GTEST_SKIP() << "the slot count (4) is x86's; other architectures differ";
#endif
  static volatile char bytes[8];
  int fds_before = OpenFds();
  {
    std::vector<PerfEvent> held;
    for (int i = 0; i < 4; ++i) {
      BreakpointSpec spec;
      spec.address = &bytes[i];
      absl::StatusOr<PerfEvent> event = PerfEvent::Open(BreakpointAttr(spec), 0, -1);
      ASSERT_TRUE(event.ok()) << "breakpoint " << i << ": " << event.status();
      held.push_back(*std::move(event));
    }
    BreakpointSpec spec;
    spec.address = &bytes[4];
    absl::StatusOr<PerfEvent> fifth = PerfEvent::Open(BreakpointAttr(spec), 0, -1);
    ASSERT_FALSE(fifth.ok());
    EXPECT_EQ(fifth.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_TRUE(absl::StrContains(fifth.status().message(), "ENOSPC")) << fifth.status();
    EXPECT_TRUE(absl::StrContains(fifth.status().message(), "breakpoint slots")) << fifth.status();
  }
  EXPECT_EQ(OpenFds(), fds_before);
}

TEST(PerfEventTest, FdIsCloseOnExec) {
  absl::StatusOr<PerfEvent> event = PerfEvent::Open(SoftwareAttr(PERF_COUNT_SW_DUMMY), 0, -1);
  if (!event.ok() && IsEnvironmentLimitation(event.status())) GTEST_SKIP() << event.status();
  ASSERT_TRUE(event.ok()) << event.status();
  int flags = fcntl(event->fd(), F_GETFD);
  ASSERT_GE(flags, 0);
  EXPECT_TRUE(flags & FD_CLOEXEC);
}

TEST(PerfEventTest, TaskClockCountsThisThreadsWork) {
  absl::StatusOr<PerfEvent> event = PerfEvent::Open(SoftwareAttr(PERF_COUNT_SW_TASK_CLOCK), 0, -1);
  if (!event.ok() && IsEnvironmentLimitation(event.status())) GTEST_SKIP() << event.status();
  ASSERT_TRUE(event.ok()) << event.status();
  volatile uint64_t sink = 0;
  for (int i = 0; i < 2000000; ++i) sink = sink + static_cast<uint64_t>(i);
  absl::StatusOr<uint64_t> ns = event->ReadCount();
  ASSERT_TRUE(ns.ok()) << ns.status();
  EXPECT_GT(*ns, 0u);
}

TEST(PerfEventTest, MoveTransfersOwnershipAndCloseReleasesTheFd) {
  int fds_before = OpenFds();
  absl::StatusOr<PerfEvent> opened = PerfEvent::Open(SoftwareAttr(PERF_COUNT_SW_DUMMY), 0, -1);
  if (!opened.ok() && IsEnvironmentLimitation(opened.status())) {
    GTEST_SKIP() << opened.status();
  }
  ASSERT_TRUE(opened.ok()) << opened.status();
  int fd = opened->fd();
  PerfEvent a(*std::move(opened));
  EXPECT_FALSE(opened->valid());
  EXPECT_EQ(a.fd(), fd);
  PerfEvent b;
  EXPECT_FALSE(b.valid());
  b = std::move(a);
  EXPECT_FALSE(a.valid());
  EXPECT_EQ(b.fd(), fd);
  EXPECT_EQ(OpenFds(), fds_before + 1);
  PerfEvent& alias = b;
  b = std::move(alias);  // self-move keeps the fd
  EXPECT_EQ(b.fd(), fd);
  b.Close();
  EXPECT_FALSE(b.valid());
  b.Close();  // idempotent
  EXPECT_EQ(OpenFds(), fds_before);
  EXPECT_EQ(fcntl(fd, F_GETFD), -1);
}

TEST(PerfEventTest, DestructionClosesAndMoveAssignClosesTheOldFd) {
  int fds_before = OpenFds();
  {
    absl::StatusOr<PerfEvent> first = PerfEvent::Open(SoftwareAttr(PERF_COUNT_SW_DUMMY), 0, -1);
    if (!first.ok() && IsEnvironmentLimitation(first.status())) GTEST_SKIP() << first.status();
    ASSERT_TRUE(first.ok()) << first.status();
    absl::StatusOr<PerfEvent> second = PerfEvent::Open(SoftwareAttr(PERF_COUNT_SW_DUMMY), 0, -1);
    ASSERT_TRUE(second.ok()) << second.status();
    EXPECT_EQ(OpenFds(), fds_before + 2);
    *first = *std::move(second);
    EXPECT_EQ(OpenFds(), fds_before + 1);
  }
  EXPECT_EQ(OpenFds(), fds_before);
}

TEST(PerfEventTest, OperationsOnAnUnopenedEventFailCleanly) {
  PerfEvent none;
  EXPECT_EQ(none.Enable().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(none.Disable().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(none.Reset().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(none.ReadCount().ok());
}

TEST(PerfEventTest, BadAttrIsInvalidArgumentNamingTheEvent) {
  perf_event_attr attr = SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK);
  attr.size = 1;  // the kernel rejects a size it cannot be
  absl::StatusOr<PerfEvent> event = PerfEvent::Open(attr, 0, -1);
  ASSERT_FALSE(event.ok());
  EXPECT_TRUE(absl::StrContains(event.status().message(), "perf_event_open(software event"))
      << event.status();
}

TEST(PerfEventTest, UnknownTracepointIdFailsDescribingTheEvent) {
  if (absl::Status s = ProbeCapabilities().RequirePerfEvents(); !s.ok()) GTEST_SKIP() << s;
  // Tracepoint ids are small; this one cannot exist.
  absl::StatusOr<PerfEvent> event = PerfEvent::Open(TracepointAttr(0xfffffff0u), 0, -1);
  ASSERT_FALSE(event.ok());
  EXPECT_TRUE(absl::StrContains(event.status().message(),
                                "perf_event_open(tracepoint config=4294967280, pid=0, cpu=-1)"))
      << event.status();
}

TEST(PerfEventTest, TracepointCountsThisThreadsContextSwitches) {
  Capabilities caps = ProbeCapabilities();
  if (absl::Status s = caps.RequireTracefs(); !s.ok()) GTEST_SKIP() << s.message();
  absl::StatusOr<uint64_t> id = TracepointId("sched:sched_switch");
  if (!id.ok() && IsEnvironmentLimitation(id.status())) GTEST_SKIP() << id.status().message();
  ASSERT_TRUE(id.ok()) << id.status();
  absl::StatusOr<PerfEvent> event = PerfEvent::Open(TracepointAttr(*id), 0, -1);
  if (!event.ok() && absl::IsPermissionDenied(event.status()) && !caps.is_root) {
    GTEST_SKIP() << event.status().message();
  }
  ASSERT_TRUE(event.ok()) << event.status();
  // Each sleep switches this thread out at least once.
  for (int i = 0; i < 5; ++i) usleep(1000);
  absl::StatusOr<uint64_t> switches = event->ReadCount();
  ASSERT_TRUE(switches.ok()) << switches.status();
  EXPECT_GE(*switches, 5u);
}

TEST(PerfEventTest, RealEmfileExplainsTheLimit) {
  // The kernel hands out the lowest free fd; with the soft limit at that number, no
  // new fd fits, whatever holes lie above it.
  int lowest_free = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(lowest_free, 0);
  close(lowest_free);
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit tight = saved;
  tight.rlim_cur = static_cast<rlim_t>(lowest_free);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &tight), 0);
  absl::StatusOr<PerfEvent> event = PerfEvent::Open(SoftwareAttr(PERF_COUNT_SW_DUMMY), 0, -1);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
  ASSERT_FALSE(event.ok()) << "opened fd " << event->fd() << " past a limit of " << lowest_free;
  EXPECT_EQ(event.status().code(), absl::StatusCode::kResourceExhausted) << event.status();
  EXPECT_TRUE(absl::StrContains(event.status().message(), "EMFILE")) << event.status();
  EXPECT_TRUE(
      absl::StrContains(event.status().message(), absl::StrCat("RLIMIT_NOFILE soft ", lowest_free)))
      << event.status();
}

TEST(ExplainPerfEventOpenErrorTest, EaccesNamesTheParanoidLevelAndTheFix) {
  perf_event_attr cpu_wide = SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK);
  absl::Status status = ExplainPerfEventOpenError(EACCES, cpu_wide, -1, 0);
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(absl::StrContains(status.message(),
                                absl::StrCat("kernel.perf_event_paranoid is ", ParanoidText())))
      << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "CAP_PERFMON")) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "sysctl kernel.perf_event_paranoid=-1"))
      << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "pid=-1, cpu=0")) << status;

  BreakpointSpec spec;
  absl::Status user = ExplainPerfEventOpenError(EPERM, BreakpointAttr(spec), 0, -1);
  EXPECT_EQ(user.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(absl::StrContains(user.message(), "perf_event_paranoid <= 2")) << user;

  absl::Status tp = ExplainPerfEventOpenError(EACCES, TracepointAttr(5), 0, -1);
  EXPECT_TRUE(absl::StrContains(tp.message(), "tracefs")) << tp;
}

TEST(ExplainPerfEventOpenErrorTest, EnoentNamesTheMissingPmu) {
  BreakpointSpec spec;
  absl::Status bp = ExplainPerfEventOpenError(ENOENT, BreakpointAttr(spec), 0, -1);
  EXPECT_EQ(bp.code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(bp.message(), "no hardware breakpoint support")) << bp;
  EXPECT_TRUE(absl::StrContains(bp.message(), "'breakpoint' PMU")) << bp;

  absl::Status sw = ExplainPerfEventOpenError(ENODEV, SoftwareAttr(99), 0, -1);
  EXPECT_EQ(sw.code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(sw.message(), "does not support the event")) << sw;

  absl::Status unsupported = ExplainPerfEventOpenError(EOPNOTSUPP, SoftwareAttr(0), 0, -1);
  EXPECT_EQ(unsupported.code(), absl::StatusCode::kUnimplemented);
  EXPECT_TRUE(absl::StrContains(unsupported.message(), "does not support")) << unsupported;
}

TEST(ExplainPerfEventOpenErrorTest, EmfileGivesTheLimitValues) {
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  absl::Status status = ExplainPerfEventOpenError(EMFILE, SoftwareAttr(0), -1, 1);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(
      status.message(),
      absl::StrCat("RLIMIT_NOFILE soft ", limit.rlim_cur, ", hard ", limit.rlim_max)))
      << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "ulimit -n")) << status;

  absl::Status nfile = ExplainPerfEventOpenError(ENFILE, SoftwareAttr(0), -1, 1);
  EXPECT_TRUE(absl::StrContains(nfile.message(), "fs.file-max")) << nfile;
}

TEST(ExplainPerfEventOpenErrorTest, EnospcNamesBreakpointSlotsOrCounters) {
  BreakpointSpec spec;
  absl::Status bp = ExplainPerfEventOpenError(ENOSPC, BreakpointAttr(spec), 0, -1);
  EXPECT_EQ(bp.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(bp.message(), "hardware breakpoint slots are in use")) << bp;

  absl::Status other = ExplainPerfEventOpenError(ENOSPC, SoftwareAttr(0), 0, -1);
  EXPECT_TRUE(absl::StrContains(other.message(), "no free counter")) << other;
}

TEST(ExplainPerfEventOpenErrorTest, EinvalOnACpuMentionsOfflineCpus) {
  absl::Status on_cpu = ExplainPerfEventOpenError(EINVAL, SoftwareAttr(0), -1, 4000);
  EXPECT_EQ(on_cpu.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(on_cpu.message(), "offline or out of range")) << on_cpu;
  EXPECT_TRUE(absl::StrContains(on_cpu.message(), "cpu=4000")) << on_cpu;

  absl::Status any_cpu = ExplainPerfEventOpenError(EINVAL, SoftwareAttr(0), 0, -1);
  EXPECT_FALSE(absl::StrContains(any_cpu.message(), "offline")) << any_cpu;
}

TEST(ExplainPerfEventOpenErrorTest, UnlistedErrnoStillDescribesTheEvent) {
  absl::Status status = ExplainPerfEventOpenError(E2BIG, TracepointAttr(42), 123, -1);
  EXPECT_FALSE(status.ok());
  EXPECT_TRUE(absl::StrContains(status.message(), "tracepoint config=42, pid=123, cpu=-1"))
      << status;
}

}  // namespace
}  // namespace perfscale
