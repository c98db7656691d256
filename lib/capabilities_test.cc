// Capability probing: the /proc/self/status and sysctl parsers on real and malformed
// text, each Require* on hand-built Capabilities (so every refusal and its advice is
// reached), ProbeCapabilities against what this machine says through other doors, and
// ScopedFdLimit / CountOpenFds for real. The breakpoint-firing probe's verdict on every
// count it can see, and the real probe against a breakpoint of the test's own.
#include "lib/capabilities.h"

#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "lib/file_reader.h"
#include "lib/perf_attr.h"
#include "lib/perf_event.h"
#include "lib/tracefs.h"

namespace perfscale {
namespace {

constexpr char kRootStatus[] =
    "Name:\tcat\nUmask:\t0022\nState:\tR (running)\n"
    "CapInh:\t0000000000000000\n"
    "CapPrm:\t000001ffffffffff\n"
    "CapEff:\t000001ffffffffff\n"
    "CapBnd:\t000001ffffffffff\n"
    "CapAmb:\t0000000000000000\n"
    "NoNewPrivs:\t0\n";

TEST(ParseEffectiveCapabilitiesTest, RootHasEverything) {
  absl::StatusOr<uint64_t> mask = ParseEffectiveCapabilities(kRootStatus);
  ASSERT_TRUE(mask.ok()) << mask.status();
  EXPECT_EQ(*mask, 0x1ffffffffffu);
  EXPECT_TRUE((*mask >> kCapPerfmon) & 1);
  EXPECT_TRUE((*mask >> kCapSysAdmin) & 1);
}

TEST(ParseEffectiveCapabilitiesTest, OnlyCapEffCounts) {
  absl::StatusOr<uint64_t> mask = ParseEffectiveCapabilities(
      "CapPrm:\tffffffffffffffff\nCapEff:\t0000004000000000\nCapBnd:\tffffffffffffffff\n");
  ASSERT_TRUE(mask.ok()) << mask.status();
  EXPECT_EQ(*mask, uint64_t{1} << kCapPerfmon);
}

TEST(ParseEffectiveCapabilitiesTest, UnprivilegedIsZero) {
  absl::StatusOr<uint64_t> mask = ParseEffectiveCapabilities("CapEff:\t0000000000000000\n");
  ASSERT_TRUE(mask.ok()) << mask.status();
  EXPECT_EQ(*mask, 0u);
}

TEST(ParseEffectiveCapabilitiesTest, AllSixtyFourBitsAndNoTrailingNewline) {
  absl::StatusOr<uint64_t> mask = ParseEffectiveCapabilities("CapEff:\tffffffffffffffff");
  ASSERT_TRUE(mask.ok()) << mask.status();
  EXPECT_EQ(*mask, UINT64_MAX);
}

TEST(ParseEffectiveCapabilitiesTest, RejectsMissingAndMalformed) {
  for (const char* bad : {"", "\n", "Name:\tcat\n", "CapEff:\n", "CapEff:\t\n", "CapEff:\tzzzz\n",
                          "CapEff:\t0x1f\n", "CapEff:\t-1\n",
                          "CapEff:\t1ffffffffffffffff\n",  // 17 digits: overflow
                          "CapEff:\t00ff 00ff\n", "capeff:\t0\n", " CapEff:\t0\n"}) {
    absl::StatusOr<uint64_t> mask = ParseEffectiveCapabilities(bad);
    EXPECT_FALSE(mask.ok()) << "'" << bad << "' parsed as " << *mask;
    if (!mask.ok()) {
      EXPECT_EQ(mask.status().code(), absl::StatusCode::kInvalidArgument);
    }
  }
}

TEST(ParseEffectiveCapabilitiesTest, ThisProcess) {
  absl::StatusOr<std::string> status = ReadTextFile("/proc/self/status");
  ASSERT_TRUE(status.ok()) << status.status();
  absl::StatusOr<uint64_t> mask = ParseEffectiveCapabilities(*status);
  ASSERT_TRUE(mask.ok()) << mask.status();
  if (geteuid() == 0) {
    EXPECT_TRUE((*mask >> kCapSysAdmin) & 1) << std::hex << *mask;
  }
}

TEST(ParseSysctlIntTest, Values) {
  EXPECT_EQ(*ParseSysctlInt("2\n"), 2);
  EXPECT_EQ(*ParseSysctlInt("-1\n"), -1);
  EXPECT_EQ(*ParseSysctlInt("  4194304  "), 4194304);
  EXPECT_EQ(*ParseSysctlInt("9223372036854775807"), INT64_MAX);
}

TEST(ParseSysctlIntTest, RejectsMalformed) {
  for (const char* bad : {"", "\n", "max\n", "2 3", "1.5", "abc", "0x10", "9223372036854775808",
                          "-9223372036854775809", "99999999999999999999999"}) {
    absl::StatusOr<int64_t> value = ParseSysctlInt(bad);
    EXPECT_FALSE(value.ok()) << "'" << bad << "' parsed as " << *value;
  }
}

Capabilities Unprivileged(int64_t paranoid) {
  Capabilities caps;
  caps.perf_event_paranoid = paranoid;
  caps.breakpoint_pmu = true;
  caps.tracefs = "/sys/kernel/tracing";
  caps.thread_budget = 1000;
  return caps;
}

TEST(CapabilitiesTest, NoPerfEventsAtAll) {
  Capabilities caps = Unprivileged(2);
  caps.perf_event_paranoid.reset();
  absl::Status status = caps.RequirePerfEvents();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_TRUE(absl::StrContains(status.message(), "CONFIG_PERF_EVENTS")) << status;
  // Everything built on perf events says the same, first.
  EXPECT_EQ(caps.RequireBreakpointPmu().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(caps.RequireSystemWide().code(), absl::StatusCode::kUnimplemented);
}

TEST(CapabilitiesTest, ParanoidAboveTwoIsLeftToTheKernel) {
  // Mainline kernels let a user open its own user breakpoints at paranoid 3; only the
  // open can tell, so the level alone never skips per-task events.
  Capabilities caps = Unprivileged(3);
  EXPECT_TRUE(caps.RequirePerfEvents().ok());
  EXPECT_TRUE(caps.RequireBreakpointPmu().ok());
  // System-wide events need a capability above 0 on every kernel.
  EXPECT_EQ(caps.RequireSystemWide().code(), absl::StatusCode::kPermissionDenied);
}

TEST(CapabilitiesTest, ParanoidTwoAllowsPerTaskButNotSystemWide) {
  Capabilities caps = Unprivileged(2);
  EXPECT_TRUE(caps.RequirePerfEvents().ok());
  EXPECT_TRUE(caps.RequireBreakpointPmu().ok());
  EXPECT_FALSE(caps.CanProfileSystemWide());
  absl::Status status = caps.RequireSystemWide();
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(absl::StrContains(status.message(), "(it is 2)")) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "sysctl kernel.perf_event_paranoid=0")) << status;
}

TEST(CapabilitiesTest, SystemWideWithLowParanoidOrCapabilities) {
  EXPECT_TRUE(Unprivileged(0).RequireSystemWide().ok());
  EXPECT_TRUE(Unprivileged(-1).RequireSystemWide().ok());
  EXPECT_FALSE(Unprivileged(1).CanProfileSystemWide());
  Capabilities perfmon = Unprivileged(2);
  perfmon.cap_perfmon = true;
  EXPECT_TRUE(perfmon.RequireSystemWide().ok());
  Capabilities admin = Unprivileged(2);
  admin.cap_sys_admin = true;
  EXPECT_TRUE(admin.CanProfileSystemWide());
}

TEST(CapabilitiesTest, MissingBreakpointPmu) {
  Capabilities caps = Unprivileged(2);
  caps.breakpoint_pmu = false;
  absl::Status status = caps.RequireBreakpointPmu();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(status.message(), "/sys/bus/event_source/devices/breakpoint"))
      << status;
}

