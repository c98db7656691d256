// ProbeBreakpointSlots on the real kernel: at least one slot (x86: exactly 4), the
// limit honoured, slots already held by this task subtracted, and no fd left open.
#include "benchmarks/breakpoint/breakpoint_slots.h"

#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "lib/capabilities.h"
#include "lib/perf_attr.h"
#include "lib/perf_event.h"

namespace perfscale {
namespace {

int OpenFds() {
  absl::StatusOr<int> fds = CountOpenFds();
  EXPECT_TRUE(fds.ok()) << fds.status();
  return fds.ok() ? *fds : -1;
}

class BreakpointSlotsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (absl::Status s = ProbeCapabilities().RequireBreakpointPmu(); !s.ok()) {
      GTEST_SKIP() << s.message();
    }
  }
};

TEST_F(BreakpointSlotsTest, FindsTheHardwaresSlotsAndLeavesNoFd) {
  int fds_before = OpenFds();
  absl::StatusOr<int> slots = ProbeBreakpointSlots();
  ASSERT_TRUE(slots.ok()) << slots.status();
  EXPECT_GE(*slots, 1);
  EXPECT_LT(*slots, 32) << "the probe never hit ENOSPC";
#if defined(__x86_64__) || defined(__i386__)
  EXPECT_EQ(*slots, 4) << "x86 has 4 debug address registers";
#endif
  EXPECT_EQ(OpenFds(), fds_before);
  // The probe released every slot: a second probe finds them all again.
  absl::StatusOr<int> again = ProbeBreakpointSlots();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *slots);
}

TEST_F(BreakpointSlotsTest, HonoursTheLimit) {
  int fds_before = OpenFds();
  absl::StatusOr<int> one = ProbeBreakpointSlots(1);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(*one, 1);
  absl::StatusOr<int> none = ProbeBreakpointSlots(0);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(*none, 0);
  EXPECT_EQ(OpenFds(), fds_before);
}

TEST_F(BreakpointSlotsTest, SlotsHeldByThisTaskAreNotFree) {
  absl::StatusOr<int> total = ProbeBreakpointSlots();
  ASSERT_TRUE(total.ok()) << total.status();
  if (*total < 2) GTEST_SKIP() << "needs 2 breakpoint slots, this machine has " << *total;
  static volatile char held_byte = 0;
  BreakpointSpec spec;
  spec.address = &held_byte;
  spec.inherit = true;
  absl::StatusOr<PerfEvent> held = PerfEvent::Open(BreakpointAttr(spec), 0, -1);
  ASSERT_TRUE(held.ok()) << held.status();
  absl::StatusOr<int> free_slots = ProbeBreakpointSlots();
  ASSERT_TRUE(free_slots.ok()) << free_slots.status();
  EXPECT_EQ(*free_slots, *total - 1);
}

TEST_F(BreakpointSlotsTest, AllSlotsHeldIsAnErrorNotZero) {
  absl::StatusOr<int> total = ProbeBreakpointSlots();
  ASSERT_TRUE(total.ok()) << total.status();
  static volatile char bytes[32];
  std::vector<PerfEvent> held;
  for (int i = 0; i < *total; ++i) {
    BreakpointSpec spec;
    spec.address = &bytes[i];
    absl::StatusOr<PerfEvent> event = PerfEvent::Open(BreakpointAttr(spec), 0, -1);
    ASSERT_TRUE(event.ok()) << event.status();
    held.push_back(*std::move(event));
  }
  int fds_before = OpenFds();
  absl::StatusOr<int> free_slots = ProbeBreakpointSlots();
  ASSERT_FALSE(free_slots.ok()) << "probe found " << *free_slots << " free slots";
  EXPECT_EQ(free_slots.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(OpenFds(), fds_before);
}

}  // namespace
}  // namespace perfscale
