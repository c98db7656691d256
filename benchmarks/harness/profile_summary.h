// Turns sampled callchains into what `perf report --children` shows: for every function,
// its self share (samples whose leaf frame is in it) and its children share (samples
// with it anywhere on the stack, counted once per sample even when it recurses), both as
// fractions of all samples. Pure: chains and a resolver in, a summary out.
//
// Example:
//   std::vector<perfscale::ResolvedChain> chains = perfscale::ResolveChains(
//       raw.chains, [](uint64_t ip, bool kernel) { return symbols.Resolve(ip, kernel); });
//   perfscale::ProfileSummary summary = perfscale::Summarize(chains, /*top=*/20);
//   std::string text = perfscale::FormatProfile(summary, 10);
#ifndef PERFSCALE_BENCHMARKS_HARNESS_PROFILE_SUMMARY_H_
#define PERFSCALE_BENCHMARKS_HARNESS_PROFILE_SUMMARY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "lib/symbols.h"

namespace perfscale {

struct ProfileFrame {
  std::string symbol;
  std::string dso;
  bool kernel = false;
  bool operator==(const ProfileFrame& other) const {
    return symbol == other.symbol && dso == other.dso && kernel == other.kernel;
  }
};

struct ResolvedChain {
  std::vector<ProfileFrame> frames;  // leaf first
  uint64_t count = 0;
};

// Splits each kernel callchain at its PERF_CONTEXT_* markers (kernel frames, then user
// frames) and resolves every address; a chain without markers is classified by address
// (the kernel's half of the address space), in the order of `chains`.
std::vector<ResolvedChain> ResolveChains(
    const std::map<std::vector<uint64_t>, uint64_t>& chains,
    const std::function<ResolvedFrame(uint64_t address, bool kernel)>& resolve);

struct ProfileEntry {
  ProfileFrame frame;
  uint64_t self = 0;      // samples
  uint64_t children = 0;  // samples, self included
};

struct ProfileSummary {
  uint64_t samples = 0;
  // The union of the `top` entries by self and the `top` by children, sorted by
  // children, then self, then name.
  std::vector<ProfileEntry> entries;
  double SelfShare(const ProfileEntry& e) const;
  double ChildrenShare(const ProfileEntry& e) const;
};

ProfileSummary Summarize(const std::vector<ResolvedChain>& chains, size_t top);

// perf report's look, two blocks: the top `lines` by self, then the top `lines` kernel
// frames by children:
//   "  90.83%  [k] osq_lock   [kernel.kallsyms]"
std::string FormatProfile(const ProfileSummary& summary, size_t lines);

// {"samples": N, "symbols": [{"symbol": ..., "dso": ..., "kernel": true, "self": 0.9,
// "children": 0.95, "self_samples": ..., "children_samples": ...}, ...]} (no newline).
std::string ProfileSummaryJson(const ProfileSummary& summary);

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_HARNESS_PROFILE_SUMMARY_H_
