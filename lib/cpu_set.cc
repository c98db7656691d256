#include "lib/cpu_set.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "lib/errno_status.h"
#include "lib/file_reader.h"

namespace perfscale {
namespace {

absl::StatusOr<int> ParseCpuNumber(absl::string_view token, absl::string_view whole) {
  int value = 0;
  if (token.empty() || !std::all_of(token.begin(), token.end(), absl::ascii_isdigit) ||
      !absl::SimpleAtoi(token, &value) || value > kMaxCpuNumber) {
    return absl::InvalidArgumentError(absl::StrCat("bad CPU number '", token, "' in CPU list '",
                                                   whole, "' (expected e.g. 0-3,5)"));
  }
  return value;
}

absl::StatusOr<std::vector<int>> ReadCpuListFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadTextFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::vector<int>> cpus = ParseCpuList(*text);
  if (!cpus.ok()) {
    return absl::InternalError(absl::StrCat(path, ": ", cpus.status().message()));
  }
  return cpus;
}

}  // namespace

absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text) {
  absl::string_view body = absl::StripAsciiWhitespace(text);
  std::vector<int> cpus;
  if (body.empty()) return cpus;
  // Ranges are merged before they are expanded, so the work stays bounded by the
  // number of CPUs whatever the text repeats ("0-65535,0-65535,...").
  std::vector<std::pair<int, int>> ranges;
  for (absl::string_view item : absl::StrSplit(body, ',')) {
    std::vector<absl::string_view> ends = absl::StrSplit(item, absl::MaxSplits('-', 1));
    absl::StatusOr<int> first = ParseCpuNumber(ends[0], text);
    if (!first.ok()) return first.status();
    int last = *first;
    if (ends.size() == 2) {
      absl::StatusOr<int> parsed_last = ParseCpuNumber(ends[1], text);
      if (!parsed_last.ok()) return parsed_last.status();
      last = *parsed_last;
      if (last < *first) {
        return absl::InvalidArgumentError(
            absl::StrCat("descending range '", item, "' in CPU list '", text, "'"));
      }
    }
    ranges.emplace_back(*first, last);
  }
  std::sort(ranges.begin(), ranges.end());
  int next = 0;  // lowest CPU not yet emitted
  for (const auto& [first, last] : ranges) {
    for (int cpu = std::max(first, next); cpu <= last; ++cpu) cpus.push_back(cpu);
    next = std::max(next, last + 1);
  }
  return cpus;
}

std::string FormatCpuList(const std::vector<int>& cpus) {
  std::vector<int> sorted = cpus;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::string out;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    if (!out.empty()) out += ",";
    absl::StrAppend(&out, sorted[i]);
    if (j > i) absl::StrAppend(&out, "-", sorted[j]);
    i = j + 1;
  }
  return out;
}

absl::StatusOr<std::vector<int>> OnlineCpus() {
  return ReadCpuListFile("/sys/devices/system/cpu/online");
}

absl::StatusOr<std::vector<int>> PossibleCpus() {
  return ReadCpuListFile("/sys/devices/system/cpu/possible");
}

CpuMask::CpuMask(int max_cpu)
    : max_cpu_(max_cpu), size_bytes_(CPU_ALLOC_SIZE(max_cpu + 1)), set_(CPU_ALLOC(max_cpu + 1)) {
  CPU_ZERO_S(size_bytes_, set_);
}

CpuMask::CpuMask(const CpuMask& other) : CpuMask(other.max_cpu_) {
  std::memcpy(set_, other.set_, size_bytes_);
}

CpuMask& CpuMask::operator=(const CpuMask& other) {
  if (this == &other) return *this;
  CPU_FREE(set_);
  max_cpu_ = other.max_cpu_;
  size_bytes_ = other.size_bytes_;
  set_ = CPU_ALLOC(max_cpu_ + 1);
  std::memcpy(set_, other.set_, size_bytes_);
  return *this;
}

CpuMask::~CpuMask() { CPU_FREE(set_); }

