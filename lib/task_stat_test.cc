// The stat field parser on real and hostile text, and, for real, that a thread pinned to
// a CPU is read as having last run there.
#include "lib/task_stat.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace perfscale {
namespace {

// A sleeping thread's line from 6.18, its command holding spaces and parentheses.
constexpr char kStat[] =
    "4242 (a) b (c) S 1 4242 4242 0 -1 4194368 120 0 0 0 3 1 0 0 20 0 5 0 900 9000000 200 "
    "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n";

TEST(TaskStatFieldTest, NumbersFieldsAsProcDoesAfterTheCommand) {
  EXPECT_EQ(TaskStatField(kStat, 4).value_or(-1), 1);        // ppid
  EXPECT_EQ(TaskStatField(kStat, 9).value_or(-1), 4194368);  // flags
  EXPECT_EQ(TaskStatField(kStat, 38).value_or(-1), 17);      // exit_signal
  EXPECT_EQ(TaskStatField(kStat, 39).value_or(-1), 1);       // processor
}

TEST(TaskStatFieldTest, MalformedTextOrANonIntegerFieldIsAnError) {
  EXPECT_EQ(TaskStatField(kStat, 3).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TaskStatField(kStat, 2).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TaskStatField(kStat, 200).status().code(), absl::StatusCode::kInvalidArgument);
  for (const char* text : {"", "1 worker S 1 2 3 4 5 6", "1 (x) S 1 2 3", "1 (x) S z 2"}) {
    EXPECT_FALSE(TaskStatField(text, 4).ok() && TaskStatField(text, 9).ok()) << "'" << text << "'";
  }
}

TEST(ThreadLastCpuTest, APinnedThreadLastRanOnItsCpu) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE && cpus.size() < 2; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  }
  for (int cpu : cpus) {
    std::atomic<pid_t> tid{0};
    std::atomic<bool> release{false};
    std::thread thread([&] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      if (sched_setaffinity(0, sizeof(one), &one) == 0) sched_yield();  // now runs there
      tid = static_cast<pid_t>(syscall(SYS_gettid));
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    while (tid == 0) std::this_thread::yield();
    absl::StatusOr<int> last = ThreadLastCpu(tid);
    ASSERT_TRUE(last.ok()) << last.status();
    EXPECT_EQ(*last, cpu);
    absl::StatusOr<int> elsewhere = ThreadsLastOnOtherCpus({tid}, cpu);
    ASSERT_TRUE(elsewhere.ok()) << elsewhere.status();
    EXPECT_EQ(*elsewhere, 0);
    elsewhere = ThreadsLastOnOtherCpus({tid, tid}, cpu + 1);
    ASSERT_TRUE(elsewhere.ok()) << elsewhere.status();
    EXPECT_EQ(*elsewhere, 2);
    release = true;
    thread.join();
  }
}

TEST(ThreadLastCpuTest, AThreadThatIsGoneIsNotFound) {
  // pid_max is at most 2^22: no thread has this id.
  EXPECT_EQ(ThreadLastCpu(1 << 23).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ThreadsLastOnOtherCpus({1 << 23}, 0).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace perfscale
