// The syscall injector on this kernel: while it is open every copy of its events counts
// every syscall, closing it (or a refused open) leaves the process as it was (fds, the
// soft fd limit it may raise: testing/common/process_state.h), a filter the kernel
// refuses is said so, and the bare loop sees the added work. Skips, with the reason, where
// system-wide tracepoint events are refused (no root/CAP_PERFMON, no tracefs).
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "lib/capabilities.h"
#include "lib/cpu_set.h"
#include "lib/errno_status.h"
#include "lib/syscall_injector.h"
#include "testing/common/process_state.h"

namespace perfscale {
namespace {

void Getppid(int calls) {
  for (int i = 0; i < calls; ++i) syscall(SYS_getppid);
}

testing::ProcessState Capture() {
  absl::StatusOr<testing::ProcessState> state = testing::CaptureProcessState();
  EXPECT_TRUE(state.ok()) << state.status();
  return state.ok() ? *state : testing::ProcessState{};
}

class SyscallInjectorKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<SyscallInjector> probe = SyscallInjector::Open(1);
    if (!probe.ok() && IsEnvironmentLimitation(probe.status())) {
      GTEST_SKIP() << probe.status().message();
    }
    ASSERT_TRUE(probe.ok()) << probe.status();
  }
};

TEST_F(SyscallInjectorKernelTest, EveryCopyCountsEverySyscall) {
  constexpr int kCopies = 3;
  absl::StatusOr<SyscallInjector> injector = SyscallInjector::Open(kCopies);
  ASSERT_TRUE(injector.ok()) << injector.status();
  absl::StatusOr<std::vector<int>> cpus = OnlineCpus();
  ASSERT_TRUE(cpus.ok()) << cpus.status();
  EXPECT_EQ(injector->cpus(), *cpus);
  EXPECT_EQ(injector->events(), kCopies * cpus->size() * kInjectorTracepointCount);
  EXPECT_EQ(injector->Describe(), DescribeInjector(kCopies, cpus->size(), ""));

  absl::StatusOr<std::vector<uint64_t>> before = injector->ReadCopyTotals();
  ASSERT_TRUE(before.ok()) << before.status();
  Getppid(1000);
  absl::StatusOr<std::vector<uint64_t>> after = injector->ReadCopyTotals();
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(before->size(), kCopies * kInjectorTracepointCount);
  ASSERT_EQ(after->size(), before->size());
  // Each of the 1000 entered and left on some CPU, where every copy counted it; the rest
  // of the machine's syscalls only add.
  for (size_t i = 0; i < before->size(); ++i) {
    EXPECT_GE((*after)[i] - (*before)[i], 1000u)
        << kInjectorTracepoints[i / kCopies] << " copy " << i % kCopies;
  }
}

TEST_F(SyscallInjectorKernelTest, ClosingItClosesEveryFd) {
  const testing::ProcessState before = Capture();
  {
    absl::StatusOr<SyscallInjector> injector = SyscallInjector::Open(4);
    ASSERT_TRUE(injector.ok()) << injector.status();
    EXPECT_EQ(Capture().open_fds, before.open_fds + static_cast<int>(injector->events()));
    SyscallInjector moved = *std::move(injector);  // the events move, none is duplicated
    EXPECT_EQ(Capture().open_fds, before.open_fds + static_cast<int>(moved.events()));
  }
  EXPECT_EQ(Capture(), before);
}

TEST_F(SyscallInjectorKernelTest, AFilterTheKernelRefusesIsSaidAndLeavesNothingOpen) {
  const testing::ProcessState before = Capture();
  absl::StatusOr<SyscallInjector> injector = SyscallInjector::Open(2, "no_such_field == 1");
  ASSERT_FALSE(injector.ok());
  EXPECT_NE(injector.status().message().find("tracepoint filter 'no_such_field == 1' refused"),
            absl::string_view::npos)
      << injector.status();
  EXPECT_EQ(Capture(), before);
}

