// /proc/interrupts parsing. Fed a real x86 sample (taken from the 2-CPU KVM guest this
// project was developed on), an arm64 layout whose IPIs are IPIn rows recognized by their
// description, and malformed text; then the real file and real IPIs.
#include "lib/interrupts.h"

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "lib/background_threads.h"
#include "lib/capabilities.h"
#include "lib/cpu_set.h"
#include "lib/perf_attr.h"
#include "lib/perf_event.h"

namespace perfscale {
namespace {

// `cat /proc/interrupts` on an x86-64 KVM guest (Debian 12, 6.1), verbatim.
constexpr char kX86Sample[] = R"(           CPU0       CPU1       
 24:          1          0  IO-APIC   5-edge      ACPI:Ged
 25:          0          1  IO-APIC   6-edge      ACPI:Ged
 26:          0         13  IO-APIC   4-edge      ttyS0
 28:          0          0 PCI-MSIX-0000:00:01.0   0-edge      virtio0-config
 29:          0          0 PCI-MSIX-0000:00:01.0   1-edge      virtio0-inflate
 30:          0          0 PCI-MSIX-0000:00:01.0   2-edge      virtio0-deflate
 31:          0        196 PCI-MSIX-0000:00:01.0   3-edge      virtio0-stats
 32:         77          0 PCI-MSIX-0000:00:01.0   4-edge      virtio0-reporting_vq
 33:          0          0 PCI-MSIX-0000:00:05.0   0-edge      virtio4-config
 34:         28          0 PCI-MSIX-0000:00:05.0   1-edge      virtio4-input
 35:          0          1 PCI-MSIX-0000:00:02.0   0-edge      virtio1-config
 36:          0      76560 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0
 37:          0          0 PCI-MSIX-0000:00:03.0   0-edge      virtio2-config
 38:          0        766 PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0
 39:        510          0 PCI-MSIX-0000:00:03.0   2-edge      virtio2-output.0
 40:          0          0 PCI-MSIX-0000:00:04.0   0-edge      virtio3-config
 41:       2233          0 PCI-MSIX-0000:00:04.0   1-edge      virtio3-rx
 42:          0       6692 PCI-MSIX-0000:00:04.0   2-edge      virtio3-tx
 43:          1          0 PCI-MSIX-0000:00:04.0   3-edge      virtio3-event
NMI:          0          0   Non-maskable interrupts
LOC:      83533      87820   Local timer interrupts
SPU:          0          0   Spurious interrupts
PMI:          0          0   Performance monitoring interrupts
IWI:          0          1   IRQ work interrupts
RTR:          0          0   APIC ICR read retries
RES:      26551      20387   Rescheduling interrupts
CAL:     262689     158593   Function call interrupts
TLB:      33573      35047   TLB shootdowns
TRM:          0          0   Thermal event interrupts
HYP:         53         65   Hypervisor callback interrupts
ERR:          0
MIS:          0
PIN:          0          0   Posted-interrupt notification event
NPI:          0          0   Nested posted-interrupt event
PIW:          0          0   Posted-interrupt wakeup event
)";

// An arm64 layout (GICv3, 4 CPUs): no CAL/TLB/RES labels, IPIs are IPI0..IPI6 with
// descriptions.
constexpr char kArm64Sample[] = R"(           CPU0       CPU1       CPU2       CPU3       
 11:      50123      48210      47001      46999     GICv3  27 Level     arch_timer
 13:          0          0          0          0     GICv3  33 Level     uart-pl011
 48:       3456          0          0          0   ITS-MSI 524288 Edge      virtio0-requests
IPI0:      1000       2000       3000       4000       Rescheduling interrupts
IPI1:       500        600        700        800       Function call interrupts
IPI2:         0          0          0          0       CPU stop interrupts
IPI3:         0          0          0          0       CPU stop (for crash dump) interrupts
IPI4:        10         20         30         40       Timer broadcast interrupts
IPI5:         1          2          3          4       IRQ work interrupts
IPI6:         0          0          0          0       CPU wake-up interrupts
Err:          0
)";

IpiCounts MustParse(absl::string_view text) {
  absl::StatusOr<IpiCounts> counts = ParseIpiCounts(text);
  EXPECT_TRUE(counts.ok()) << counts.status();
  return counts.ok() ? *counts : IpiCounts{};
}

