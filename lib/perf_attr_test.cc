// The attr builders only fill a struct, so every field that changes what the kernel does
// is checked: a wrong bp_len or a missing exclude_kernel silently measures something else.
#include "lib/perf_attr.h"

#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace perfscale {
namespace {

TEST(BreakpointAttrTest, FillsEveryFieldPerfBenchSets) {
  static volatile long watched = 0;
  BreakpointSpec spec;
  spec.address = &watched;
  spec.length = 8;
  spec.access = BreakpointAccess::kWrite;
  spec.inherit = true;
  perf_event_attr attr = BreakpointAttr(spec);
  EXPECT_EQ(attr.type, static_cast<uint32_t>(PERF_TYPE_BREAKPOINT));
  EXPECT_EQ(attr.size, sizeof(perf_event_attr));
  EXPECT_EQ(attr.config, 0u);
  EXPECT_EQ(attr.bp_type, static_cast<uint32_t>(HW_BREAKPOINT_W));
  EXPECT_EQ(attr.bp_addr, reinterpret_cast<uint64_t>(&watched));
  EXPECT_EQ(attr.bp_len, 8u);
  EXPECT_EQ(attr.inherit, 1u);
  EXPECT_EQ(attr.disabled, 0u);
  EXPECT_EQ(attr.exclude_kernel, 1u);
  EXPECT_EQ(attr.exclude_hv, 1u);
  EXPECT_EQ(attr.exclude_user, 0u);
  EXPECT_EQ(attr.sample_period, 0u);
  EXPECT_EQ(attr.read_format, 0u);
}

TEST(BreakpointAttrTest, DefaultsAreOneByteReadWriteNotInherited) {
  static volatile char byte = 0;
  BreakpointSpec spec;
  spec.address = &byte;
  perf_event_attr attr = BreakpointAttr(spec);
  EXPECT_EQ(attr.bp_type, static_cast<uint32_t>(HW_BREAKPOINT_RW));
  EXPECT_EQ(attr.bp_len, 1u);
  EXPECT_EQ(attr.inherit, 0u);
}

TEST(BreakpointAttrTest, AccessKinds) {
  static volatile char byte = 0;
  BreakpointSpec spec;
  spec.address = &byte;
  spec.access = BreakpointAccess::kRead;
  EXPECT_EQ(BreakpointAttr(spec).bp_type, static_cast<uint32_t>(HW_BREAKPOINT_R));
  spec.access = BreakpointAccess::kReadWrite;
  EXPECT_EQ(BreakpointAttr(spec).bp_type, static_cast<uint32_t>(HW_BREAKPOINT_RW));
  spec.access = BreakpointAccess::kExecute;
  spec.length = 1;
  perf_event_attr exec = BreakpointAttr(spec);
  EXPECT_EQ(exec.bp_type, static_cast<uint32_t>(HW_BREAKPOINT_X));
  // The kernel rejects execute breakpoints narrower than a long on x86.
  EXPECT_EQ(exec.bp_len, sizeof(long));
}

TEST(BreakpointAttrTest, DisabledFlag) {
  BreakpointSpec spec;
  spec.disabled = true;
  EXPECT_EQ(BreakpointAttr(spec).disabled, 1u);
}

TEST(SoftwareAttrTest, CountingOnlyUserAndKernel) {
  perf_event_attr attr = SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK);
  EXPECT_EQ(attr.type, static_cast<uint32_t>(PERF_TYPE_SOFTWARE));
  EXPECT_EQ(attr.config, static_cast<uint64_t>(PERF_COUNT_SW_CPU_CLOCK));
  EXPECT_EQ(attr.size, sizeof(perf_event_attr));
  EXPECT_EQ(attr.exclude_kernel, 0u);
  EXPECT_EQ(attr.exclude_user, 0u);
  EXPECT_EQ(attr.sample_period, 0u);
  EXPECT_EQ(attr.disabled, 0u);
}

TEST(ParseSoftwareEventNameTest, PerfsNamesAndAliases) {
  struct Case {
    const char* name;
    uint64_t config;
  };
  const Case cases[] = {
      {"cpu-clock", PERF_COUNT_SW_CPU_CLOCK},
      {"task-clock", PERF_COUNT_SW_TASK_CLOCK},
      {"page-faults", PERF_COUNT_SW_PAGE_FAULTS},
      {"faults", PERF_COUNT_SW_PAGE_FAULTS},
      {"context-switches", PERF_COUNT_SW_CONTEXT_SWITCHES},
      {"cs", PERF_COUNT_SW_CONTEXT_SWITCHES},
      {"cpu-migrations", PERF_COUNT_SW_CPU_MIGRATIONS},
      {"migrations", PERF_COUNT_SW_CPU_MIGRATIONS},
      {"minor-faults", PERF_COUNT_SW_PAGE_FAULTS_MIN},
      {"major-faults", PERF_COUNT_SW_PAGE_FAULTS_MAJ},
      {"alignment-faults", PERF_COUNT_SW_ALIGNMENT_FAULTS},
      {"emulation-faults", PERF_COUNT_SW_EMULATION_FAULTS},
      {"dummy", PERF_COUNT_SW_DUMMY},
  };
  for (const Case& c : cases) {
    absl::StatusOr<uint64_t> config = ParseSoftwareEventName(c.name);
    ASSERT_TRUE(config.ok()) << c.name << ": " << config.status();
    EXPECT_EQ(*config, c.config) << c.name;
  }
}

TEST(ParseSoftwareEventNameTest, UnknownNamesListTheKnownOnes) {
  for (const char* bad :
       {"", "cycles", "CPU-CLOCK", " cpu-clock", "cpu-clock\n", "sched:sched_switch"}) {
    absl::StatusOr<uint64_t> config = ParseSoftwareEventName(bad);
    ASSERT_FALSE(config.ok()) << "'" << bad << "'";
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(config.status().message(), "known: cpu-clock"))
        << config.status();
  }
}

TEST(TracepointAttrTest, CarriesTheId) {
  perf_event_attr attr = TracepointAttr(316);
  EXPECT_EQ(attr.type, static_cast<uint32_t>(PERF_TYPE_TRACEPOINT));
  EXPECT_EQ(attr.config, 316u);
  EXPECT_EQ(attr.size, sizeof(perf_event_attr));
  EXPECT_EQ(attr.sample_period, 0u);
  EXPECT_EQ(TracepointAttr(UINT64_MAX).config, UINT64_MAX);
}

}  // namespace
}  // namespace perfscale
