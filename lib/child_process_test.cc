#include "lib/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "gtest/gtest.h"
#include "lib/interrupt_cleanup.h"

namespace perfscale {
namespace {

bool NoChildren() {
  errno = 0;
  return waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD;
}

PERFSCALE_CHILD_CODE int ExitSeven(void*) { return 7; }

TEST(ChildProcess, RunsMainAndReportsItsStatus) {
  absl::StatusOr<ChildProcess> child = ChildProcess::Start("test child", &ExitSeven, nullptr);
  ASSERT_TRUE(child.ok()) << child.status();
  EXPECT_GT(child->pid(), 0);
  absl::StatusOr<int> status = child->Wait();
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 7);
  EXPECT_EQ(child->pid(), -1);
  EXPECT_EQ(DescribeWaitStatus(*status), "exited with status 7");
  EXPECT_TRUE(NoChildren());
}

struct FdProbe {
  int kept;
  int closed;
  dev_t null_rdev;
};

// 0: the kept fd is open, the other closed, stdout on /dev/null; else which check failed.
PERFSCALE_CHILD_CODE int ProbeFds(void* arg) {
  const FdProbe& probe = *static_cast<const FdProbe*>(arg);
  if (syscall(SYS_fcntl, probe.kept, F_GETFD) < 0) return 1;
  if (syscall(SYS_fcntl, probe.closed, F_GETFD) >= 0 || errno != EBADF) return 2;
  struct stat out;
  if (syscall(SYS_fstat, 1, &out) != 0 || !S_ISCHR(out.st_mode) || out.st_rdev != probe.null_rdev) {
    return 3;
  }
  return 0;
}

TEST(ChildProcess, KeepsOnlyTheFdsItIsGivenAndNullStdio) {
  int kept[2], closed[2];
  ASSERT_EQ(pipe2(kept, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(closed, O_CLOEXEC), 0);
  struct stat null_stat;
  ASSERT_EQ(stat("/dev/null", &null_stat), 0);
  FdProbe probe{kept[1], closed[1], null_stat.st_rdev};
  absl::StatusOr<ChildProcess> child =
      ChildProcess::Start("fd probe", &ProbeFds, &probe, {kept[1]}, ChildProcess::Stdio::kDevNull);
  ASSERT_TRUE(child.ok()) << child.status();
  absl::StatusOr<int> status = child->Wait();
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(DescribeWaitStatus(*status), "exited with status 0")
      << "1: kept fd closed, 2: other fd open, 3: stdout not /dev/null";
  for (int fd : {kept[0], kept[1], closed[0], closed[1]}) close(fd);
}

// Blocks until its fd reads EOF (which never comes while the test holds the write end).
PERFSCALE_CHILD_CODE int BlockOnRead(void* arg) {
  int fd = *static_cast<const int*>(arg);
  char byte;
  while (syscall(SYS_read, fd, &byte, 1) != 0) {
  }
  return 0;
}

// A child blocked on a pipe whose write end the test holds.
class BlockedChildTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(pipe2(fds_, O_CLOEXEC), 0); }
  void TearDown() override {
    for (int fd : fds_) {
      if (fd >= 0) close(fd);
    }
  }
  absl::StatusOr<ChildProcess> StartBlocked() {
    return ChildProcess::Start("blocked child", &BlockOnRead, &fds_[0], {fds_[0]});
  }
  void LetItExit() {
    close(fds_[1]);
    fds_[1] = -1;
  }

  int fds_[2] = {-1, -1};
};

TEST_F(BlockedChildTest, DestructorKillsAndReaps) {
  pid_t pid = -1;
  {
    absl::StatusOr<ChildProcess> child = StartBlocked();
    ASSERT_TRUE(child.ok()) << child.status();
    pid = child->pid();
    EXPECT_EQ(kill(pid, 0), 0);
  }
  EXPECT_EQ(kill(pid, 0), -1);
  EXPECT_TRUE(NoChildren());
}

TEST_F(BlockedChildTest, MovedOwnershipReapsOnce) {
  {
    absl::StatusOr<ChildProcess> child = StartBlocked();
    ASSERT_TRUE(child.ok()) << child.status();
    ChildProcess owner = *std::move(child);
    EXPECT_EQ(child->pid(), -1);
    EXPECT_GT(owner.pid(), 0);
    ChildProcess other;
    other = std::move(owner);
    EXPECT_GT(other.pid(), 0);
  }
  EXPECT_TRUE(NoChildren());
}

TEST_F(BlockedChildTest, WaitWithinEndsAChildThatDoesNotExit) {
  absl::StatusOr<ChildProcess> child = StartBlocked();
  ASSERT_TRUE(child.ok()) << child.status();
  EXPECT_FALSE(child->TryWait().has_value());  // still running
  absl::StatusOr<ChildExit> ended = child->WaitWithin(std::chrono::milliseconds(20));
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_TRUE(ended->killed);
  EXPECT_EQ(DescribeWaitStatus(ended->status), "killed by signal 9");
  EXPECT_TRUE(NoChildren());
}

TEST_F(BlockedChildTest, WaitWithinReapsAChildThatExits) {
  absl::StatusOr<ChildProcess> child = StartBlocked();
  ASSERT_TRUE(child.ok()) << child.status();
  LetItExit();  // EOF: the child returns 0
  absl::StatusOr<ChildExit> ended = child->WaitWithin(std::chrono::seconds(10));
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_FALSE(ended->killed);
  EXPECT_EQ(DescribeWaitStatus(ended->status), "exited with status 0");
}

TEST_F(BlockedChildTest, RegisteredForTheInterruptHandler) {
  absl::StatusOr<ChildProcess> child = StartBlocked();
  ASSERT_TRUE(child.ok()) << child.status();
  pid_t pid = child->pid();
  RunInterruptCleanupForTest();  // what SIGINT's handler runs: killed and reaped
  EXPECT_EQ(kill(pid, 0), -1);
  EXPECT_TRUE(NoChildren());
  EXPECT_FALSE(child->Wait().ok());  // already reaped; the owner lets go
  EXPECT_EQ(child->pid(), -1);
}

TEST(ChildProcess, RefusesMoreKeptFdsThanItHasRoomFor) {
  absl::StatusOr<ChildProcess> child =
      ChildProcess::Start("too many fds", &ExitSeven, nullptr, {3, 4, 5, 6, 7});
  EXPECT_EQ(child.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(NoChildren());
}

TEST(ChildProcess, DescribesTheStatusesOfItsOwnSetup) {
  EXPECT_EQ(DescribeWaitStatus(kChildOrphaned << 8),
            "exited with status 120 (its parent died before it started)");
  EXPECT_EQ(DescribeWaitStatus(kChildSetupFailed << 8),
            "exited with status 121 (prctl(PR_SET_PDEATHSIG) failed)");
}

}  // namespace
}  // namespace perfscale
