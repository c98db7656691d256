// KernelCostMeter around real work: system time from syscalls, user time from a loop,
// children's time only when asked, and function-call IPIs from cross-CPU event toggles.
#include "lib/kernel_cost.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "lib/background_threads.h"
#include "lib/capabilities.h"
#include "lib/cpu_set.h"
#include "lib/perf_attr.h"
#include "lib/perf_event.h"

namespace perfscale {
namespace {

// Syscalls that do real kernel work, for at least `ms` of wall time.
void BurnSystemTime(int ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 100; ++i) {
      int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (fd >= 0) close(fd);
    }
  }
}

void BurnUserTime(int ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  volatile uint64_t sink = 0;
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 10000; ++i) sink = sink * 31 + static_cast<uint64_t>(i);
  }
}

TEST(KernelCostMeterTest, SystemTimeOfSyscalls) {
  KernelCostMeter meter;
  ASSERT_TRUE(meter.Start().ok());
  BurnSystemTime(200);
  absl::StatusOr<KernelCost> cost = meter.Stop();
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_GT(cost->system_seconds, 0.0);
  EXPECT_LT(cost->system_seconds, 10.0);
  EXPECT_GE(cost->user_seconds, 0.0);
}

TEST(KernelCostMeterTest, UserTimeOfALoop) {
  KernelCostMeter meter;
  ASSERT_TRUE(meter.Start().ok());
  BurnUserTime(200);
  absl::StatusOr<KernelCost> cost = meter.Stop();
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_GT(cost->user_seconds, 0.0);
  EXPECT_GE(cost->system_seconds, 0.0);
}

TEST(KernelCostMeterTest, StopCanBeCalledAgainAndKeepsGrowingFromStart) {
  KernelCostMeter meter;
  ASSERT_TRUE(meter.Start().ok());
  BurnSystemTime(50);
  absl::StatusOr<KernelCost> first = meter.Stop();
  ASSERT_TRUE(first.ok());
  BurnSystemTime(50);
  absl::StatusOr<KernelCost> second = meter.Stop();
  ASSERT_TRUE(second.ok());
  EXPECT_GE(second->system_seconds + second->user_seconds,
            first->system_seconds + first->user_seconds);
}

// A child that burns system time and is reaped: only an include_children meter sees it.
TEST(KernelCostMeterTest, ChildrenCountOnlyWhenAsked) {
  KernelCostMeter self_only(/*include_children=*/false);
  KernelCostMeter with_children(/*include_children=*/true);
  ASSERT_TRUE(self_only.Start().ok());
  ASSERT_TRUE(with_children.Start().ok());
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Burns CPU time, not wall time, so a loaded machine cannot starve the figure.
    for (;;) {
      BurnSystemTime(10);
      rusage self{};
      getrusage(RUSAGE_SELF, &self);
      if (self.ru_stime.tv_sec + self.ru_utime.tv_sec +
              (self.ru_stime.tv_usec + self.ru_utime.tv_usec) * 1e-6 >=
          0.3) {
        break;
      }
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  absl::StatusOr<KernelCost> mine = self_only.Stop();
  absl::StatusOr<KernelCost> all = with_children.Stop();
  ASSERT_TRUE(mine.ok());
  ASSERT_TRUE(all.ok());
  double mine_total = mine->system_seconds + mine->user_seconds;
  double all_total = all->system_seconds + all->user_seconds;
  // The parent only waited; the child used >= 300 ms of CPU.
  EXPECT_GT(all_total - mine_total, 0.1)
      << "self " << mine_total << " s, with children " << all_total << " s";
}

TEST(KernelCostMeterTest, CountsFunctionCallIpisOfCrossCpuWork) {
  absl::StatusOr<std::vector<int>> online = OnlineCpus();
  ASSERT_TRUE(online.ok()) << online.status();
  if (online->size() < 2) GTEST_SKIP() << "needs 2 online CPUs for a cross-CPU call";
  if (absl::Status s = ProbeCapabilities().RequireSystemWide(); !s.ok()) {
    GTEST_SKIP() << s.message();
  }
  absl::StatusOr<ScopedAffinity> pin = ScopedAffinity::PinTo(online->front());
  ASSERT_TRUE(pin.ok()) << pin.status();
  absl::StatusOr<std::unique_ptr<BackgroundThreads>> spinner =
      BackgroundThreads::Start(BackgroundThreads::kSpinning, 1, {online->back()});
  ASSERT_TRUE(spinner.ok()) << spinner.status();
  absl::StatusOr<PerfEvent> event =
      PerfEvent::Open(SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK), -1, online->back());
  ASSERT_TRUE(event.ok()) << event.status();

  KernelCostMeter meter;
  ASSERT_TRUE(meter.Start().ok());
  constexpr int kToggles = 200;
  for (int i = 0; i < kToggles; ++i) {
    ASSERT_TRUE(event->Disable().ok());
    ASSERT_TRUE(event->Enable().ok());
  }
  absl::StatusOr<KernelCost> cost = meter.Stop();
  (*spinner)->Stop();
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_GE(cost->ipis.function_call, static_cast<uint64_t>(kToggles));
  EXPECT_EQ(cost->ipis.function_call_per_cpu.size(), online->size());
}

}  // namespace
}  // namespace perfscale