TEST(ParseIpiCountsTest, X86SampleSumsCalTlbRes) {
  IpiCounts counts = MustParse(kX86Sample);
  EXPECT_EQ(counts.function_call, 262689u + 158593u);
  EXPECT_EQ(counts.tlb_shootdown, 33573u + 35047u);
  EXPECT_EQ(counts.rescheduling, 26551u + 20387u);
  EXPECT_EQ(counts.function_call_per_cpu, (std::vector<uint64_t>{262689, 158593}));
}

TEST(ParseIpiCountsTest, Arm64SampleRecognizesIpiRowsByDescription) {
  IpiCounts counts = MustParse(kArm64Sample);
  EXPECT_EQ(counts.function_call, 500u + 600 + 700 + 800);
  EXPECT_EQ(counts.rescheduling, 1000u + 2000 + 3000 + 4000);
  EXPECT_EQ(counts.tlb_shootdown, 0u);  // arm64 has no TLB shootdown IPI
  EXPECT_EQ(counts.function_call_per_cpu, (std::vector<uint64_t>{500, 600, 700, 800}));
}

TEST(ParseIpiCountsTest, AbsentRowsCountZero) {
  IpiCounts counts = MustParse("   CPU0 CPU1\n 0:  5  6  IO-APIC 2-edge timer\n");
  EXPECT_EQ(counts.function_call, 0u);
  EXPECT_EQ(counts.tlb_shootdown, 0u);
  EXPECT_EQ(counts.rescheduling, 0u);
  EXPECT_EQ(counts.function_call_per_cpu, (std::vector<uint64_t>{0, 0}));
}

TEST(ParseIpiCountsTest, HeaderOnlyIsAllZero) {
  IpiCounts counts = MustParse("           CPU0\n");
  EXPECT_EQ(counts.function_call, 0u);
  EXPECT_EQ(counts.function_call_per_cpu.size(), 1u);
}

TEST(ParseIpiCountsTest, LeadingBlankLinesBeforeHeaderAreSkipped) {
  IpiCounts counts = MustParse("\n\n   CPU0\nCAL: 7 Function call interrupts\n");
  EXPECT_EQ(counts.function_call, 7u);
}

