// Self and children shares from hand-made callchains, as perf report --children counts
// them.
#include "benchmarks/harness/profile_summary.h"

#include <linux/perf_event.h>

#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace perfscale {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kKernel = static_cast<uint64_t>(PERF_CONTEXT_KERNEL);
constexpr uint64_t kUser = static_cast<uint64_t>(PERF_CONTEXT_USER);

// Addresses name themselves: 0xk... kernel, small ones user; 0 is outside every object.
ResolvedFrame FakeResolve(uint64_t address, bool kernel) {
  static const std::map<uint64_t, std::string> names = {{0xffffffff00000001, "osq_lock"},
                                                        {0xffffffff00000002, "mutex_lock"},
                                                        {0xffffffff00000003, "do_syscall_64"},
                                                        {0x1001, "ioctl"},
                                                        {0x1002, "BM_Enable"},
                                                        {0x1003, "main"},
                                                        {0x1004, "recurse"}};
  auto it = names.find(address);
  if (address == 0) return {kUnknownSymbol, kUnknownDso};
  return {it == names.end() ? kUnknownSymbol : it->second, kernel ? "[kernel.kallsyms]" : "bin"};
}

const ProfileEntry* Entry(const ProfileSummary& summary, const std::string& symbol) {
  for (const ProfileEntry& e : summary.entries) {
    if (e.frame.symbol == symbol) return &e;
  }
  return nullptr;
}

TEST(ResolveChains, SplitsAtContextMarkers) {
  std::map<std::vector<uint64_t>, uint64_t> chains = {
      {{kKernel, 0xffffffff00000001, 0xffffffff00000003, kUser, 0x1001, 0x1003}, 2}};
  std::vector<ResolvedChain> resolved = ResolveChains(chains, FakeResolve);
  ASSERT_EQ(resolved.size(), 1u);
  EXPECT_EQ(resolved[0].count, 2u);
  ASSERT_EQ(resolved[0].frames.size(), 4u);
  EXPECT_EQ(resolved[0].frames[0].symbol, "osq_lock");
  EXPECT_TRUE(resolved[0].frames[0].kernel);
  EXPECT_EQ(resolved[0].frames[2].symbol, "ioctl");
  EXPECT_FALSE(resolved[0].frames[2].kernel);
}

TEST(ResolveChains, WithoutMarkersClassifiesByAddressAndDropsWalkDebris) {
  std::map<std::vector<uint64_t>, uint64_t> chains = {
      {{0x1001, 0, 0x1003}, 1}, {{0xffffffff00000002}, 1}, {{0}, 1}};
  std::vector<ResolvedChain> resolved = ResolveChains(chains, FakeResolve);
  ASSERT_EQ(resolved.size(), 3u);
  // Sorted by raw chain: {0}, {0x1001, 0, 0x1003}, {0xffff...}.
  EXPECT_EQ(resolved[0].frames.size(), 1u);  // an unknown leaf is still a sample
  ASSERT_EQ(resolved[1].frames.size(), 2u);  // the unknown caller is dropped
  EXPECT_EQ(resolved[1].frames[1].symbol, "main");
  EXPECT_TRUE(resolved[2].frames[0].kernel);
}

TEST(Summarize, SelfIsTheLeafChildrenIsAnywhereOncePerSample) {
  std::map<std::vector<uint64_t>, uint64_t> chains = {
      // 6 samples spinning in osq_lock under mutex_lock, from BM_Enable.
      {{kKernel, 0xffffffff00000001, 0xffffffff00000002, 0xffffffff00000003, kUser, 0x1001, 0x1002,
        0x1003},
       6},
      // 3 in mutex_lock itself.
      {{kKernel, 0xffffffff00000002, 0xffffffff00000003, kUser, 0x1001, 0x1002, 0x1003}, 3},
      // 1 in user code that recurses: counted once in children.
      {{kUser, 0x1004, 0x1004, 0x1004, 0x1003}, 1}};
  ProfileSummary summary = Summarize(ResolveChains(chains, FakeResolve), 10);
  EXPECT_EQ(summary.samples, 10u);
  const ProfileEntry* osq = Entry(summary, "osq_lock");
  ASSERT_NE(osq, nullptr);
  EXPECT_EQ(osq->self, 6u);
  EXPECT_EQ(osq->children, 6u);
  EXPECT_DOUBLE_EQ(summary.SelfShare(*osq), 0.6);
  const ProfileEntry* mutex = Entry(summary, "mutex_lock");
  EXPECT_EQ(mutex->self, 3u);
  EXPECT_EQ(mutex->children, 9u);
  const ProfileEntry* recurse = Entry(summary, "recurse");
  EXPECT_EQ(recurse->self, 1u);
  EXPECT_EQ(recurse->children, 1u);
  const ProfileEntry* main_entry = Entry(summary, "main");
  EXPECT_EQ(main_entry->self, 0u);
  EXPECT_DOUBLE_EQ(summary.ChildrenShare(*main_entry), 1.0);
  // Sorted by children.
  EXPECT_EQ(summary.entries.front().frame.symbol, "main");
  for (size_t i = 1; i < summary.entries.size(); ++i) {
    EXPECT_GE(summary.entries[i - 1].children, summary.entries[i].children);
  }
}

TEST(Summarize, KeepsTopBySelfAndByChildren) {
  std::map<std::vector<uint64_t>, uint64_t> chains = {
      {{kKernel, 0xffffffff00000001, 0xffffffff00000002, kUser, 0x1003}, 5},
      {{kUser, 0x1001, 0x1003}, 1}};
  ProfileSummary summary = Summarize(ResolveChains(chains, FakeResolve), 1);
  // Top 1 by children is main, top 1 by self is osq_lock.
  ASSERT_EQ(summary.entries.size(), 2u);
  EXPECT_EQ(summary.entries[0].frame.symbol, "main");
  EXPECT_EQ(summary.entries[1].frame.symbol, "osq_lock");
}

TEST(FormatAndJson, LookLikePerfReportAndParse) {
  std::map<std::vector<uint64_t>, uint64_t> chains = {
      {{kKernel, 0xffffffff00000001, kUser, 0x1003}, 3}, {{kUser, 0x1003}, 1}};
  ProfileSummary summary = Summarize(ResolveChains(chains, FakeResolve), 10);
  std::string text = FormatProfile(summary, 5);
  EXPECT_THAT(text, HasSubstr(" 75.00%  [k] osq_lock"));
  EXPECT_THAT(text, HasSubstr(" 25.00%  [.] main"));        // self: the user-only sample
  EXPECT_THAT(text, ::testing::Not(HasSubstr("100.00%")));  // children: kernel frames only
  std::string json = ProfileSummaryJson(summary);
  EXPECT_THAT(json, HasSubstr("\"symbol\": \"osq_lock\", \"dso\": \"[kernel.kallsyms]\", "
                              "\"kernel\": true, \"self\": 0.750000, \"children\": 0.750000"));
}

}  // namespace
}  // namespace perfscale
