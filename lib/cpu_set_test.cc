// CPU lists, masks and ScopedAffinity. Parsing is fed what the kernel writes and what it
// never should; the affinity tests really move this thread and check, with
// sched_getcpu() and the kernel's own mask, that it ran there and came back exactly.
#include "lib/cpu_set.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace perfscale {
namespace {

std::vector<int> Parsed(absl::string_view text) {
  absl::StatusOr<std::vector<int>> cpus = ParseCpuList(text);
  EXPECT_TRUE(cpus.ok()) << "'" << text << "': " << cpus.status();
  return cpus.ok() ? *cpus : std::vector<int>{-1};
}

void ExpectRejected(absl::string_view text) {
  absl::StatusOr<std::vector<int>> cpus = ParseCpuList(text);
  EXPECT_FALSE(cpus.ok()) << "'" << text << "' parsed as " << FormatCpuList(*cpus);
  if (!cpus.ok()) {
    EXPECT_EQ(cpus.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(ParseCpuListTest, KernelFormats) {
  EXPECT_EQ(Parsed("0"), (std::vector<int>{0}));
  EXPECT_EQ(Parsed("0-3"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(Parsed("0-3,5,8-9\n"), (std::vector<int>{0, 1, 2, 3, 5, 8, 9}));
  EXPECT_EQ(Parsed("7-7"), (std::vector<int>{7}));
  EXPECT_EQ(Parsed("0,2,4,6"), (std::vector<int>{0, 2, 4, 6}));
}

TEST(ParseCpuListTest, EmptyAndWhitespaceOnlyAreEmptyLists) {
  // The kernel writes "\n" for e.g. an empty isolated set.
  EXPECT_TRUE(Parsed("").empty());
  EXPECT_TRUE(Parsed("\n").empty());
  EXPECT_TRUE(Parsed("  \t\n").empty());
}

TEST(ParseCpuListTest, SurroundingWhitespaceIsIgnored) {
  EXPECT_EQ(Parsed("  0-1 \n"), (std::vector<int>{0, 1}));
}

TEST(ParseCpuListTest, SortsAndDeduplicates) {
  EXPECT_EQ(Parsed("5,1-3,2,1"), (std::vector<int>{1, 2, 3, 5}));
  EXPECT_EQ(Parsed("3,3,3"), (std::vector<int>{3}));
}

TEST(ParseCpuListTest, RejectsGarbage) {
  ExpectRejected("abc");
  ExpectRejected("0-");
  ExpectRejected("-3");
  ExpectRejected(",");
  ExpectRejected("1,,2");
  ExpectRejected("1,");
  ExpectRejected("0-3-5");
  ExpectRejected("0x3");
  ExpectRejected("+1");
  ExpectRejected("1.5");
  ExpectRejected("1 2");
  ExpectRejected("1, 2");  // the kernel never puts spaces inside a list
  ExpectRejected(std::string("1\0002", 3));
}

TEST(ParseCpuListTest, RejectsDescendingRangesNamingThem) {
  absl::StatusOr<std::vector<int>> cpus = ParseCpuList("0,3-1");
  ASSERT_FALSE(cpus.ok());
  EXPECT_TRUE(absl::StrContains(cpus.status().message(), "descending range '3-1'"))
      << cpus.status();
}

TEST(ParseCpuListTest, RejectsHugeNumbersWithoutOverflowOrHugeAllocations) {
  ExpectRejected("65536");
  ExpectRejected("0-65536");
  ExpectRejected("4294967296");
  ExpectRejected("99999999999999999999999999");
  ExpectRejected("0-99999999999999999999999999");
  // The largest accepted CPU number is still a plain value.
  EXPECT_EQ(Parsed("65535"), (std::vector<int>{kMaxCpuNumber}));
}

TEST(FormatCpuListTest, CompressesRuns) {
  EXPECT_EQ(FormatCpuList({}), "");
  EXPECT_EQ(FormatCpuList({0}), "0");
  EXPECT_EQ(FormatCpuList({0, 1, 2, 3, 5, 8, 9}), "0-3,5,8-9");
  EXPECT_EQ(FormatCpuList({9, 8, 0, 2, 1, 1}), "0-2,8-9");
  EXPECT_EQ(FormatCpuList({0, 2, 4}), "0,2,4");
}

TEST(FormatCpuListTest, RoundTripsThroughParse) {
  for (const char* text : {"0", "0-3,5,8-9", "1,3,5-7,100-102", "0-1023"}) {
    EXPECT_EQ(FormatCpuList(Parsed(text)), text);
  }
}

TEST(OnlineCpusTest, ReadsThisMachinesLists) {
  absl::StatusOr<std::vector<int>> online = OnlineCpus();
  ASSERT_TRUE(online.ok()) << online.status();
  absl::StatusOr<std::vector<int>> possible = PossibleCpus();
  ASSERT_TRUE(possible.ok()) << possible.status();
  ASSERT_FALSE(online->empty());
  EXPECT_LE(online->size(), possible->size());
  for (int cpu : *online) {
    EXPECT_NE(std::find(possible->begin(), possible->end(), cpu), possible->end())
        << "online CPU " << cpu << " is not possible";
  }
  EXPECT_EQ(static_cast<long>(online->size()), sysconf(_SC_NPROCESSORS_ONLN));
}

TEST(CpuMaskTest, SetIsSetAndCpus) {
  CpuMask mask(10);
  EXPECT_TRUE(mask.Cpus().empty());
  mask.Set(0);
  mask.Set(3);
  mask.Set(10);
  mask.Set(3);
  EXPECT_TRUE(mask.IsSet(3));
  EXPECT_FALSE(mask.IsSet(4));
  EXPECT_EQ(mask.Cpus(), (std::vector<int>{0, 3, 10}));
}

TEST(CpuMaskTest, OfHoldsExactlyTheListAndRefusesBadCpus) {
  absl::StatusOr<CpuMask> mask = CpuMask::Of({5, 1, 5});
  ASSERT_TRUE(mask.ok()) << mask.status();
  EXPECT_EQ(mask->Cpus(), (std::vector<int>{1, 5}));
  EXPECT_TRUE(CpuMask::Of({}).ok());
  EXPECT_EQ(CpuMask::Of({0, -1}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CpuMask::Of({kMaxCpuNumber + 1}).status().message(), "CPU 65536 out of range");
}

TEST(CpuMaskTest, OutOfRangeIsIgnoredNotWrittenPastTheEnd) {
  CpuMask mask(7);
  mask.Set(-1);
  mask.Set(8);
  mask.Set(100000);
  EXPECT_TRUE(mask.Cpus().empty());
  EXPECT_FALSE(mask.IsSet(-1));
  EXPECT_FALSE(mask.IsSet(100000));
}

TEST(CpuMaskTest, SizedBeyondGlibcsFixed1024Bits) {
  CpuMask mask(4095);
  EXPECT_GE(mask.size_bytes(), 4096u / 8);
  mask.Set(4095);
  EXPECT_TRUE(mask.IsSet(4095));
  EXPECT_EQ(mask.Cpus(), (std::vector<int>{4095}));
}

TEST(CpuMaskTest, CopiesAreIndependent) {
  CpuMask a(63);
  a.Set(1);
  CpuMask b(a);
  b.Set(2);
  EXPECT_EQ(a.Cpus(), (std::vector<int>{1}));
  EXPECT_EQ(b.Cpus(), (std::vector<int>{1, 2}));
  CpuMask c(2000);
  c.Set(1999);
  c = a;
  EXPECT_EQ(c.Cpus(), (std::vector<int>{1}));
  EXPECT_EQ(c.size_bytes(), a.size_bytes());
  CpuMask& alias = c;
  c = alias;  // self-assignment keeps the contents
  EXPECT_EQ(c.Cpus(), (std::vector<int>{1}));
}

// The CPUs this thread may run on now, as the kernel sees them.
std::vector<int> CurrentAffinity() {
  absl::StatusOr<CpuMask> mask = GetAffinity();
  EXPECT_TRUE(mask.ok()) << mask.status();
  return mask.ok() ? mask->Cpus() : std::vector<int>{};
}

TEST(AffinityTest, GetAffinityIncludesTheCpuWeRunOn) {
  std::vector<int> allowed = CurrentAffinity();
  ASSERT_FALSE(allowed.empty());
  int cpu = sched_getcpu();
  EXPECT_NE(std::find(allowed.begin(), allowed.end(), cpu), allowed.end());
}

TEST(AffinityTest, SetAffinityRejectsOutOfRangeCpus) {
  std::vector<int> before = CurrentAffinity();
  EXPECT_EQ(SetAffinity(std::vector<int>{-1}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SetAffinity(std::vector<int>{kMaxCpuNumber + 1}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CurrentAffinity(), before);
}

TEST(ScopedAffinityTest, PinsToEachAllowedCpuAndRestoresExactly) {
  std::vector<int> before = CurrentAffinity();
  ASSERT_FALSE(before.empty());
  for (int cpu : before) {
    {
      absl::StatusOr<ScopedAffinity> pin = ScopedAffinity::PinTo(cpu);
      ASSERT_TRUE(pin.ok()) << pin.status();
      EXPECT_EQ(CurrentAffinity(), std::vector<int>{cpu});
      // sched_setaffinity migrates the caller before returning.
      EXPECT_EQ(sched_getcpu(), cpu);
    }
    EXPECT_EQ(CurrentAffinity(), before);
  }
}

TEST(ScopedAffinityTest, RestoresARestrictedMaskNotAllCpus) {
  std::vector<int> allowed = CurrentAffinity();
  if (allowed.size() < 2) GTEST_SKIP() << "needs 2 CPUs in this thread's affinity";
  absl::StatusOr<ScopedAffinity> outer = ScopedAffinity::PinTo(allowed.back());
  ASSERT_TRUE(outer.ok()) << outer.status();
  {
    absl::StatusOr<ScopedAffinity> inner = ScopedAffinity::PinTo(allowed.front());
    ASSERT_TRUE(inner.ok()) << inner.status();
    EXPECT_EQ(sched_getcpu(), allowed.front());
  }
  EXPECT_EQ(CurrentAffinity(), std::vector<int>{allowed.back()});
  EXPECT_EQ(sched_getcpu(), allowed.back());
  ASSERT_TRUE(outer->Restore().ok());
  EXPECT_EQ(CurrentAffinity(), allowed);
}

TEST(ScopedAffinityTest, PinsToASetOfCpus) {
  std::vector<int> before = CurrentAffinity();
  {
    absl::StatusOr<ScopedAffinity> pin = ScopedAffinity::PinTo(before);
    ASSERT_TRUE(pin.ok()) << pin.status();
    EXPECT_EQ(CurrentAffinity(), before);
  }
  EXPECT_EQ(CurrentAffinity(), before);
}

TEST(ScopedAffinityTest, RestoreIsIdempotentAndDestructorThenDoesNothing) {
  std::vector<int> before = CurrentAffinity();
  {
    absl::StatusOr<ScopedAffinity> pin = ScopedAffinity::PinTo(before.front());
    ASSERT_TRUE(pin.ok()) << pin.status();
    EXPECT_TRUE(pin->Restore().ok());
    EXPECT_EQ(CurrentAffinity(), before);
    // Once restored, the guard must not undo a change made after it.
    ASSERT_TRUE(SetAffinity(std::vector<int>{before.back()}).ok());
    EXPECT_TRUE(pin->Restore().ok());
    EXPECT_EQ(CurrentAffinity(), std::vector<int>{before.back()});
  }
  EXPECT_EQ(CurrentAffinity(), std::vector<int>{before.back()});
  ASSERT_TRUE(SetAffinity(before).ok());
  EXPECT_EQ(CurrentAffinity(), before);
}

TEST(ScopedAffinityTest, MoveConstructionTransfersTheRestore) {
  std::vector<int> before = CurrentAffinity();
  {
    absl::StatusOr<ScopedAffinity> pin = ScopedAffinity::PinTo(before.front());
    ASSERT_TRUE(pin.ok()) << pin.status();
    {
      ScopedAffinity moved(*std::move(pin));
      {
        // The moved-from guard is destroyed first and must not restore.
        absl::StatusOr<ScopedAffinity> gone = std::move(pin);
      }
      EXPECT_EQ(CurrentAffinity(), std::vector<int>{before.front()});
    }
    EXPECT_EQ(CurrentAffinity(), before);
  }
  EXPECT_EQ(CurrentAffinity(), before);
}

TEST(ScopedAffinityTest, MoveAssignmentRestoresOnlyOnce) {
  std::vector<int> before = CurrentAffinity();
  {
    absl::StatusOr<ScopedAffinity> first = ScopedAffinity::PinTo(before.front());
    ASSERT_TRUE(first.ok()) << first.status();
    ASSERT_TRUE(first->Restore().ok());
    absl::StatusOr<ScopedAffinity> second = ScopedAffinity::PinTo(before.back());
    ASSERT_TRUE(second.ok()) << second.status();
    *first = *std::move(second);
    EXPECT_EQ(CurrentAffinity(), std::vector<int>{before.back()});
    EXPECT_EQ(sched_getcpu(), before.back());
  }
  EXPECT_EQ(CurrentAffinity(), before);
}

TEST(ScopedAffinityTest, FailedPinLeavesAffinityUntouched) {
  std::vector<int> before = CurrentAffinity();
  absl::StatusOr<std::vector<int>> possible = PossibleCpus();
  ASSERT_TRUE(possible.ok()) << possible.status();
  // A CPU the kernel cannot have: sched_setaffinity says EINVAL.
  int impossible = possible->back() + 1;
  absl::StatusOr<ScopedAffinity> pin = ScopedAffinity::PinTo(impossible);
  ASSERT_FALSE(pin.ok());
  EXPECT_EQ(pin.status().code(), absl::StatusCode::kInvalidArgument) << pin.status();
  EXPECT_TRUE(absl::StrContains(pin.status().message(), "sched_setaffinity"));
  EXPECT_EQ(CurrentAffinity(), before);

  EXPECT_FALSE(ScopedAffinity::PinTo(std::vector<int>{}).ok());
  EXPECT_FALSE(ScopedAffinity::PinTo(-1).ok());
  EXPECT_EQ(CurrentAffinity(), before);
}

}  // namespace
}  // namespace perfscale
