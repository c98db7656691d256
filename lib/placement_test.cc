// Placement names decide where threads are pinned; a wrong CPU silently changes what a
// benchmark measures (local calls instead of IPIs), so each name is pinned down here
// against the calling thread's real affinity.
#include "lib/placement.h"

#include "gtest/gtest.h"
#include "lib/cpu_set.h"

namespace perfscale {
namespace {

std::vector<int> AllowedCpus() {
  absl::StatusOr<CpuMask> mask = GetAffinity();
  EXPECT_TRUE(mask.ok()) << mask.status();
  return mask.ok() ? mask->Cpus() : std::vector<int>{};
}

TEST(PlacementTest, UnpinnedPinsNothing) {
  absl::StatusOr<Placement> placement = ResolvePlacement("unpinned");
  ASSERT_TRUE(placement.ok()) << placement.status();
  EXPECT_TRUE(placement->driver.empty());
  EXPECT_TRUE(placement->others.empty());
}

TEST(PlacementTest, SameCpuPutsEveryoneOnTheFirstAllowedCpu) {
  std::vector<int> cpus = AllowedCpus();
  ASSERT_FALSE(cpus.empty());
  absl::StatusOr<Placement> placement = ResolvePlacement("same_cpu");
  ASSERT_TRUE(placement.ok()) << placement.status();
  EXPECT_EQ(placement->driver, std::vector<int>{cpus[0]});
  EXPECT_EQ(placement->others, std::vector<int>{cpus[0]});
}

TEST(PlacementTest, OtherCpusKeepsTheDriversCpuForItself) {
  std::vector<int> cpus = AllowedCpus();
  absl::StatusOr<Placement> placement = ResolvePlacement("other_cpus");
  if (cpus.size() < 2) {
    EXPECT_EQ(placement.status().code(), absl::StatusCode::kFailedPrecondition);
    return;
  }
  ASSERT_TRUE(placement.ok()) << placement.status();
  EXPECT_EQ(placement->driver, std::vector<int>{cpus[0]});
  EXPECT_EQ(placement->others, std::vector<int>(cpus.begin() + 1, cpus.end()));
}

TEST(PlacementTest, OtherCpusOnOneCpuSaysWhy) {
  absl::StatusOr<ScopedAffinity> pin = ScopedAffinity::PinTo(AllowedCpus().front());
  ASSERT_TRUE(pin.ok()) << pin.status();
  absl::StatusOr<Placement> placement = ResolvePlacement("other_cpus");
  EXPECT_EQ(placement.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(placement.status().message().find("at least 2 CPUs"), absl::string_view::npos);
}

TEST(PlacementTest, UnknownNameIsRejected) {
  EXPECT_EQ(ResolvePlacement("nearby").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolvePlacement("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PlacementTest, PinDriverPinsAndRestoresOrLeavesAlone) {
  std::vector<int> before = AllowedCpus();
  absl::StatusOr<std::unique_ptr<ScopedAffinity>> none = PinDriver(Placement{});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(*none, nullptr);
  EXPECT_EQ(AllowedCpus(), before);
  {
    absl::StatusOr<Placement> same = ResolvePlacement("same_cpu");
    ASSERT_TRUE(same.ok()) << same.status();
    absl::StatusOr<std::unique_ptr<ScopedAffinity>> pinned = PinDriver(*same);
    ASSERT_TRUE(pinned.ok()) << pinned.status();
    EXPECT_NE(*pinned, nullptr);
    EXPECT_EQ(AllowedCpus(), same->driver);
  }
  EXPECT_EQ(AllowedCpus(), before);
}

TEST(PlacementTest, NamesListsEveryAcceptedName) {
  for (const std::string& name : PlacementNames()) {
    EXPECT_NE(ResolvePlacement(name).status().code(), absl::StatusCode::kInvalidArgument) << name;
  }
}

}  // namespace
}  // namespace perfscale
