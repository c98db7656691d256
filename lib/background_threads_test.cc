// BackgroundThreads really creates, pins and joins threads: /proc/self/task shows them
// come and go, the kernel's affinity of each new thread is the CPU asked for, and they
// inherit the creator's inheritable breakpoint (the property the enable family relies on).
#include "lib/background_threads.h"

#include <sched.h>
#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "lib/capabilities.h"
#include "lib/cpu_set.h"
#include "lib/perf_attr.h"
#include "lib/perf_event.h"
#include "lib/thread_exit.h"
#include "testing/common/process_state.h"

namespace perfscale {
namespace {

using ::perfscale::testing::CaptureProcessState;
using ::perfscale::testing::CaptureProcessStateSettled;
using ::perfscale::testing::ListTasks;
using ::perfscale::testing::ProcessState;

std::vector<pid_t> Tasks() {
  absl::StatusOr<std::vector<pid_t>> tasks = ListTasks();
  EXPECT_TRUE(tasks.ok()) << tasks.status();
  return tasks.ok() ? *tasks : std::vector<pid_t>{};
}

std::vector<pid_t> NewTasks(const std::vector<pid_t>& before) {
  std::vector<pid_t> now = Tasks();
  std::vector<pid_t> added;
  std::set_difference(now.begin(), now.end(), before.begin(), before.end(),
                      std::back_inserter(added));
  return added;
}

TEST(BackgroundThreadsTest, ParkedThreadsComeAndGo) {
  absl::StatusOr<ProcessState> before = CaptureProcessState();
  ASSERT_TRUE(before.ok()) << before.status();
  {
    absl::StatusOr<std::unique_ptr<BackgroundThreads>> parked =
        BackgroundThreads::Start(BackgroundThreads::kParked, 8);
    ASSERT_TRUE(parked.ok()) << parked.status();
    EXPECT_EQ((*parked)->size(), 8);
    EXPECT_EQ(static_cast<int>(Tasks().size()), before->threads + 8);
    (*parked)->Stop();
    EXPECT_EQ((*parked)->size(), 0);
    absl::StatusOr<ProcessState> stopped = CaptureProcessStateSettled(*before);
    ASSERT_TRUE(stopped.ok()) << stopped.status();
    EXPECT_EQ(*stopped, *before);
    (*parked)->Stop();  // idempotent
  }
  absl::StatusOr<ProcessState> after = CaptureProcessStateSettled(*before);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after, *before);
}

TEST(BackgroundThreadsTest, DestructionStopsSpinnersToo) {
  absl::StatusOr<ProcessState> before = CaptureProcessState();
  ASSERT_TRUE(before.ok()) << before.status();
  {
    absl::StatusOr<std::unique_ptr<BackgroundThreads>> spinning =
        BackgroundThreads::Start(BackgroundThreads::kSpinning, 3);
    ASSERT_TRUE(spinning.ok()) << spinning.status();
    EXPECT_EQ(static_cast<int>(Tasks().size()), before->threads + 3);
  }
  absl::StatusOr<ProcessState> after = CaptureProcessStateSettled(*before);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after, *before);
}

TEST(BackgroundThreadsTest, TidsAreTheThreadsItStarted) {
  for (BackgroundThreads::Kind kind : {BackgroundThreads::kParked, BackgroundThreads::kSpinning}) {
    std::vector<pid_t> before = Tasks();
    absl::StatusOr<std::unique_ptr<BackgroundThreads>> group = BackgroundThreads::Start(kind, 5);
    ASSERT_TRUE(group.ok()) << group.status();
    absl::StatusOr<std::vector<pid_t>> tids = (*group)->Tids(absl::Seconds(10));
    ASSERT_TRUE(tids.ok()) << tids.status();
    std::sort(tids->begin(), tids->end());
    EXPECT_EQ(*tids, NewTasks(before));
    (*group)->Stop();
    tids = (*group)->Tids(absl::ZeroDuration());
    ASSERT_TRUE(tids.ok()) << tids.status();
    EXPECT_TRUE(tids->empty());
  }
}

TEST(BackgroundThreadsTest, ZeroThreadsIsEmpty) {
  absl::StatusOr<std::unique_ptr<BackgroundThreads>> none =
      BackgroundThreads::Start(BackgroundThreads::kParked, 0);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ((*none)->size(), 0);
}

