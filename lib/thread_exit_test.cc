// The stat parser on real and hostile text, and, for real, that a joined thread that is
// still exiting is waited for and is gone from /proc/self/task afterwards.
#include "lib/thread_exit.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "testing/common/process_state.h"

namespace perfscale {
namespace {

// The parse's answer; a parse that fails fails the test.
bool Exiting(absl::string_view stat) {
  absl::StatusOr<bool> exiting = StatSaysExiting(stat);
  EXPECT_TRUE(exiting.ok()) << exiting.status();
  return exiting.ok() && *exiting;
}

TEST(StatSaysExitingTest, FlagsAreTheNinthField) {
  // A running thread (flags 0x400040: PF_FORKNOEXEC | PF_RANDOMIZE) and an exiting one.
  EXPECT_FALSE(Exiting("1234 (worker) R 1 1234 1234 0 -1 4194368 100 0 0 0"));
  EXPECT_TRUE(Exiting("1234 (worker) R 1 1234 1234 0 -1 4194372 100 0 0 0"));
}

TEST(StatSaysExitingTest, ACommandWithSpacesAndParenthesesIsSkippedWhole) {
  EXPECT_TRUE(Exiting("77 (a) b (c) 4 d) S 1 77 77 0 -1 4 0 0"));
  EXPECT_FALSE(Exiting("77 () S 1 77 77 0 -1 0 0 0"));
}

TEST(StatSaysExitingTest, MalformedTextIsAnError) {
  for (const char* text : {"", "1234 worker R 1 2 3 4 5 6", "1 (x) R 1 2 3", "1 (x) R 1 2 3 4 5 z",
                           "1 (x) R 1 2 3 4 5 -4"}) {
    EXPECT_FALSE(StatSaysExiting(text).ok()) << "'" << text << "'";
  }
}

TEST(ExitingThreadsTest, NoneWhileEveryThreadRuns) {
  absl::StatusOr<std::vector<pid_t>> exiting = ExitingThreads();
  ASSERT_TRUE(exiting.ok()) << exiting.status();
  EXPECT_TRUE(exiting->empty());
  EXPECT_TRUE(WaitForExitingThreads(absl::ZeroDuration()).ok());
}

TEST(WaitForExitingThreadsTest, AJoinedThreadIsGoneFromTheTaskListAfterwards) {
  for (int round = 0; round < 200; ++round) {
    std::atomic<pid_t> tid{0};
    std::thread thread([&tid] { tid = static_cast<pid_t>(syscall(SYS_gettid)); });
    thread.join();
    ASSERT_TRUE(WaitForExitingThreads(absl::Seconds(5)).ok());
    absl::StatusOr<std::vector<pid_t>> tasks = testing::ListTasks();
    ASSERT_TRUE(tasks.ok()) << tasks.status();
    for (pid_t task : *tasks) ASSERT_NE(task, tid.load()) << "round " << round;
  }
}

}  // namespace
}  // namespace perfscale