TEST(JudgeBreakpointProbeTest, EveryWriteCountedFires) {
  EXPECT_TRUE(JudgeBreakpointProbe(absl::OkStatus(), kBreakpointProbeWrites).ok());
}

// What a hypervisor that never delivers the debug exception looks like (AMD EPYC, KVM).
TEST(JudgeBreakpointProbeTest, NothingCountedNamesAMachineWhereBreakpointsNeverFire) {
  absl::Status status = JudgeBreakpointProbe(absl::OkStatus(), uint64_t{0});
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(status.message(), "open but never fire")) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "0 of 4 writes")) << status;
}

TEST(JudgeBreakpointProbeTest, SomeWritesCountedIsUnreliable) {
  absl::Status status = JudgeBreakpointProbe(absl::OkStatus(), uint64_t{2});
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(status.message(), "2 of 4 writes")) << status;
}

TEST(JudgeBreakpointProbeTest, AFailedOpenOrReadIsPassedOn) {
  absl::Status refused = absl::PermissionDeniedError("perf_event_open: EACCES");
  EXPECT_EQ(JudgeBreakpointProbe(refused, absl::UnknownError("not read")), refused);
  absl::Status unread = absl::InternalError("read: EIO");
  EXPECT_EQ(JudgeBreakpointProbe(absl::OkStatus(), unread), unread);
}

