// Kernel-backed: every order opens exactly events x CPUs fds, each bound to the CPU its
// entry says (checked with the kernel, not just the entry's field), runs the lifecycle,
// closes them all, and leaves the thread's affinity as it was -- also when affinity is
// refused, when an open fails half-way, and with weak groups.
#include "benchmarks/event_open/event_grid.h"

#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmarks/event_open/cpu_workers.h"
#include "gtest/gtest.h"
#include "lib/capabilities.h"
#include "lib/cpu_set.h"
#include "lib/perf_attr.h"
#include "lib/tracefs.h"

namespace perfscale {
namespace {

constexpr GridOrder kOrders[] = {GridOrder::kEventMajor, GridOrder::kCpuMajor,
                                 GridOrder::kParallel};

std::vector<int> Affinity() {
  absl::StatusOr<CpuMask> mask = GetAffinity();
  return mask.ok() ? mask->Cpus() : std::vector<int>{-1};
}

class EventGridTest : public ::testing::TestWithParam<GridOrder> {
 protected:
  void SetUp() override {
    if (absl::Status s = ProbeCapabilities().RequireSystemWide(); !s.ok()) {
      GTEST_SKIP() << s.message();
    }
    absl::StatusOr<std::vector<int>> online = OnlineCpus();
    ASSERT_TRUE(online.ok()) << online.status();
    // Only CPUs this thread may run on: the kernel check pins the test thread there.
    std::vector<int> allowed = Affinity();
    for (int cpu : *online) {
      if (std::find(allowed.begin(), allowed.end(), cpu) != allowed.end()) cpus_.push_back(cpu);
    }
    ASSERT_FALSE(cpus_.empty());
    if (GetParam() == GridOrder::kParallel) {
      absl::StatusOr<std::unique_ptr<CpuWorkers>> workers = CpuWorkers::Start(cpus_);
      ASSERT_TRUE(workers.ok()) << workers.status();
      workers_ = *std::move(workers);
    }
  }

  GridSpec Spec(const perf_event_attr& attr, int events, int group_size = 1) {
    GridSpec spec;
    spec.events.assign(static_cast<size_t>(events), attr);
    spec.cpus = cpus_;
    spec.group_size = group_size;
    return spec;
  }

