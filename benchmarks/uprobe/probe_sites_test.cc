// The probe sites as linked (each function starts with the bytes its table entry names
// and returns x + 1), what ClassifySitePatch makes of bytes a kernel could leave, and
// then real uprobes on every site: each counts exactly the calls, the site reads as a
// breakpoint or as rewritten while probed, and as linked once the probe is closed. A
// kernel may refuse only nop10 (its CS prefix, before the nop10 optimization). The
// kernel part needs the uprobe PMU and CAP_PERFMON (root): it skips with the reason
// otherwise.
#include "benchmarks/uprobe/probe_sites.h"

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/uprobe/elf_offset.h"
#include "benchmarks/uprobe/uprobe_pmu.h"
#include "gtest/gtest.h"
#include "lib/perf_event.h"

namespace perfscale {
namespace {

std::vector<uint8_t> Bytes(std::initializer_list<uint8_t> bytes) { return bytes; }

TEST(ProbeSites, EverySiteStartsWithItsBytesAndAddsOne) {
  if (ProbeSites().front().function == nullptr) {
    GTEST_SKIP() << "the probe sites are x86-64 instructions";
  }
  std::vector<std::string> names;
  for (const ProbeSite& site : ProbeSites()) {
    SCOPED_TRACE(site.name);
    names.push_back(site.name);
    EXPECT_EQ(SiteBytesNow(site), std::vector<uint8_t>(site.bytes.begin(), site.bytes.end()));
    EXPECT_EQ(ClassifySitePatch(site.bytes, SiteBytesNow(site)), SitePatch::kOriginal);
    EXPECT_EQ(site.function(41), 42);
    // 16-byte aligned: no site crosses a page.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(site.function) % 16, 0u);
    EXPECT_EQ(site.retprobe, std::string(site.name) == "return");
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"mov", "push", "nop1", "nop5", "nop9", "nop10", "return"}));
}

TEST(ClassifySitePatch, BreakpointRewriteOrNothing) {
  const std::vector<uint8_t> nop5 = Bytes({0x0f, 0x1f, 0x44, 0x00, 0x00});
  EXPECT_EQ(ClassifySitePatch(nop5, nop5), SitePatch::kOriginal);
  EXPECT_EQ(ClassifySitePatch(nop5, Bytes({0xcc, 0x1f, 0x44, 0x00, 0x00})), SitePatch::kBreakpoint);
  // The optimized nop5: a call into [uprobes-trampoline].
  EXPECT_EQ(ClassifySitePatch(nop5, Bytes({0xe8, 0x3b, 0x0c, 0x00, 0x00})), SitePatch::kRewritten);
  // int3 while the rest is being rewritten is no longer a plain breakpoint.
  EXPECT_EQ(ClassifySitePatch(nop5, Bytes({0xcc, 0x3b, 0x0c, 0x00, 0x00})), SitePatch::kRewritten);
  const std::vector<uint8_t> nop1 = Bytes({0x90});
  EXPECT_EQ(ClassifySitePatch(nop1, Bytes({0xcc})), SitePatch::kBreakpoint);
  EXPECT_EQ(ClassifySitePatch({}, {}), SitePatch::kOriginal);
  EXPECT_STREQ(SitePatchName(SitePatch::kBreakpoint), "int3");
  EXPECT_STREQ(SitePatchName(SitePatch::kRewritten), "rewritten");
  EXPECT_EQ(HexBytes(Bytes({0xe8, 0x0b, 0x00})), "e8 0b 00");
  EXPECT_EQ(HexBytes({}), "");
}

TEST(ProbeSitesKernel, EveryHitIsCountedAndTheSiteIsRestored) {
  absl::StatusOr<UprobePmu> pmu = ProbeUprobePmu();
  if (!pmu.ok()) GTEST_SKIP() << pmu.status();
  constexpr int kCalls = 1000;
  int probed = 0;
  for (const ProbeSite& site : ProbeSites()) {
    SCOPED_TRACE(site.name);
    if (site.function == nullptr) GTEST_SKIP() << "the probe sites are x86-64 instructions";
    absl::StatusOr<CodeLocation> at =
        SelfCodeLocation(reinterpret_cast<const void*>(site.function));
    ASSERT_TRUE(at.ok()) << at.status();
    absl::StatusOr<PerfEvent> probe = OpenUprobe(*pmu, *at, site.retprobe, 0, -1, false);
    if (probe.status().code() == absl::StatusCode::kPermissionDenied) {
      GTEST_SKIP() << probe.status();
    }
    if (absl::IsUnimplemented(probe.status())) {
      // Only the nop10 (cs nopw) is refused, by kernels without its optimization.
      EXPECT_EQ(std::string(site.name), "nop10") << probe.status();
      continue;
    }
    ASSERT_TRUE(probe.ok()) << probe.status();
    ++probed;
    int value = 0;
    for (int i = 0; i < kCalls; ++i) value = site.function(value);
    EXPECT_EQ(value, kCalls);
    absl::StatusOr<uint64_t> count = probe->ReadCount();
    ASSERT_TRUE(count.ok()) << count.status();
    EXPECT_EQ(*count, static_cast<uint64_t>(kCalls));
    SitePatch patch = ClassifySitePatch(site.bytes, SiteBytesNow(site));
    EXPECT_NE(patch, SitePatch::kOriginal) << HexBytes(SiteBytesNow(site));
    probe->Close();
    EXPECT_EQ(ClassifySitePatch(site.bytes, SiteBytesNow(site)), SitePatch::kOriginal)
        << HexBytes(SiteBytesNow(site));
    EXPECT_EQ(site.function(1), 2);
  }
  EXPECT_GE(probed, 6);
}

}  // namespace
}  // namespace perfscale
