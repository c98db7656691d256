#include "benchmarks/harness/profile_summary.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "benchmarks/harness/json_string.h"

namespace perfscale {
namespace {

using FrameKey = std::tuple<std::string, std::string, bool>;

FrameKey KeyOf(const ProfileFrame& frame) { return {frame.symbol, frame.dso, frame.kernel}; }

constexpr size_t kSymbolColumn = 60;

bool InKernelHalf(uint64_t address) { return (address >> 63) != 0; }

}  // namespace

std::vector<ResolvedChain> ResolveChains(
    const std::map<std::vector<uint64_t>, uint64_t>& chains,
    const std::function<ResolvedFrame(uint64_t address, bool kernel)>& resolve) {
  // Sorted by the raw chain, so the output does not depend on the hash order.
  std::map<std::vector<uint64_t>, uint64_t> ordered(chains.begin(), chains.end());
  std::vector<ResolvedChain> resolved;
  resolved.reserve(ordered.size());
  for (const auto& [chain, count] : ordered) {
    ResolvedChain out;
    out.count = count;
    int context = -1;  // -1: no marker seen yet; else 1 kernel, 0 user
    for (uint64_t address : chain) {
      if (address >= static_cast<uint64_t>(PERF_CONTEXT_MAX)) {
        if (address == static_cast<uint64_t>(PERF_CONTEXT_KERNEL)) {
          context = 1;
        } else if (address == static_cast<uint64_t>(PERF_CONTEXT_USER)) {
          context = 0;
        } else {
          context = 2;  // hypervisor or guest: nothing we can resolve
        }
        continue;
      }
      if (context == 2) continue;
      bool kernel = context == -1 ? InKernelHalf(address) : context == 1;
      ResolvedFrame frame = resolve(address, kernel);
      // A caller outside every executable mapping is debris of the frame-pointer walk
      // through code built without frame pointers (Debian's libc), not a return address.
      if (!kernel && !out.frames.empty() && frame.dso == kUnknownDso) continue;
      out.frames.push_back(ProfileFrame{std::move(frame.symbol), std::move(frame.dso), kernel});
    }
    if (!out.frames.empty()) resolved.push_back(std::move(out));
  }
  return resolved;
}

double ProfileSummary::SelfShare(const ProfileEntry& e) const {
  return samples == 0 ? 0 : static_cast<double>(e.self) / static_cast<double>(samples);
}

double ProfileSummary::ChildrenShare(const ProfileEntry& e) const {
  return samples == 0 ? 0 : static_cast<double>(e.children) / static_cast<double>(samples);
}

ProfileSummary Summarize(const std::vector<ResolvedChain>& chains, size_t top) {
  ProfileSummary summary;
  std::map<FrameKey, ProfileEntry> entries;
  for (const ResolvedChain& chain : chains) {
    if (chain.frames.empty()) continue;
    summary.samples += chain.count;
    ProfileEntry& leaf = entries[KeyOf(chain.frames.front())];
    leaf.frame = chain.frames.front();
    leaf.self += chain.count;
    std::set<FrameKey> seen;  // a recursive function counts once per sample
    for (const ProfileFrame& frame : chain.frames) {
      FrameKey key = KeyOf(frame);
      if (!seen.insert(key).second) continue;
      ProfileEntry& entry = entries[key];
      entry.frame = frame;
      entry.children += chain.count;
    }
  }
  std::vector<ProfileEntry> all;
  all.reserve(entries.size());
  for (auto& [key, entry] : entries) all.push_back(std::move(entry));
  auto by_name = [](const ProfileEntry& a, const ProfileEntry& b) {
    return KeyOf(a.frame) < KeyOf(b.frame);
  };
  auto by_children = [&](const ProfileEntry& a, const ProfileEntry& b) {
    if (a.children != b.children) return a.children > b.children;
    if (a.self != b.self) return a.self > b.self;
    return by_name(a, b);
  };
  std::set<FrameKey> keep;
  std::vector<ProfileEntry> sorted = all;
  std::sort(sorted.begin(), sorted.end(), [&](const ProfileEntry& a, const ProfileEntry& b) {
    if (a.self != b.self) return a.self > b.self;
    return by_children(a, b);
  });
  for (size_t i = 0; i < sorted.size() && i < top && sorted[i].self > 0; ++i) {
    keep.insert(KeyOf(sorted[i].frame));
  }
  std::sort(all.begin(), all.end(), by_children);
  for (size_t i = 0; i < all.size() && i < top; ++i) keep.insert(KeyOf(all[i].frame));
  for (ProfileEntry& entry : all) {
    if (keep.count(KeyOf(entry.frame)) > 0) summary.entries.push_back(std::move(entry));
  }
  return summary;
}

std::string FormatProfile(const ProfileSummary& summary, size_t lines) {
  std::string out = absl::StrCat("  ", summary.samples, " samples\n");
  auto line = [&](const ProfileEntry& e, double share) {
    // Template instantiations run to hundreds of characters; the JSON has them whole.
    std::string symbol = e.frame.symbol.size() <= kSymbolColumn
                             ? e.frame.symbol
                             : e.frame.symbol.substr(0, kSymbolColumn - 3) + "...";
    absl::StrAppend(
        &out, absl::StrFormat("  %6.2f%%  [%c] %-*s %s\n", 100 * share, e.frame.kernel ? 'k' : '.',
                              static_cast<int>(kSymbolColumn), symbol, e.frame.dso));
  };
  std::vector<const ProfileEntry*> by_self;
  for (const ProfileEntry& e : summary.entries) {
    if (e.self > 0) by_self.push_back(&e);
  }
  std::stable_sort(by_self.begin(), by_self.end(),
                   [](const ProfileEntry* a, const ProfileEntry* b) { return a->self > b->self; });
  absl::StrAppend(&out, "  self:\n");
  for (size_t i = 0; i < by_self.size() && i < lines; ++i)
    line(*by_self[i], summary.SelfShare(*by_self[i]));
  // The user frames above the work (main, the benchmark runner) hold 100% and say
  // nothing; the kernel's call path is what explains a figure.
  absl::StrAppend(&out, "  children (inclusive), kernel frames:\n");
  size_t shown = 0;
  for (const ProfileEntry& e : summary.entries) {
    if (shown == lines) break;
    if (!e.frame.kernel) continue;
    line(e, summary.ChildrenShare(e));
    ++shown;
  }
  return out;
}

std::string ProfileSummaryJson(const ProfileSummary& summary) {
  std::string out = absl::StrCat("{\"samples\": ", summary.samples, ", \"symbols\": [");
  for (size_t i = 0; i < summary.entries.size(); ++i) {
    const ProfileEntry& e = summary.entries[i];
    absl::StrAppend(&out, i == 0 ? "" : ", ", "{\"symbol\": ", JsonString(e.frame.symbol),
                    ", \"dso\": ", JsonString(e.frame.dso),
                    ", \"kernel\": ", e.frame.kernel ? "true" : "false",
                    absl::StrFormat(", \"self\": %.6f, \"children\": %.6f", summary.SelfShare(e),
                                    summary.ChildrenShare(e)),
                    ", \"self_samples\": ", e.self, ", \"children_samples\": ", e.children, "}");
  }
  return out + "]}";
}

}  // namespace perfscale