// The real probe against what a breakpoint of the test's own sees on this machine. Whatever the
// hypervisor does, the two must agree.
TEST(BreakpointsFireTest, AgreesWithABreakpointOfItsOwn) {
  if (absl::Status pmu = ProbeCapabilities().RequireBreakpointPmu(); !pmu.ok()) {
    GTEST_SKIP() << pmu.message();
  }
  if (std::getenv(kAssumeBreakpointsNeverFire) != nullptr) {
    GTEST_SKIP() << kAssumeBreakpointsNeverFire << " is set: the probe's answer is assumed";
  }
  static volatile uint64_t watched = 0;
  BreakpointSpec spec;
  spec.address = &watched;
  spec.length = sizeof(watched);
  spec.access = BreakpointAccess::kWrite;
  absl::StatusOr<PerfEvent> event = PerfEvent::Open(BreakpointAttr(spec), 0, -1);
  ASSERT_TRUE(event.ok()) << event.status();
  for (int i = 0; i < 6; ++i) watched = static_cast<uint64_t>(i);
  absl::StatusOr<uint64_t> count = event->ReadCount();
  ASSERT_TRUE(count.ok()) << count.status();

  absl::Status fires = BreakpointsFire();
  if (fires.ok()) {
    EXPECT_EQ(*count, 6u) << "the probe says breakpoints fire, this one counted " << *count;
  } else {
    EXPECT_EQ(fires.code(), absl::StatusCode::kFailedPrecondition) << fires;
    EXPECT_NE(*count, 6u) << "the probe says " << fires << ", yet this one counted every write";
  }
  // Asked again, the same answer without probing again.
  EXPECT_EQ(BreakpointsFire(), fires);
}

// An unmounted tracefs is EnsureTracefs' business (tracefs_test, in a private mount
// namespace); here only what the probe found.
TEST(CapabilitiesTest, UnreadableTracefs) {
  Capabilities caps = Unprivileged(2);
  caps.tracefs = "/nonexistent/tracing";
  EXPECT_EQ(caps.RequireTracefs().code(), absl::StatusCode::kPermissionDenied);
}

TEST(CapabilitiesTest, ThreadsGiveTheNumbers) {
  Capabilities caps = Unprivileged(2);
  EXPECT_TRUE(caps.RequireThreads(1000).ok());
  absl::Status threads = caps.RequireThreads(1001);
  EXPECT_EQ(threads.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(threads.message(), "needs 1001 threads")) << threads;
  EXPECT_TRUE(absl::StrContains(threads.message(), "about 1000 more")) << threads;
  EXPECT_FALSE(caps.RequireThreads(UINT64_MAX).ok());
}