TEST(ParseIpiCountsTest, EmptyTextIsAnError) {
  EXPECT_EQ(ParseIpiCounts("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseIpiCounts("\n \n\t\n").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ParseIpiCountsTest, MissingHeaderIsAnError) {
  absl::StatusOr<IpiCounts> counts =
      ParseIpiCounts("CAL:  1  2  Function call interrupts\nTLB: 3 4 TLB shootdowns\n");
  EXPECT_FALSE(counts.ok());
}

TEST(ParseIpiCountsTest, GarbageIsAnError) {
  EXPECT_FALSE(ParseIpiCounts("hello world\n").ok());
  EXPECT_FALSE(ParseIpiCounts(std::string("\0\0\0", 3)).ok());
  EXPECT_FALSE(ParseIpiCounts("CPU0 GPU1\nCAL: 1 2 Function call interrupts\n").ok());
}

TEST(ParseIpiCountsTest, ShortRowsStopAtTheDescription) {
  // Fewer numbers than CPUs: the description's first word must not be taken as a count.
  IpiCounts counts = MustParse("  CPU0 CPU1 CPU2\nCAL: 5 Function call interrupts\n");
  EXPECT_EQ(counts.function_call, 5u);
  EXPECT_EQ(counts.function_call_per_cpu, (std::vector<uint64_t>{5, 0, 0}));
}

TEST(ParseIpiCountsTest, NumbersInDescriptionsAreNotCounted) {
  // More fields than CPUs: "27" in the description must not be read as CPU2's count.
  IpiCounts counts = MustParse("  CPU0 CPU1\nIPI1: 3 4 27 Function call interrupts\nCAL: 1 1 99\n");
  EXPECT_EQ(counts.function_call, 3u + 4 + 1 + 1);
  EXPECT_EQ(counts.function_call_per_cpu, (std::vector<uint64_t>{4, 5}));
}

TEST(ParseIpiCountsTest, MalformedCountsNeverBecomeGarbageValues) {
  // A count that is not a number, or does not fit 64 bits, must not turn into a value:
  // the row stops there, and the valid columns before it still count.
  IpiCounts counts = MustParse(
      "  CPU0 CPU1\n"
      "CAL: 10 xyz Function call interrupts\n"
      "TLB: 99999999999999999999999 5 TLB shootdowns\n"
      "RES: -3 4 Rescheduling interrupts\n");
  EXPECT_EQ(counts.function_call, 10u);
  EXPECT_EQ(counts.function_call_per_cpu, (std::vector<uint64_t>{10, 0}));
  EXPECT_EQ(counts.tlb_shootdown, 0u);
  EXPECT_EQ(counts.rescheduling, 0u);
}

TEST(ParseIpiCountsTest, LargestCountsParse) {
  IpiCounts counts = MustParse("  CPU0\nCAL: 18446744073709551615 Function call interrupts\n");
  EXPECT_EQ(counts.function_call, std::numeric_limits<uint64_t>::max());
}

TEST(ParseIpiCountsTest, LinesWithoutColonAreIgnored) {
  IpiCounts counts = MustParse("  CPU0\nnothing here\nCAL 5 5\nCAL: 2 Function call\n");
  EXPECT_EQ(counts.function_call, 2u);
}

TEST(IpiCountsTest, SubtractionIsPerFieldAndClampsResets) {
  IpiCounts a;
  a.function_call = 10;
  a.tlb_shootdown = 5;
  a.rescheduling = 100;
  a.function_call_per_cpu = {4, 6};
  IpiCounts b;
  b.function_call = 25;
  b.tlb_shootdown = 5;
  b.rescheduling = 50;                    // went backwards: a counter reset (CPU hotplug), not -50
  b.function_call_per_cpu = {10, 15, 7};  // a CPU came online
  IpiCounts d = b - a;
  EXPECT_EQ(d.function_call, 15u);
  EXPECT_EQ(d.tlb_shootdown, 0u);
  EXPECT_EQ(d.rescheduling, 0u);
  EXPECT_EQ(d.function_call_per_cpu, (std::vector<uint64_t>{6, 9, 7}));
}

TEST(ReadIpiCountsTest, ReadsThisMachine) {
  absl::StatusOr<IpiCounts> counts = ReadIpiCounts();
  ASSERT_TRUE(counts.ok()) << counts.status();
  absl::StatusOr<std::vector<int>> online = OnlineCpus();
  ASSERT_TRUE(online.ok()) << online.status();
  // /proc/interrupts has one column per online CPU.
  EXPECT_EQ(counts->function_call_per_cpu.size(), online->size());
  uint64_t sum = 0;
  for (uint64_t n : counts->function_call_per_cpu) sum += n;
  EXPECT_EQ(sum, counts->function_call);
}

TEST(ReadIpiCountsTest, FunctionCallIpisGrowWithCrossCpuWork) {
  absl::StatusOr<std::vector<int>> online = OnlineCpus();
  ASSERT_TRUE(online.ok()) << online.status();
  if (online->size() < 2) GTEST_SKIP() << "needs 2 online CPUs for a cross-CPU call";
  if (absl::Status s = ProbeCapabilities().RequireSystemWide(); !s.ok()) {
    GTEST_SKIP() << s.message();
  }
  // Enabling/disabling a per-CPU event runs a function on that CPU
  // (smp_call_function_single). A spinner keeps the target out of idle, where a
  // polling CPU could be woken without an IPI.
  int here = online->front();
  int there = online->back();
  absl::StatusOr<ScopedAffinity> pin = ScopedAffinity::PinTo(here);
  ASSERT_TRUE(pin.ok()) << pin.status();
  absl::StatusOr<std::unique_ptr<BackgroundThreads>> spinner =
      BackgroundThreads::Start(BackgroundThreads::kSpinning, 1, {there});
  ASSERT_TRUE(spinner.ok()) << spinner.status();
  absl::StatusOr<PerfEvent> event =
      PerfEvent::Open(SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK), -1, there);
  ASSERT_TRUE(event.ok()) << event.status();

  absl::StatusOr<IpiCounts> before = ReadIpiCounts();
  ASSERT_TRUE(before.ok()) << before.status();
  constexpr int kToggles = 200;
  for (int i = 0; i < kToggles; ++i) {
    ASSERT_TRUE(event->Disable().ok());
    ASSERT_TRUE(event->Enable().ok());
  }
  absl::StatusOr<IpiCounts> after = ReadIpiCounts();
  ASSERT_TRUE(after.ok()) << after.status();
  (*spinner)->Stop();

  IpiCounts delta = *after - *before;
  size_t column = online->size() - 1;  // columns follow the online CPUs in order
  // Two cross-CPU calls per toggle; others' IPIs only add, so half is a safe floor.
  EXPECT_GE(delta.function_call_per_cpu[column], static_cast<uint64_t>(kToggles))
      << "function-call IPIs on CPU " << there << ": " << delta.function_call_per_cpu[column];
  EXPECT_GE(delta.function_call, delta.function_call_per_cpu[column]);
}

}  // namespace
}  // namespace perfscale
