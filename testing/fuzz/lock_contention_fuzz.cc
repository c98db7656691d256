// Feeds arbitrary bytes to the lock-sample decoder and pairer (lib/lock_contention.h), as a
// ring of records would: two bytes each for the begin and end tracepoint ids, then records
// one after another, each as long as its header says. A record may be rejected; decoding
// must never crash or read out of bounds, must not depend on the bytes after the record,
// and pairing must never count more waits than begins or more unmatched ends than ends.
#include <linux/perf_event.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "lib/lock_contention.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  uint16_t begin_id = 0;
  uint16_t end_id = 0;
  std::memcpy(&begin_id, data, 2);
  std::memcpy(&end_id, data + 2, 2);
  absl::Span<const uint8_t> rest(data + 4, size - 4);

  std::vector<perfscale::LockSample> samples;
  uint64_t begins = 0;
  uint64_t ends = 0;
  while (rest.size() >= sizeof(perf_event_header)) {
    perf_event_header header;
    std::memcpy(&header, rest.data(), sizeof(header));
    if (header.size < sizeof(header) || header.size > rest.size()) {
      // What is left, whole, must be refused (its header overruns it), never crash.
      if (header.size > rest.size() && perfscale::ParseLockSample(rest, begin_id, end_id).ok()) {
        std::abort();
      }
      break;
    }
    absl::StatusOr<perfscale::LockSample> sample =
        perfscale::ParseLockSample(rest, begin_id, end_id);
    absl::StatusOr<perfscale::LockSample> alone =
        perfscale::ParseLockSample(rest.first(header.size), begin_id, end_id);
    // The record is its own header.size bytes: what follows it changes nothing.
    if (sample.ok() != alone.ok()) std::abort();
    if (sample.ok()) {
      if (sample->tid != alone->tid || sample->time_ns != alone->time_ns ||
          sample->lock_addr != alone->lock_addr || sample->begin != alone->begin) {
        std::abort();
      }
      (sample->begin ? begins : ends) += 1;
      samples.push_back(*sample);
    }
    rest.remove_prefix(header.size);
  }
  perfscale::LockWaits waits = perfscale::PairLockContention(samples);
  if (waits.contended > begins || waits.unmatched_ends > ends) std::abort();
  return 0;
}