  std::vector<int> cpus_;
  std::unique_ptr<CpuWorkers> workers_;
};

perf_event_attr DisabledCpuClock() {
  perf_event_attr attr = SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK);
  attr.disabled = 1;
  return attr;
}

TEST_P(EventGridTest, OpensEventsTimesCpusAndClosesThemAll) {
  const int kEvents = 5;
  int fds_before = *CountOpenFds();
  std::vector<int> mask_before = Affinity();
  EventGrid grid(Spec(DisabledCpuClock(), kEvents), GetParam(), workers_.get());
  ASSERT_TRUE(grid.Open().ok());
  size_t expected = static_cast<size_t>(kEvents) * cpus_.size();
  EXPECT_EQ(grid.open_fds(), expected);
  EXPECT_EQ(grid.entries().size(), expected);
  EXPECT_EQ(*CountOpenFds(), fds_before + static_cast<int>(expected));
  for (size_t c = 0; c < cpus_.size(); ++c) {
    for (int e = 0; e < kEvents; ++e) {
      EXPECT_EQ(grid.entries()[c * kEvents + static_cast<size_t>(e)].cpu, cpus_[c]);
    }
  }
  EXPECT_EQ(Affinity(), mask_before);

  ASSERT_TRUE(grid.Enable().ok());
  absl::StatusOr<uint64_t> sum = grid.Read();
  ASSERT_TRUE(sum.ok()) << sum.status();
  ASSERT_TRUE(grid.Disable().ok());
  grid.Close();
  EXPECT_EQ(grid.open_fds(), 0u);
  EXPECT_EQ(*CountOpenFds(), fds_before);
  EXPECT_EQ(Affinity(), mask_before);
  EXPECT_TRUE(grid.notes().affinity_refused.empty()) << grid.notes().refusal;
}

// The kernel's word for which CPU each fd counts on: raw_syscalls:sys_enter filtered to
// this thread counts this thread's syscalls only on the CPU it runs on. Pinned to CPU X,
// the thread's syscalls must show up on exactly the fds of CPU X.
TEST_P(EventGridTest, EachFdCountsOnItsCpu) {
  if (absl::Status s = ProbeCapabilities().RequireTracefs(); !s.ok()) GTEST_SKIP() << s.message();
  absl::StatusOr<uint64_t> id = TracepointId("raw_syscalls:sys_enter");
  if (absl::IsNotFound(id.status())) GTEST_SKIP() << id.status().message();
  ASSERT_TRUE(id.ok()) << id.status();
  perf_event_attr attr = TracepointAttr(*id);
  attr.disabled = 1;
  const int kEvents = 3;
  EventGrid grid(Spec(attr, kEvents), GetParam(), workers_.get());
  ASSERT_TRUE(grid.Open().ok());
  std::string filter = absl::StrCat("common_pid == ", syscall(SYS_gettid));
  for (const EventGrid::Entry& entry : grid.entries()) {
    ASSERT_EQ(ioctl(entry.event.fd(), PERF_EVENT_IOC_SET_FILTER, filter.c_str()), 0)
        << "PERF_EVENT_IOC_SET_FILTER: " << strerror(errno);
  }
  ASSERT_TRUE(grid.Enable().ok());
  auto counts = [&] {
    std::vector<uint64_t> values;
    for (const EventGrid::Entry& entry : grid.entries()) {
      uint64_t value = 0;
      EXPECT_EQ(read(entry.event.fd(), &value, sizeof(value)), static_cast<ssize_t>(sizeof(value)));
      values.push_back(value);
    }
    return values;
  };
  const uint64_t kSyscalls = 2000;
  for (int cpu : cpus_) {
    absl::StatusOr<ScopedAffinity> pinned = ScopedAffinity::PinTo(cpu);
    ASSERT_TRUE(pinned.ok()) << pinned.status();
    std::vector<uint64_t> before = counts();
    for (uint64_t i = 0; i < kSyscalls; ++i) syscall(SYS_getppid);
    std::vector<uint64_t> after = counts();
    for (size_t i = 0; i < after.size(); ++i) {
      int fd_cpu = grid.entries()[i].cpu;
      uint64_t delta = after[i] - before[i];
      if (fd_cpu == cpu) {
        EXPECT_GE(delta, kSyscalls) << "fd of CPU " << fd_cpu << " while on CPU " << cpu;
      } else {
        EXPECT_EQ(delta, 0u) << "fd of CPU " << fd_cpu << " while on CPU " << cpu;
      }
    }
  }
  ASSERT_TRUE(grid.Disable().ok());
  grid.Close();
}

TEST_P(EventGridTest, FailedOpenHalfWayLeavesNothingOpen) {
  int fds_before = *CountOpenFds();
  std::vector<int> mask_before = Affinity();
  GridSpec spec = Spec(DisabledCpuClock(), 6);
  spec.events[4].type = 0x7fffffff;  // no such PMU: this event fails on every CPU
  EventGrid grid(spec, GetParam(), workers_.get());
  absl::Status opened = grid.Open();
  EXPECT_FALSE(opened.ok());
  EXPECT_EQ(grid.open_fds(), 0u);
  EXPECT_EQ(grid.entries().size(), 0u);
  EXPECT_EQ(*CountOpenFds(), fds_before);
  EXPECT_EQ(Affinity(), mask_before);
  EXPECT_FALSE(grid.Enable().ok());  // nothing to enable
}

TEST_P(EventGridTest, WeakGroupsHoldAndFallBack) {
  const int kEvents = 6;
  const int kGroup = 3;
  {
    EventGrid grid(Spec(DisabledCpuClock(), kEvents, kGroup), GetParam(), workers_.get());
    ASSERT_TRUE(grid.Open().ok());
    EXPECT_EQ(grid.open_fds(), static_cast<size_t>(kEvents) * cpus_.size());
    EXPECT_EQ(grid.notes().weak_group_fallbacks, 0);
    ASSERT_TRUE(grid.Enable().ok());
    ASSERT_TRUE(grid.Read().ok());
    ASSERT_TRUE(grid.Disable().ok());
  }
  // Only a group leader may be pinned: the kernel refuses pinned members with EINVAL,
  // so every group on every CPU falls back to independent events, which it accepts.
  GridSpec spec = Spec(DisabledCpuClock(), kEvents, kGroup);
  for (perf_event_attr& attr : spec.events) attr.pinned = 1;
  int fds_before = *CountOpenFds();
  EventGrid grid(spec, GetParam(), workers_.get());
  absl::Status opened = grid.Open();
  ASSERT_TRUE(opened.ok()) << opened;
  EXPECT_EQ(grid.open_fds(), static_cast<size_t>(kEvents) * cpus_.size());
  EXPECT_EQ(*CountOpenFds(), fds_before + kEvents * static_cast<int>(cpus_.size()));
  EXPECT_EQ(grid.notes().weak_group_fallbacks, (kEvents / kGroup) * static_cast<int>(cpus_.size()));
  grid.Close();
  EXPECT_EQ(*CountOpenFds(), fds_before);
}

INSTANTIATE_TEST_SUITE_P(Orders, EventGridTest, ::testing::ValuesIn(kOrders),
                         [](const ::testing::TestParamInfo<GridOrder>& param_info) {
                           return std::string(GridOrderName(param_info.param));
                         });

// cpu_major where the kernel refuses to move the thread to one CPU: the grid goes on,
// that CPU's fds are still bound to it, the note says so, and the mask is restored.
TEST(EventGridAffinity, RefusedAffinityCarriesOn) {
  if (absl::Status s = ProbeCapabilities().RequireSystemWide(); !s.ok()) {
    GTEST_SKIP() << s.message();
  }
  std::vector<int> cpus = Affinity();
  int refused = cpus.back();
  std::vector<int> mask_before = Affinity();
  int fds_before = *CountOpenFds();
  GridSpec spec;
  spec.events.assign(4, DisabledCpuClock());
  spec.cpus = cpus;
  int refusals = 0;
  EventGrid grid(spec, GridOrder::kCpuMajor, nullptr,
                 [&](int cpu) -> absl::StatusOr<ScopedAffinity> {
                   if (cpu == refused) {
                     ++refusals;
                     return absl::InvalidArgumentError(
                         "sched_setaffinity to CPUs 1: Invalid argument (EINVAL)");
                   }
                   return ScopedAffinity::PinTo(cpu);
                 });
  ASSERT_TRUE(grid.Open().ok());
  EXPECT_EQ(grid.open_fds(), 4 * cpus.size());
  ASSERT_TRUE(grid.Enable().ok());
  ASSERT_TRUE(grid.Read().ok());
  ASSERT_TRUE(grid.Disable().ok());
  grid.Close();
  EXPECT_EQ(refusals, 5);  // once per phase
  EXPECT_EQ(grid.notes().affinity_refused, std::vector<int>{refused});
  EXPECT_NE(grid.notes().refusal.find("EINVAL"), std::string::npos);
  EXPECT_EQ(Affinity(), mask_before);
  EXPECT_EQ(*CountOpenFds(), fds_before);
}

TEST(EventGridOrders, Names) {
  for (GridOrder order : kOrders) EXPECT_EQ(*ParseGridOrder(GridOrderName(order)), order);
  EXPECT_FALSE(ParseGridOrder("cpu-major").ok());
  EXPECT_FALSE(ParseGridOrder("").ok());
}

TEST(EventGridOrders, ParallelWithoutWorkersIsRefused) {
  GridSpec spec;
  spec.events.assign(1, DisabledCpuClock());
  spec.cpus = {0};
  EventGrid grid(spec, GridOrder::kParallel);
  EXPECT_TRUE(absl::IsFailedPrecondition(grid.Open()));
  EXPECT_EQ(grid.open_fds(), 0u);
}

}  // namespace
}  // namespace perfscale