TEST(BackgroundThreadsTest, ManyStartStopCyclesLeaveNothingBehind) {
  absl::StatusOr<ProcessState> before = CaptureProcessState();
  ASSERT_TRUE(before.ok()) << before.status();
  for (int i = 0; i < 50; ++i) {
    absl::StatusOr<std::unique_ptr<BackgroundThreads>> batch =
        BackgroundThreads::Start(BackgroundThreads::kParked, 4);
    ASSERT_TRUE(batch.ok()) << batch.status();
  }
  absl::StatusOr<ProcessState> after = CaptureProcessStateSettled(*before);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after, *before);
}

TEST(BackgroundThreadsTest, PinnedThreadsRunOnlyWhereAsked) {
  absl::StatusOr<CpuMask> allowed = GetAffinity();
  ASSERT_TRUE(allowed.ok()) << allowed.status();
  std::vector<int> cpus = allowed->Cpus();
  ASSERT_FALSE(cpus.empty());
  std::vector<pid_t> before = Tasks();
  absl::StatusOr<std::unique_ptr<BackgroundThreads>> spinning = BackgroundThreads::Start(
      BackgroundThreads::kSpinning, 2 * static_cast<int>(cpus.size()), cpus);
  ASSERT_TRUE(spinning.ok()) << spinning.status();
  std::vector<pid_t> added = NewTasks(before);
  ASSERT_EQ(added.size(), 2 * cpus.size());
  // Round-robin over `cpus`: each CPU gets exactly two single-CPU threads.
  std::vector<int> pinned_to;
  for (pid_t tid : added) {
    absl::StatusOr<CpuMask> mask = GetAffinity(tid);
    ASSERT_TRUE(mask.ok()) << mask.status();
    ASSERT_EQ(mask->Cpus().size(), 1u) << "thread " << tid << " is not pinned";
    pinned_to.push_back(mask->Cpus()[0]);
  }
  for (int cpu : cpus) {
    EXPECT_EQ(std::count(pinned_to.begin(), pinned_to.end(), cpu), 2) << "CPU " << cpu;
  }
  // The creating thread's own affinity is untouched.
  absl::StatusOr<CpuMask> mine = GetAffinity();
  ASSERT_TRUE(mine.ok());
  EXPECT_EQ(mine->Cpus(), cpus);
}

TEST(BackgroundThreadsTest, UnpinnedThreadsKeepTheCreatorsMask) {
  absl::StatusOr<CpuMask> allowed = GetAffinity();
  ASSERT_TRUE(allowed.ok()) << allowed.status();
  std::vector<pid_t> before = Tasks();
  absl::StatusOr<std::unique_ptr<BackgroundThreads>> parked =
      BackgroundThreads::Start(BackgroundThreads::kParked, 2);
  ASSERT_TRUE(parked.ok()) << parked.status();
  for (pid_t tid : NewTasks(before)) {
    absl::StatusOr<CpuMask> mask = GetAffinity(tid);
    ASSERT_TRUE(mask.ok()) << mask.status();
    EXPECT_EQ(mask->Cpus(), allowed->Cpus());
  }
}

TEST(BackgroundThreadsTest, ThreadsInheritAnInheritableBreakpoint) {
  if (absl::Status s = ProbeCapabilities().RequireFiringBreakpoints(); !s.ok()) {
    GTEST_SKIP() << s.message();
  }
  static volatile int watched = 0;
  BreakpointSpec spec;
  spec.address = &watched;
  spec.length = sizeof(watched);
  spec.access = BreakpointAccess::kWrite;
  spec.inherit = true;
  absl::StatusOr<PerfEvent> event = PerfEvent::Open(BreakpointAttr(spec), 0, -1);
  ASSERT_TRUE(event.ok()) << event.status();
  // A child's count is folded into the parent's when the child exits; std::thread is
  // created the same way (clone with CLONE_THREAD) as BackgroundThreads'.
  absl::StatusOr<std::unique_ptr<BackgroundThreads>> parked =
      BackgroundThreads::Start(BackgroundThreads::kParked, 2);
  ASSERT_TRUE(parked.ok()) << parked.status();
  std::thread writer([] {
    for (int i = 0; i < 7; ++i) watched = i;
  });
  writer.join();
  ASSERT_TRUE(WaitForExitingThreads(absl::Seconds(5)).ok());  // its count is folded at exit
  absl::StatusOr<uint64_t> count = event->ReadCount();
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, 7u) << "a thread created after the breakpoint did not inherit it";
}

}  // namespace
}  // namespace perfscale
