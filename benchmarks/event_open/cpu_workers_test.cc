// CpuWorkers really run each job on its own CPU, all at once, report errors by worker,
// survive refused pinning, and leave no thread behind.
#include "benchmarks/event_open/cpu_workers.h"

#include <sched.h>

#include <atomic>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "lib/cpu_set.h"
#include "testing/common/process_state.h"

namespace perfscale {
namespace {

int CountThreads() {
  absl::StatusOr<std::vector<pid_t>> tasks = testing::ListTasks();
  return tasks.ok() ? static_cast<int>(tasks->size()) : -1;
}

std::vector<int> AllowedCpus() {
  absl::StatusOr<CpuMask> mask = GetAffinity();
  return mask.ok() ? mask->Cpus() : std::vector<int>{};
}

TEST(CpuWorkers, EachJobRunsOnItsCpu) {
  std::vector<int> cpus = AllowedCpus();
  ASSERT_FALSE(cpus.empty());
  // ThreadSanitizer starts a helper thread with the first thread a process creates:
  // let that happen before the baseline.
  std::thread([] {}).join();
  int threads_before = CountThreads();
  {
    absl::StatusOr<std::unique_ptr<CpuWorkers>> workers = CpuWorkers::Start(cpus);
    ASSERT_TRUE(workers.ok()) << workers.status();
    EXPECT_EQ((*workers)->size(), static_cast<int>(cpus.size()));
    EXPECT_TRUE((*workers)->unpinned_cpus().empty()) << (*workers)->refusal();
    EXPECT_EQ(CountThreads(), threads_before + static_cast<int>(cpus.size()));
    for (int round = 0; round < 3; ++round) {  // the pool is reused across runs
      std::vector<int> ran_on(cpus.size(), -1);
      absl::Status done = (*workers)->RunOnEach([&](int index) {
        ran_on[static_cast<size_t>(index)] = sched_getcpu();
        return absl::OkStatus();
      });
      ASSERT_TRUE(done.ok()) << done;
      EXPECT_EQ(ran_on, cpus) << "round " << round;
    }
  }
  EXPECT_EQ(CountThreads(), threads_before);
}

TEST(CpuWorkers, JobsRunConcurrently) {
  std::vector<int> cpus = AllowedCpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs";
  absl::StatusOr<std::unique_ptr<CpuWorkers>> workers = CpuWorkers::Start(cpus);
  ASSERT_TRUE(workers.ok()) << workers.status();
  // Every worker waits for all the others to arrive: only concurrent jobs get through.
  std::atomic<int> arrived{0};
  absl::Status done = (*workers)->RunOnEach([&](int) {
    arrived.fetch_add(1);
    for (long spins = 0; arrived.load() < static_cast<int>(cpus.size()); ++spins) {
      if (spins > 2000000000L) return absl::DeadlineExceededError("workers ran one by one");
    }
    return absl::OkStatus();
  });
  EXPECT_TRUE(done.ok()) << done;
}

TEST(CpuWorkers, FirstErrorByIndexIsReturned) {
  std::vector<int> cpus = AllowedCpus();
  absl::StatusOr<std::unique_ptr<CpuWorkers>> workers = CpuWorkers::Start(cpus);
  ASSERT_TRUE(workers.ok()) << workers.status();
  absl::Status done = (*workers)->RunOnEach(
      [](int index) { return absl::InternalError(absl::StrCat("worker ", index)); });
  EXPECT_EQ(done.message(), "worker 0");
  EXPECT_TRUE((*workers)->RunOnEach([](int) { return absl::OkStatus(); }).ok());
}

TEST(CpuWorkers, RefusedPinningIsReportedAndTheJobStillRuns) {
  std::vector<int> cpus = AllowedCpus();
  int refused = cpus.back();
  absl::StatusOr<std::unique_ptr<CpuWorkers>> workers = CpuWorkers::Start(cpus, [refused](int cpu) {
    if (cpu == refused) {
      return absl::InvalidArgumentError("sched_setaffinity: Invalid argument (EINVAL)");
    }
    return SetAffinity(std::vector<int>{cpu});
  });
  ASSERT_TRUE(workers.ok()) << workers.status();
  EXPECT_EQ((*workers)->unpinned_cpus(), std::vector<int>{refused});
  EXPECT_NE((*workers)->refusal().find("EINVAL"), std::string::npos);
  std::atomic<int> ran{0};
  EXPECT_TRUE((*workers)
                  ->RunOnEach([&](int) {
                    ran.fetch_add(1);
                    return absl::OkStatus();
                  })
                  .ok());
  EXPECT_EQ(ran.load(), static_cast<int>(cpus.size()));
}

TEST(CpuWorkers, EmptyPool) {
  absl::StatusOr<std::unique_ptr<CpuWorkers>> workers = CpuWorkers::Start({});
  ASSERT_TRUE(workers.ok()) << workers.status();
  EXPECT_TRUE((*workers)->RunOnEach([](int) { return absl::InternalError("ran"); }).ok());
}

}  // namespace
}  // namespace perfscale
