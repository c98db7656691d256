// Lock contention from lock:contention_begin/end samples, the way `perf lock contention`
// reads them: ParseLockSample decodes one PERF_RECORD_SAMPLE (bytes in, nothing read from
// the kernel), and PairLockContention pairs a task's begins and ends into waits. Pure, so
// unit tests feed it records and a fuzz target (testing/fuzz:lock_contention) feeds it
// bytes; TaskCounters (lib/task_counters.h) samples the tracepoints and calls both.
//
// Example:
//   std::vector<perfscale::LockSample> samples;
//   ... for each record drained from the ring:
//   absl::StatusOr<perfscale::LockSample> sample =
//       perfscale::ParseLockSample(record, begin_id, end_id);
//   if (sample.ok()) samples.push_back(*sample);
//   perfscale::LockWaits waits = perfscale::PairLockContention(std::move(samples));
#ifndef PERFSCALE_LIB_LOCK_CONTENTION_H_
#define PERFSCALE_LIB_LOCK_CONTENTION_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace perfscale {

// One lock:contention_begin/end hit, as sampled.
struct LockSample {
  uint32_t tid = 0;
  uint64_t time_ns = 0;
  uint64_t lock_addr = 0;
  bool begin = false;
};

// Decodes one PERF_RECORD_SAMPLE (header included) of sample_type TID | TIME | RAW from
// a contention tracepoint; the raw payload's common_type tells begin from end.
// InvalidArgument for a record of another shape or tracepoint.
absl::StatusOr<LockSample> ParseLockSample(absl::Span<const uint8_t> record, uint16_t begin_id,
                                           uint16_t end_id);

struct LockWaits {
  uint64_t contended = 0;  // accepted begins
  uint64_t wait_ns = 0;    // sum of begin..end intervals that closed
  uint64_t unmatched_ends = 0;
};

// Pairs samples per task in time order, as perf's lock contention BPF program does: a
// begin while the task already waits is part of the same wait (a mutex's optimistic spin
// then sleep), and only an end for the same lock address closes it. Waits that began
// before the samples (an end with no begin) and waits still open are not timed.
LockWaits PairLockContention(std::vector<LockSample> samples);

}  // namespace perfscale

#endif  // PERFSCALE_LIB_LOCK_CONTENTION_H_