TEST(ProbeCapabilitiesTest, AgreesWithThisMachine) {
  Capabilities caps = ProbeCapabilities();
  absl::StatusOr<std::string> paranoid = ReadTextFile("/proc/sys/kernel/perf_event_paranoid");
  if (paranoid.ok()) {
    ASSERT_TRUE(caps.perf_event_paranoid.has_value());
    EXPECT_EQ(*caps.perf_event_paranoid, *ParseSysctlInt(*paranoid));
  } else {
    EXPECT_FALSE(caps.perf_event_paranoid.has_value());
  }
  EXPECT_EQ(caps.is_root, geteuid() == 0);
  EXPECT_EQ(caps.breakpoint_pmu,
            access("/sys/bus/event_source/devices/breakpoint/type", R_OK) == 0);

  absl::StatusOr<std::string> mounts = ReadTextFile("/proc/mounts");
  ASSERT_TRUE(mounts.ok());
  absl::StatusOr<std::string> root = FindTracefsMount(*mounts);
  EXPECT_EQ(caps.tracefs.has_value(), root.ok());
  if (root.ok() && caps.tracefs) {
    EXPECT_EQ(*caps.tracefs, *root);
  }

  EXPECT_GT(caps.thread_budget, 0u);
  // The system cannot have more threads than threads-max in all.
  absl::StatusOr<std::string> threads_max = ReadTextFile("/proc/sys/kernel/threads-max");
  if (threads_max.ok()) {
    EXPECT_LE(caps.thread_budget, static_cast<uint64_t>(*ParseSysctlInt(*threads_max)));
  }
  if (caps.is_root) {
    EXPECT_TRUE(caps.CanProfileSystemWide());
    EXPECT_TRUE(caps.RequirePerfEvents().ok());
  }
}

void* WaitForClose(void* pipe_read_end) {
  char byte;
  while (read(*static_cast<int*>(pipe_read_end), &byte, 1) < 0 && errno == EINTR) {
  }
  return nullptr;
}

// A user no process runs as: RLIMIT_NPROC counts the user's tasks, and the hostile tests
// run their binaries as nobody in parallel with this one.
constexpr uid_t kUnusedId = 3999999;

// In a child that is kUnusedId under RLIMIT_NPROC: creates as many threads as the probe
// promised. Exit status 0 when every one was created, else 1.
[[noreturn]] void CreateTheBudgetAsUnusedUser(rlim_t nproc) {
  rlimit limit{nproc, nproc};
  if (setrlimit(RLIMIT_NPROC, &limit) != 0 || setgroups(0, nullptr) != 0 ||
      setresgid(kUnusedId, kUnusedId, kUnusedId) != 0 ||
      setresuid(kUnusedId, kUnusedId, kUnusedId) != 0) {
    _exit(3);
  }
  uint64_t budget = ProbeCapabilities().thread_budget;
  if (budget == 0) _exit(2);
  int fds[2];
  if (pipe(fds) != 0) _exit(3);
  std::vector<pthread_t> threads;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  bool all = true;
  for (uint64_t i = 0; i < budget; ++i) {
    pthread_t thread;
    if (pthread_create(&thread, &attr, WaitForClose, &fds[0]) != 0) {
      all = false;
      break;
    }
    threads.push_back(thread);
  }
  close(fds[1]);
  for (pthread_t thread : threads) pthread_join(thread, nullptr);
  _exit(all ? 0 : 1);
}

TEST(ProbeCapabilitiesTest, ThreadBudgetUnderRlimitNprocCanAllBeCreated) {
  // `ulimit -u 501` once passed the check for 500 threads, then failed at thread 500:
  // RLIMIT_NPROC counts the user's existing tasks (this one included) too.
  if (geteuid() != 0) GTEST_SKIP() << "needs root to become another user under a limit";
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) CreateTheBudgetAsUnusedUser(40);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 2) << "no budget at all";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "fewer threads could be created than the budget";
}

int OpenFds() {
  absl::StatusOr<int> fds = CountOpenFds();
  EXPECT_TRUE(fds.ok()) << fds.status();
  return fds.ok() ? *fds : -1;
}

