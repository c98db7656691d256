// PerfEventSet on the real kernel: one cpu-clock event per online CPU that really counts,
// and the promise that a failed open part-way closes everything already opened.
#include "benchmarks/event_open/perf_event_set.h"

#include <unistd.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "lib/capabilities.h"
#include "lib/cpu_set.h"
#include "lib/errno_status.h"
#include "lib/perf_attr.h"
#include "lib/perf_event.h"

namespace perfscale {
namespace {

int OpenFds() {
  absl::StatusOr<int> fds = CountOpenFds();
  EXPECT_TRUE(fds.ok()) << fds.status();
  return fds.ok() ? *fds : -1;
}

class PerCpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (absl::Status s = ProbeCapabilities().RequireSystemWide(); !s.ok()) {
      GTEST_SKIP() << s.message();
    }
    absl::StatusOr<std::vector<int>> online = OnlineCpus();
    ASSERT_TRUE(online.ok()) << online.status();
    online_ = *online;
    ASSERT_FALSE(online_.empty());
  }
  std::vector<int> online_;
};

TEST_F(PerCpuTest, CpuClockOnEveryOnlineCpuCounts) {
  int fds_before = OpenFds();
  {
    absl::StatusOr<PerfEventSet> set =
        PerfEventSet::OpenPerCpu(SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK), online_);
    ASSERT_TRUE(set.ok()) << set.status();
    ASSERT_EQ(set->size(), online_.size());
    EXPECT_EQ(OpenFds(), fds_before + static_cast<int>(online_.size()));
    for (size_t i = 0; i < online_.size(); ++i) {
      EXPECT_EQ(set->entries()[i].cpu, online_[i]);
      EXPECT_TRUE(set->entries()[i].event.valid());
    }
    usleep(20000);
    for (PerfEventSet::Entry& entry : set->entries()) {
      absl::StatusOr<uint64_t> ns = entry.event.ReadCount();
      ASSERT_TRUE(ns.ok()) << "CPU " << entry.cpu << ": " << ns.status();
      // A per-CPU cpu-clock runs whether the CPU is busy or idle: ~20 ms by now.
      EXPECT_GT(*ns, 1000000u) << "CPU " << entry.cpu;
    }
    ASSERT_TRUE(set->DisableAll().ok());
    std::vector<uint64_t> frozen;
    for (PerfEventSet::Entry& entry : set->entries()) frozen.push_back(*entry.event.ReadCount());
    usleep(10000);
    for (size_t i = 0; i < set->size(); ++i) {
      EXPECT_EQ(*set->entries()[i].event.ReadCount(), frozen[i])
          << "disabled event on CPU " << set->entries()[i].cpu << " kept counting";
    }
    ASSERT_TRUE(set->EnableAll().ok());
    usleep(10000);
    for (size_t i = 0; i < set->size(); ++i) {
      EXPECT_GT(*set->entries()[i].event.ReadCount(), frozen[i]);
    }
  }
  EXPECT_EQ(OpenFds(), fds_before);
}

TEST_F(PerCpuTest, FailedOpenOnANonexistentCpuClosesEverything) {
  absl::StatusOr<std::vector<int>> possible = PossibleCpus();
  ASSERT_TRUE(possible.ok()) << possible.status();
  int fds_before = OpenFds();
  std::vector<int> cpus = online_;
  cpus.push_back(possible->back() + 1);  // opened last, after every real CPU succeeded
  absl::StatusOr<PerfEventSet> set =
      PerfEventSet::OpenPerCpu(SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK), cpus);
  ASSERT_FALSE(set.ok());
  EXPECT_TRUE(absl::StrContains(set.status().message(), absl::StrCat("cpu=", possible->back() + 1)))
      << set.status();
  EXPECT_EQ(OpenFds(), fds_before);
}

TEST_F(PerCpuTest, FailedOpenEmptiesAnExistingSet) {
  int fds_before = OpenFds();
  PerfEventSet set;
  for (int cpu : online_) {
    ASSERT_TRUE(set.Open(SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK), -1, cpu).ok());
  }
  EXPECT_EQ(OpenFds(), fds_before + static_cast<int>(online_.size()));
  EXPECT_FALSE(set.Open(SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK), -1, 1 << 20).ok());
  EXPECT_EQ(set.size(), 0u);
  EXPECT_EQ(OpenFds(), fds_before);
}

TEST(PerfEventSetTest, EmptyCpuListIsAnEmptySet) {
  absl::StatusOr<PerfEventSet> set =
      PerfEventSet::OpenPerCpu(SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK), {});
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->size(), 0u);
  EXPECT_TRUE(set->EnableAll().ok());
  EXPECT_TRUE(set->DisableAll().ok());
}

TEST(PerfEventSetTest, AddAdoptsAndCloseAllReleases) {
  int fds_before = OpenFds();
  PerfEventSet set;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<PerfEvent> event = PerfEvent::Open(SoftwareAttr(PERF_COUNT_SW_DUMMY), 0, -1);
    if (!event.ok() && IsEnvironmentLimitation(event.status())) GTEST_SKIP() << event.status();
    ASSERT_TRUE(event.ok()) << event.status();
    set.Add(*std::move(event), -1);
  }
  EXPECT_EQ(set.size(), 3u);
  EXPECT_EQ(OpenFds(), fds_before + 3);
  PerfEventSet moved = std::move(set);
  EXPECT_EQ(moved.size(), 3u);
  EXPECT_EQ(OpenFds(), fds_before + 3);
  moved.CloseAll();
  EXPECT_EQ(moved.size(), 0u);
  EXPECT_EQ(OpenFds(), fds_before);
}

TEST(PerfEventSetTest, EnableAllReportsAFailingMember) {
  PerfEventSet set;
  set.Add(PerfEvent(), 0);  // never opened: its ioctl fails with EBADF
  EXPECT_EQ(set.EnableAll().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(set.DisableAll().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace perfscale