void CpuMask::Set(int cpu) {
  if (cpu >= 0 && cpu <= max_cpu_) CPU_SET_S(static_cast<size_t>(cpu), size_bytes_, set_);
}

absl::StatusOr<CpuMask> CpuMask::Of(const std::vector<int>& cpus) {
  int max_cpu = 0;
  for (int cpu : cpus) {
    if (cpu < 0 || cpu > kMaxCpuNumber) {
      return absl::InvalidArgumentError(absl::StrCat("CPU ", cpu, " out of range"));
    }
    max_cpu = std::max(max_cpu, cpu);
  }
  CpuMask mask(max_cpu);
  for (int cpu : cpus) mask.Set(cpu);
  return mask;
}

bool CpuMask::IsSet(int cpu) const {
  return cpu >= 0 && cpu <= max_cpu_ && CPU_ISSET_S(static_cast<size_t>(cpu), size_bytes_, set_);
}

std::vector<int> CpuMask::Cpus() const {
  std::vector<int> cpus;
  for (int cpu = 0; cpu <= max_cpu_; ++cpu) {
    if (IsSet(cpu)) cpus.push_back(cpu);
  }
  return cpus;
}

absl::StatusOr<CpuMask> GetAffinity(pid_t tid) {
  int max_cpu = 1023;
  absl::StatusOr<std::vector<int>> possible = PossibleCpus();
  if (possible.ok() && !possible->empty()) max_cpu = std::max(max_cpu, possible->back());
  // The kernel rejects a mask smaller than nr_cpu_ids with EINVAL; grow until it fits.
  for (; max_cpu <= 8 * kMaxCpuNumber; max_cpu = 2 * max_cpu + 1) {
    CpuMask mask(max_cpu);
    if (sched_getaffinity(tid, mask.size_bytes(), mask.raw()) == 0) return mask;
    if (errno != EINVAL) return ErrnoStatus(errno, "sched_getaffinity");
  }
  return absl::InternalError("sched_getaffinity: no mask size accepted by the kernel");
}

absl::Status SetAffinity(const CpuMask& mask, pid_t tid) {
  if (sched_setaffinity(tid, mask.size_bytes(), mask.raw()) != 0) {
    return ErrnoStatus(errno,
                       absl::StrCat("sched_setaffinity to CPUs ", FormatCpuList(mask.Cpus())));
  }
  return absl::OkStatus();
}

absl::Status SetAffinity(const std::vector<int>& cpus, pid_t tid) {
  absl::StatusOr<CpuMask> mask = CpuMask::Of(cpus);
  if (!mask.ok()) return mask.status();
  return SetAffinity(*mask, tid);
}

absl::StatusOr<ScopedAffinity> ScopedAffinity::PinTo(int cpu) {
  return PinTo(std::vector<int>{cpu});
}

absl::StatusOr<ScopedAffinity> ScopedAffinity::PinTo(const std::vector<int>& cpus) {
  absl::StatusOr<CpuMask> original = GetAffinity();
  if (!original.ok()) return original.status();
  absl::Status moved = SetAffinity(cpus);
  if (!moved.ok()) return moved;
  return ScopedAffinity(*std::move(original));
}

ScopedAffinity::ScopedAffinity(CpuMask original) : original_(std::move(original)), active_(true) {}

ScopedAffinity::ScopedAffinity(ScopedAffinity&& other) noexcept
    : original_(other.original_), active_(other.active_) {
  other.active_ = false;
}

ScopedAffinity& ScopedAffinity::operator=(ScopedAffinity&& other) noexcept {
  if (this != &other) {
    Restore().IgnoreError();
    original_ = other.original_;
    active_ = other.active_;
    other.active_ = false;
  }
  return *this;
}

ScopedAffinity::~ScopedAffinity() { Restore().IgnoreError(); }

absl::Status ScopedAffinity::Restore() {
  if (!active_) return absl::OkStatus();
  active_ = false;
  return SetAffinity(original_);
}

}  // namespace perfscale
