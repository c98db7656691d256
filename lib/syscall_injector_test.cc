// The pure parts of the syscall injector: its description, the range of its strength,
// the sizing of a measuring round, and the refusals that need no kernel.
#include "lib/syscall_injector.h"

#include <cstdint>
#include <limits>

#include "gtest/gtest.h"

namespace perfscale {
namespace {

TEST(DescribeInjectorTest, SaysHowManyEventsOnWhichTracepoints) {
  EXPECT_EQ(DescribeInjector(40, 2, ""),
            "40 counting events per CPU on raw_syscalls:sys_enter and raw_syscalls:sys_exit "
            "(2 CPUs, 160 events)");
  EXPECT_EQ(DescribeInjector(1, 1, "id >= 0"),
            "1 counting events per CPU on raw_syscalls:sys_enter and raw_syscalls:sys_exit "
            "(1 CPU, 2 events), filter 'id >= 0'");
  EXPECT_EQ(DescribeInjector(4096, 8192, ""),
            "4096 counting events per CPU on raw_syscalls:sys_enter and raw_syscalls:sys_exit "
            "(8192 CPUs, 67108864 events)");
}

TEST(CheckInjectorEventsPerCpuTest, AcceptsOneToMax) {
  EXPECT_TRUE(CheckInjectorEventsPerCpu(1).ok());
  EXPECT_TRUE(CheckInjectorEventsPerCpu(kMaxInjectorEventsPerCpu).ok());
  for (int64_t bad : {int64_t{0}, int64_t{-1}, int64_t{kMaxInjectorEventsPerCpu + 1},
                      std::numeric_limits<int64_t>::max()}) {
    absl::Status status = CheckInjectorEventsPerCpu(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(status)) << bad;
    EXPECT_NE(status.message().find("1..4096"), absl::string_view::npos) << status;
  }
}

TEST(SyscallInjectorTest, RefusesAStrengthOutOfRangeBeforeTouchingTheKernel) {
  EXPECT_TRUE(absl::IsInvalidArgument(SyscallInjector::Open(0).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(SyscallInjector::Open(5000).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(MeasureInjectorCost(0).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(MeasureInjectorCost(4097, "id >= 0").status()));
}

TEST(CallsForRoundTest, ScalesATrialToTheRoundsLength) {
  // 1000 calls in 1 ms: 10 ms is 10000 calls.
  EXPECT_EQ(CallsForRound(1000, 1e6, 0.010, 100'000'000), 10000);
  // Under TCG the first trial may already be longer than the round.
  EXPECT_EQ(CallsForRound(64, 20e6, 0.010, 100'000'000), 32);
  EXPECT_EQ(CallsForRound(1, 1e9, 0.010, 100'000'000), 1);
}

TEST(CallsForRoundTest, StaysWithinItsBounds) {
  // A trial that took no time (a coarse clock) asks for at most 100x, and never beyond
  // max_calls.
  EXPECT_EQ(CallsForRound(1000, 0, 0.010, 100'000'000), 100000);
  EXPECT_EQ(CallsForRound(1000, 1, 0.010, 100'000'000), 100000);
  EXPECT_EQ(CallsForRound(1000, 1, 0.010, 5000), 5000);
  EXPECT_EQ(CallsForRound(0, -5, 0.010, 0), 1);
  EXPECT_EQ(CallsForRound(10, std::numeric_limits<double>::quiet_NaN(), 0.010, 1000), 1000);
  EXPECT_EQ(CallsForRound(10, 1e6, std::numeric_limits<double>::quiet_NaN(), 1000), 1);
}

TEST(InjectorCostTest, AddedIsInjectedLessBare) {
  InjectorCost cost;
  cost.bare_ns = 120.5;
  cost.injected_ns = 900.0;
  EXPECT_DOUBLE_EQ(cost.added_ns(), 779.5);
}

TEST(BareLoopNsTest, TimesSomething) {
  // A syscall takes time on any machine; no bound on how much.
  EXPECT_GT(BareLoopNs(1000), 0);
}

}  // namespace
}  // namespace perfscale
