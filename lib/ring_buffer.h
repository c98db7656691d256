// The ring buffer a sampling perf event writes its records into: one metadata page
// followed by 2^n data pages, mmap'd from the event's fd. RingBuffer owns the mapping
// (move-only, munmap on destruction) and consumes the records the kernel has published
// (data_tail..data_head), whole, including one that wraps around the end of the data
// area, then hands the space back to the kernel.
//
// The kernel refuses a mapping whose data pages are not a power of two, and charges the
// locked pages first against kernel.perf_event_mlock_kb (per CPU, shared by all of the
// user's perf buffers) and then against RLIMIT_MEMLOCK, unless the process has
// CAP_IPC_LOCK or perf_event_paranoid is -1. CheckRingBufferBudget predicts that refusal
// so a binary can reject a size before running anything.
//
// Example:
//   absl::StatusOr<perfscale::RingBuffer> ring =
//       perfscale::RingBuffer::Map(event.fd(), /*data_pages=*/1024);
//   absl::StatusOr<perfscale::RingBuffer::Consumed> got = ring->Consume(
//       [&](const perf_event_header& header, absl::Span<const uint8_t> record) {
//         if (header.type == PERF_RECORD_SAMPLE) ++samples;
//       });
#ifndef PERFSCALE_LIB_RING_BUFFER_H_
#define PERFSCALE_LIB_RING_BUFFER_H_

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace perfscale {

// More data pages than any sane recording needs (2 GiB of 4 KiB pages); the kernel's
// own ceiling is about the same.
inline constexpr uint64_t kMaxRingPages = uint64_t{1} << 19;

// InvalidArgument unless `pages` is a power of two in [1, kMaxRingPages].
absl::Status ValidateRingPages(uint64_t pages);

// What the kernel's perf_mmap() checks a new buffer against.
struct MlockLimits {
  uint64_t page_size = 4096;
  uint64_t perf_event_mlock_kb = 516;  // kernel.perf_event_mlock_kb, per online CPU
  int online_cpus = 1;
  uint64_t rlimit_memlock = 0;  // bytes; UINT64_MAX when unlimited
  // CAP_IPC_LOCK, or perf_event_paranoid == -1: no limit applies.
  bool exempt = false;
  std::string exempt_because;  // why exempt, for messages
};

// Reads the sysctls, RLIMIT_MEMLOCK and the effective capabilities. Unreadable sysctls
// keep the kernel defaults.
MlockLimits ProbeMlockLimits();

// InvalidArgument, with the numbers and what to change, when `buffers` buffers of
// `data_pages` data pages each (plus their metadata page) exceed what `limits` allow.
// Approximate: it assumes no other perf buffer of this user is mapped.
absl::Status CheckRingBufferBudget(const MlockLimits& limits, uint64_t data_pages,
                                   uint64_t buffers);

class RingBuffer {
 public:
  struct Consumed {
    uint64_t records = 0;
    uint64_t bytes = 0;
  };
  // One whole record: its header and all of its bytes (header included). The span is
  // only valid during the call.
  using RecordVisitor =
      absl::FunctionRef<void(const perf_event_header&, absl::Span<const uint8_t>)>;
  // Raw published bytes in ring order, in one or two contiguous pieces: what `perf
  // record` writes to perf.data.
  using ChunkVisitor = absl::FunctionRef<void(absl::Span<const uint8_t>)>;

  // Maps 1 + data_pages pages of `fd` read-write (so the kernel sees our data_tail and
  // never overwrites unread records). EPERM is explained in terms of the mlock limits.
  static absl::StatusOr<RingBuffer> Map(int fd, uint64_t data_pages);

  RingBuffer() = default;
  RingBuffer(RingBuffer&& other) noexcept;
  RingBuffer& operator=(RingBuffer&& other) noexcept;
  RingBuffer(const RingBuffer&) = delete;
  RingBuffer& operator=(const RingBuffer&) = delete;
  ~RingBuffer();

  // Visits every record published so far and releases their space. DataLoss when a
  // record header is impossible (the rest is then dropped so the kernel can go on).
  absl::StatusOr<Consumed> Consume(RecordVisitor on_record);
  absl::StatusOr<Consumed> Consume(RecordVisitor on_record, ChunkVisitor on_chunk);

  // Bytes published but not consumed yet.
  uint64_t Pending() const;

  bool valid() const { return base_ != nullptr; }
  uint64_t data_size() const { return data_size_; }
  size_t mapped_bytes() const { return mapped_bytes_; }
  void Unmap();

 private:
  RingBuffer(void* base, size_t mapped_bytes, uint64_t data_offset, uint64_t data_size)
      : base_(base),
        mapped_bytes_(mapped_bytes),
        data_offset_(data_offset),
        data_size_(data_size) {}
  absl::StatusOr<Consumed> ConsumeImpl(RecordVisitor on_record, ChunkVisitor* on_chunk);
  perf_event_mmap_page* meta() const { return static_cast<perf_event_mmap_page*>(base_); }
  const uint8_t* data() const { return static_cast<const uint8_t*>(base_) + data_offset_; }

  void* base_ = nullptr;
  size_t mapped_bytes_ = 0;
  uint64_t data_offset_ = 0;
  uint64_t data_size_ = 0;
  // Where a record that wraps around the end is reassembled (records are < 64 KiB).
  std::vector<uint8_t> scratch_;
};

}  // namespace perfscale

#endif  // PERFSCALE_LIB_RING_BUFFER_H_
