// The pure part of TaskCounters: adding and naming the counts.
#include "lib/task_counters.h"

#include "gtest/gtest.h"

namespace perfscale {
namespace {

TEST(TaskCountsTest, AddsAndNamesEveryCounter) {
  TaskCounts a;
  a.ipis_sent = 2;
  a.lock_wait_ns = 5;
  TaskCounts b = a;
  b += a;
  EXPECT_EQ(b.Count(TaskCounter::kIpisSent), 4u);
  EXPECT_EQ(b.Count(TaskCounter::kLockWait), 10u);
  EXPECT_STREQ(TaskCounterName(TaskCounter::kLockWait), "lock_wait_us");
  EXPECT_STREQ(TaskCounterName(TaskCounter::kCtxSwitches), "ctx_switches");
}

}  // namespace
}  // namespace perfscale