TEST_F(SyscallInjectorKernelTest, AFilterSelectsWhatIsCounted) {
  absl::StatusOr<SyscallInjector> matching = SyscallInjector::Open(1, "id >= 0");
  ASSERT_TRUE(matching.ok()) << matching.status();
  EXPECT_NE(matching->Describe().find(", filter 'id >= 0'"), std::string::npos);
  // No syscall has this number: the events still cost (the filter runs on every
  // syscall), but count nothing.
  absl::StatusOr<SyscallInjector> none = SyscallInjector::Open(1, "id == 99999");
  ASSERT_TRUE(none.ok()) << none.status();
  absl::StatusOr<std::vector<uint64_t>> matching_before = matching->ReadCopyTotals();
  absl::StatusOr<std::vector<uint64_t>> none_before = none->ReadCopyTotals();
  ASSERT_TRUE(matching_before.ok() && none_before.ok());
  Getppid(1000);
  absl::StatusOr<std::vector<uint64_t>> matching_after = matching->ReadCopyTotals();
  absl::StatusOr<std::vector<uint64_t>> none_after = none->ReadCopyTotals();
  ASSERT_TRUE(matching_after.ok() && none_after.ok());
  for (size_t i = 0; i < kInjectorTracepointCount; ++i) {
    EXPECT_GE((*matching_after)[i] - (*matching_before)[i], 1000u) << kInjectorTracepoints[i];
    EXPECT_EQ((*none_after)[i], (*none_before)[i]) << kInjectorTracepoints[i];
  }
}

// In a child, so that the lowered hard limit dies with it.
TEST_F(SyscallInjectorKernelTest, TooFewFileDescriptorsSaysWhatToDo) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(pipe_fds[0]);
    std::string message = "no refusal";
    absl::StatusOr<int> open_now = CountOpenFds();
    rlimit low{};
    low.rlim_cur = low.rlim_max = static_cast<rlim_t>(open_now.ok() ? *open_now + 8 : 16);
    if (setrlimit(RLIMIT_NOFILE, &low) != 0) {
      message = "setrlimit failed";
    } else {
      absl::StatusOr<SyscallInjector> injector = SyscallInjector::Open(64);
      if (!injector.ok()) {
        message =
            std::string(absl::IsResourceExhausted(injector.status()) ? "exhausted: " : "other: ") +
            std::string(injector.status().message());
      }
    }
    ssize_t written = write(pipe_fds[1], message.data(), message.size());
    _exit(written == static_cast<ssize_t>(message.size()) ? 0 : 1);
  }
  close(pipe_fds[1]);
  std::string message;
  char buffer[512];
  ssize_t n;
  while ((n = read(pipe_fds[0], buffer, sizeof(buffer))) > 0) message.append(buffer, n);
  close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(message.rfind("exhausted: ", 0), 0u) << message;
  EXPECT_NE(message.find("ulimit"), std::string::npos) << message;
  EXPECT_NE(message.find("fewer events per CPU"), std::string::npos) << message;
}

TEST_F(SyscallInjectorKernelTest, TheBareLoopSeesTheAddedWork) {
  const testing::ProcessState before = Capture();
  absl::StatusOr<InjectorCost> cost = MeasureInjectorCost(8);
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_GT(cost->bare_ns, 0);
  EXPECT_EQ(cost->rounds, InjectorCostOptions().rounds);
  EXPECT_GE(cost->injected_calls_per_round, 1);
  EXPECT_GE(cost->calls_per_round, 1);
  // 16 events per syscall on each CPU are real work: a property of the kernel's path, not
  // a timing goal (no bound on how much).
  EXPECT_GT(cost->injected_ns, cost->bare_ns) << cost->bare_ns << " ns bare";
  EXPECT_GT(cost->added_ns(), 0);
  EXPECT_EQ(Capture(), before);
}

}  // namespace
}  // namespace perfscale
