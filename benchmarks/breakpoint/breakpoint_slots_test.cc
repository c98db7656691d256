// ProbeBreakpointSlots on the real kernel: the hardware's slots (x86: exactly 4), the free
// ones, the limit honoured, slots held by this task or by CPU-wide breakpoints (another
// process's, as `perf record -a -e mem:ADDR` holds them) told apart from the hardware's
// count, and no fd left open.
#include "benchmarks/breakpoint/breakpoint_slots.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "lib/capabilities.h"
#include "lib/cpu_set.h"
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
  absl::StatusOr<BreakpointSlots> slots = ProbeBreakpointSlots();
  ASSERT_TRUE(slots.ok()) << slots.status();
  EXPECT_GE(slots->free, 1);
  EXPECT_LT(slots->free, 32) << "the probe never hit ENOSPC";
#if defined(__x86_64__) || defined(__i386__)
  EXPECT_EQ(slots->hardware, 4) << "x86 has 4 debug address registers";
#endif
  EXPECT_EQ(OpenFds(), fds_before);
  // The probe released every slot: a second probe finds them all again.
  absl::StatusOr<BreakpointSlots> again = ProbeBreakpointSlots();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->free, slots->free);
}

TEST_F(BreakpointSlotsTest, HonoursTheLimit) {
  int fds_before = OpenFds();
  absl::StatusOr<BreakpointSlots> one = ProbeBreakpointSlots(1);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->free, 1);
  absl::StatusOr<BreakpointSlots> none = ProbeBreakpointSlots(0);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->free, 0);
  EXPECT_EQ(OpenFds(), fds_before);
}

TEST_F(BreakpointSlotsTest, SlotsHeldByThisTaskAreNotFreeButStillTheHardwares) {
  absl::StatusOr<BreakpointSlots> total = ProbeBreakpointSlots();
  ASSERT_TRUE(total.ok()) << total.status();
  if (total->free < 2) GTEST_SKIP() << "needs 2 free breakpoint slots: " << total->Describe();
  static volatile char held_byte = 0;
  BreakpointSpec spec;
  spec.address = &held_byte;
  spec.inherit = true;
  absl::StatusOr<PerfEvent> held = PerfEvent::Open(BreakpointAttr(spec), 0, -1);
  ASSERT_TRUE(held.ok()) << held.status();
  absl::StatusOr<BreakpointSlots> slots = ProbeBreakpointSlots();
  ASSERT_TRUE(slots.ok()) << slots.status();
  EXPECT_EQ(slots->free, total->free - 1);
  EXPECT_EQ(slots->hardware, total->hardware);
}

TEST_F(BreakpointSlotsTest, AllSlotsHeldSaysSoNotAMachineWithoutSlots) {
  absl::StatusOr<BreakpointSlots> total = ProbeBreakpointSlots();
  ASSERT_TRUE(total.ok()) << total.status();
  static volatile char bytes[32];
  std::vector<PerfEvent> held;
  for (int i = 0; i < total->free; ++i) {
    BreakpointSpec spec;
    spec.address = &bytes[i];
    absl::StatusOr<PerfEvent> event = PerfEvent::Open(BreakpointAttr(spec), 0, -1);
    ASSERT_TRUE(event.ok()) << event.status();
    held.push_back(*std::move(event));
  }
  int fds_before = OpenFds();
  absl::StatusOr<BreakpointSlots> slots = ProbeBreakpointSlots();
  EXPECT_EQ(OpenFds(), fds_before);
  if (HardwareBreakpointSlots() == 0) {  // the count is unknown: say why there is none
    ASSERT_FALSE(slots.ok()) << slots->Describe();
    EXPECT_EQ(slots.status().code(), absl::StatusCode::kResourceExhausted);
    return;
  }
  ASSERT_TRUE(slots.ok()) << slots.status();
  EXPECT_EQ(slots->free, 0);
  EXPECT_EQ(slots->hardware, HardwareBreakpointSlots());
  EXPECT_EQ(slots->in_use(), slots->hardware);
}

// A probe that counted free slots as the hardware's said, with 3 of 4 held CPU-wide, "this machine
// has 1 hardware breakpoint slots", and the breakpoint family dropped its rows above 1.
// The kernel counts CPU-wide breakpoints against every task whoever opened them, so this
// process holding them stands for another one (testing/hostile does it from another).
TEST_F(BreakpointSlotsTest, CpuWideBreakpointsHeldElsewhereAreInUseNotMissing) {
  if (HardwareBreakpointSlots() < 2) GTEST_SKIP() << "the hardware's count is unknown here";
  absl::StatusOr<std::vector<int>> cpus = OnlineCpus();
  ASSERT_TRUE(cpus.ok()) << cpus.status();
  const int taken = HardwareBreakpointSlots() - 1;
  // The slots are the machine's: another test suite running beside this one (a second
  // checkout's, a developer's perf record) may hold some, and then there is nothing to
  // count against.
  absl::StatusOr<BreakpointSlots> before = ProbeBreakpointSlots();
  if (before.ok() && before->free < before->hardware) {
    GTEST_SKIP() << "another process holds breakpoint slots: " << before->Describe();
  }
  static volatile char bytes[8];
  std::vector<PerfEvent> held;
  for (int cpu : *cpus) {
    for (int i = 0; i < taken; ++i) {
      BreakpointSpec spec;
      spec.address = &bytes[i];
      absl::StatusOr<PerfEvent> event = PerfEvent::Open(BreakpointAttr(spec), -1, cpu);
      if (!event.ok() && absl::IsPermissionDenied(event.status())) {
        GTEST_SKIP() << "CPU-wide breakpoints need root or perf_event_paranoid <= 0: "
                     << event.status();
      }
      if (!event.ok() && absl::IsResourceExhausted(event.status()) && i == 0 && held.empty()) {
        GTEST_SKIP() << "another process took breakpoint slots as this test began: "
                     << event.status();
      }
      ASSERT_TRUE(event.ok()) << "CPU " << cpu << ": " << event.status();
      held.push_back(*std::move(event));
    }
  }
  absl::StatusOr<BreakpointSlots> slots = ProbeBreakpointSlots();
  ASSERT_TRUE(slots.ok()) << slots.status();
  EXPECT_EQ(slots->hardware, HardwareBreakpointSlots());
  EXPECT_EQ(slots->free, 1);
  EXPECT_EQ(slots->in_use(), taken);
  EXPECT_NE(
      slots->Describe().find(absl::StrCat("the hardware has ", slots->hardware,
                                          " breakpoint slots, ", taken, " are in use elsewhere")),
      std::string::npos)
      << slots->Describe();
}

}  // namespace
}  // namespace perfscale
