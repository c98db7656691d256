#include "lib/lock_contention.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace perfscale {
namespace {

// Offsets in the raw payload of lock:contention_begin/end (their tracefs format files):
// the common fields take 8 bytes, then `void *lock_addr`.
constexpr size_t kRawCommonTypeOffset = 0;
constexpr size_t kRawLockAddrOffset = 8;

template <typename T>
bool ReadAt(absl::Span<const uint8_t> bytes, size_t offset, T* out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(out, bytes.data() + offset, sizeof(T));
  return true;
}

}  // namespace

absl::StatusOr<LockSample> ParseLockSample(absl::Span<const uint8_t> record, uint16_t begin_id,
                                           uint16_t end_id) {
  perf_event_header header;
  if (!ReadAt(record, 0, &header) || header.type != PERF_RECORD_SAMPLE ||
      header.size > record.size()) {
    return absl::InvalidArgumentError("not a whole PERF_RECORD_SAMPLE");
  }
  // The record is its header's size: what follows it (the next record in a ring) is not
  // read as its fields.
  record = record.first(header.size);
  size_t at = sizeof(header);
  uint32_t pid_tid[2];
  uint64_t time = 0;
  uint32_t raw_size = 0;
  if (!ReadAt(record, at, &pid_tid) || !ReadAt(record, at + 8, &time) ||
      !ReadAt(record, at + 16, &raw_size)) {
    return absl::InvalidArgumentError("lock sample too short for tid, time and raw size");
  }
  at += 20;
  if (raw_size > header.size - at) {
    return absl::InvalidArgumentError("lock sample's raw payload runs past the record");
  }
  absl::Span<const uint8_t> raw = record.subspan(at, raw_size);
  uint16_t type = 0;
  LockSample sample;
  if (!ReadAt(raw, kRawCommonTypeOffset, &type) ||
      !ReadAt(raw, kRawLockAddrOffset, &sample.lock_addr)) {
    return absl::InvalidArgumentError("lock sample's raw payload is too short");
  }
  if (type != begin_id && type != end_id) {
    return absl::InvalidArgumentError(
        absl::StrCat("sample of tracepoint id ", type, ", not of lock:contention_begin/end"));
  }
  sample.tid = pid_tid[1];
  sample.time_ns = time;
  sample.begin = type == begin_id;
  return sample;
}

LockWaits PairLockContention(std::vector<LockSample> samples) {
  std::stable_sort(samples.begin(), samples.end(),
                   [](const LockSample& a, const LockSample& b) { return a.time_ns < b.time_ns; });
  struct Open {
    uint64_t lock_addr;
    uint64_t since_ns;
  };
  std::map<uint32_t, Open> waiting;
  LockWaits waits;
  for (const LockSample& sample : samples) {
    auto it = waiting.find(sample.tid);
    if (sample.begin) {
      if (it != waiting.end()) continue;  // already waiting: the same contention
      waiting.emplace(sample.tid, Open{sample.lock_addr, sample.time_ns});
      ++waits.contended;
    } else if (it == waiting.end() || it->second.lock_addr != sample.lock_addr) {
      ++waits.unmatched_ends;
    } else {
      waits.wait_ns += sample.time_ns - it->second.since_ns;
      waiting.erase(it);
    }
  }
  return waits;
}

}  // namespace perfscale
