// The format parser and the PMU probe on fake sysfs trees; then real uprobes on this
// test's own functions: a uprobe and a uretprobe count every call exactly, calls from
// threads created after the open included, and a probe on a function never called
// counts 0 (why the benchmark checks its count). The kernel part needs the uprobe PMU
// and CAP_PERFMON (root): it skips with the reason otherwise.
#include "benchmarks/uprobe/uprobe_pmu.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/notification.h"
#include "benchmarks/uprobe/elf_offset.h"
#include "gtest/gtest.h"
#include "lib/perf_event.h"

extern "C" __attribute__((noinline, used)) int perfscale_uprobe_test_hit(int x) {
  asm volatile("" : "+r"(x));
  return x + 1;
}
extern "C" __attribute__((noinline, used)) int perfscale_uprobe_test_never(int x) {
  asm volatile("" : "+r"(x));
  return x + 2;
}

namespace perfscale {
namespace {

TEST(ParseConfigBit, OneBitOfConfigOnly) {
  EXPECT_EQ(*ParseConfigBit("config:0\n"), 0);
  EXPECT_EQ(*ParseConfigBit("config:63"), 63);
  for (const char* bad : {"", "config:", "config:32-63", "config1:0", "config:64", "config:+1",
                          "config:-1", "retprobe", "config: 1"}) {
    EXPECT_EQ(ParseConfigBit(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

std::string MakeFakePmu(const std::string& type, const std::string* retprobe) {
  std::string dir =
      std::string(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp") + "/uprobe_pmu_XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) return "";
  std::ofstream(dir + "/type") << type;
  if (retprobe != nullptr) {
    mkdir((dir + "/format").c_str(), 0755);
    std::ofstream(dir + "/format/retprobe") << *retprobe;
  }
  return dir;
}

TEST(ProbeUprobePmu, ReadsTypeAndRetprobeBit) {
  std::string bit = "config:3\n";
  absl::StatusOr<UprobePmu> pmu = ProbeUprobePmu(MakeFakePmu("9\n", &bit));
  ASSERT_TRUE(pmu.ok()) << pmu.status();
  EXPECT_EQ(pmu->type, 9u);
  EXPECT_EQ(pmu->retprobe_bit, 3);
  CodeLocation at{"/bin/true", 0x1234};
  perf_event_attr attr = UprobeAttr(*pmu, at, /*retprobe=*/true, /*inherit=*/true);
  EXPECT_EQ(attr.type, 9u);
  EXPECT_EQ(attr.config, 8u);
  EXPECT_EQ(attr.config2, 0x1234u);
  EXPECT_STREQ(reinterpret_cast<const char*>(attr.config1), "/bin/true");
  EXPECT_EQ(attr.inherit, 1u);
  EXPECT_EQ(UprobeAttr(*pmu, at, false, false).config, 0u);
}

TEST(ProbeUprobePmu, MissingOrMalformedSaysWhat) {
  absl::StatusOr<UprobePmu> none = ProbeUprobePmu("/nonexistent/uprobe");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("no uprobe PMU"), absl::string_view::npos);
  EXPECT_EQ(ProbeUprobePmu(MakeFakePmu("9", nullptr)).status().code(), absl::StatusCode::kNotFound);
  std::string range = "config:0-1";
  EXPECT_EQ(ProbeUprobePmu(MakeFakePmu("9", &range)).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::string bit = "config:0";
  EXPECT_EQ(ProbeUprobePmu(MakeFakePmu("uprobe", &bit)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Opens a probe on `function` or skips the test with the reason.
#define OPEN_OR_SKIP(var, function, retprobe)                                               \
  absl::StatusOr<UprobePmu> var##_pmu = ProbeUprobePmu();                                   \
  if (!var##_pmu.ok()) GTEST_SKIP() << var##_pmu.status();                                  \
  absl::StatusOr<CodeLocation> var##_at =                                                   \
      SelfCodeLocation(reinterpret_cast<const void*>(&function));                           \
  ASSERT_TRUE(var##_at.ok()) << var##_at.status();                                          \
  absl::StatusOr<PerfEvent> var = OpenUprobe(*var##_pmu, *var##_at, retprobe, 0, -1, true); \
  if (var.status().code() == absl::StatusCode::kPermissionDenied) {                         \
    GTEST_SKIP() << var.status();                                                           \
  }                                                                                         \
  ASSERT_TRUE(var.ok()) << var.status();

TEST(UprobeKernel, CountsEveryCallExactly) {
  OPEN_OR_SKIP(entry, perfscale_uprobe_test_hit, false);
  OPEN_OR_SKIP(exit, perfscale_uprobe_test_hit, true);
  OPEN_OR_SKIP(never, perfscale_uprobe_test_never, false);
  int value = 0;
  for (int i = 0; i < 1000; ++i) value = perfscale_uprobe_test_hit(value);
  EXPECT_EQ(value, 1000);
  EXPECT_EQ(*entry->ReadCount(), 1000u);
  EXPECT_EQ(*exit->ReadCount(), 1000u);
  EXPECT_EQ(*never->ReadCount(), 0u);
}

// Read while the threads are alive, as the benchmark does: pthread_join returns when the
// exiting thread clears its tid (exit_mm), before the kernel folds its inherited event
// into the parent (perf_event_exit_task), and a read in between missed a whole thread's
// 250 hits here once (750 of 1000).
TEST(UprobeKernel, ThreadsCreatedAfterTheOpenAreCounted) {
  OPEN_OR_SKIP(entry, perfscale_uprobe_test_hit, false);
  absl::BlockingCounter called(4);
  absl::Notification read;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      int value = 0;
      for (int i = 0; i < 250; ++i) value = perfscale_uprobe_test_hit(value);
      EXPECT_EQ(value, 250);
      called.DecrementCount();
      read.WaitForNotification();
    });
  }
  called.Wait();
  absl::StatusOr<uint64_t> count = entry->ReadCount();
  read.Notify();
  for (std::thread& thread : threads) thread.join();
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, 1000u);
}

}  // namespace
}  // namespace perfscale