TEST(CountOpenFdsTest, FollowsOpenAndClose) {
  int before = OpenFds();
  EXPECT_GE(before, 0);
  int a = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int b = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  EXPECT_EQ(OpenFds(), before + 2);
  close(a);
  EXPECT_EQ(OpenFds(), before + 1);
  close(b);
  EXPECT_EQ(OpenFds(), before);
}

uint64_t SoftLimit() {
  rlimit files{};
  EXPECT_EQ(getrlimit(RLIMIT_NOFILE, &files), 0);
  return files.rlim_cur;
}

// Lowers the soft limit for one test so there is room to raise it, and puts it back.
class ScopedFdLimitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved_), 0);
    if (saved_.rlim_max != RLIM_INFINITY && saved_.rlim_max < 2048) {
      GTEST_SKIP() << "hard RLIMIT_NOFILE " << saved_.rlim_max << " leaves no room to raise";
    }
    rlimit low = saved_;
    low.rlim_cur = 256;
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  }
  void TearDown() override { setrlimit(RLIMIT_NOFILE, &saved_); }
  rlimit saved_{};
};

TEST_F(ScopedFdLimitTest, RaisesToFitAndRestoresExactly) {
  {
    absl::StatusOr<ScopedFdLimit> raised = ScopedFdLimit::Ensure(1000);
    ASSERT_TRUE(raised.ok()) << raised.status();
    EXPECT_GE(SoftLimit(), 1000u + static_cast<uint64_t>(OpenFds()));
  }
  EXPECT_EQ(SoftLimit(), 256u);
}

TEST_F(ScopedFdLimitTest, NoChangeWhenItAlreadyFits) {
  {
    absl::StatusOr<ScopedFdLimit> same = ScopedFdLimit::Ensure(10);
    ASSERT_TRUE(same.ok()) << same.status();
    EXPECT_EQ(SoftLimit(), 256u);
    // Someone else changes the limit meanwhile; an unchanged guard must not undo it.
    rlimit other{};
    getrlimit(RLIMIT_NOFILE, &other);
    other.rlim_cur = 300;
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &other), 0);
  }
  EXPECT_EQ(SoftLimit(), 300u);
}

TEST_F(ScopedFdLimitTest, BeyondTheHardLimitIsResourceExhaustedAndChangesNothing) {
  if (saved_.rlim_max == RLIM_INFINITY) GTEST_SKIP() << "no hard RLIMIT_NOFILE";
  absl::StatusOr<ScopedFdLimit> too_many = ScopedFdLimit::Ensure(saved_.rlim_max + 1);
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(too_many.status().message(),
                                absl::StrCat("hard limit (RLIMIT_NOFILE) is ", saved_.rlim_max)))
      << too_many.status();
  EXPECT_EQ(SoftLimit(), 256u);
}

TEST_F(ScopedFdLimitTest, MovedFromGuardDoesNotRestore) {
  {
    absl::StatusOr<ScopedFdLimit> raised = ScopedFdLimit::Ensure(1000);
    ASSERT_TRUE(raised.ok()) << raised.status();
    uint64_t raised_to = SoftLimit();
    {
      ScopedFdLimit moved(*std::move(raised));
      { absl::StatusOr<ScopedFdLimit> gone = std::move(raised); }
      EXPECT_EQ(SoftLimit(), raised_to);
    }
    EXPECT_EQ(SoftLimit(), 256u);
  }
  EXPECT_EQ(SoftLimit(), 256u);
}

TEST_F(ScopedFdLimitTest, RaisedLimitReallyAdmitsThatManyFds) {
  absl::StatusOr<ScopedFdLimit> raised = ScopedFdLimit::Ensure(600);
  ASSERT_TRUE(raised.ok()) << raised.status();
  std::vector<int> fds;
  for (int i = 0; i < 600; ++i) {
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) break;
    fds.push_back(fd);
  }
  EXPECT_EQ(fds.size(), 600u);
  for (int fd : fds) close(fd);
}

}  // namespace
}  // namespace perfscale
