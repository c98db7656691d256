// The records `perf record` writes at the start of perf.data to describe tasks that
// already exist: PERF_RECORD_FORK, COMM, MMAP2 and NAMESPACES, laid out as the kernel's
// ABI describes them in <linux/perf_event.h> (a perf_event_header, the fields, strings
// NUL-padded so that every record's size is a multiple of 8). The records carry no
// sample_id trailer: perf adds one only with sample_id_all, and perf bench's have none.
//
// Encoding writes into a caller's buffer and never allocates (it runs once per record
// in the synthesis benchmark); decoding validates everything and is for tests and tools.
//
// Example:
//   perfscale::RecordBuffer buffer;
//   size_t size = perfscale::EncodeComm(pid, tid, "bash", buffer.bytes);
//   absl::StatusOr<std::vector<perfscale::DecodedRecord>> records =
//       perfscale::DecodeRecords(absl::string_view(buffer.bytes, size));
#ifndef PERFSCALE_BENCHMARKS_SYNTHESIZE_PERF_RECORDS_H_
#define PERFSCALE_BENCHMARKS_SYNTHESIZE_PERF_RECORDS_H_

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace perfscale {

// The longest comm the kernel keeps (TASK_COMM_LEN - 1) and perf's filename room
// (PATH_MAX, NUL included).
inline constexpr size_t kMaxCommBytes = 15;
inline constexpr size_t kMaxFilenameBytes = 4095;

// Fixed parts of the records, exactly as in the ABI.
struct CommRecordHead {
  perf_event_header header;
  uint32_t pid, tid;
};  // then char comm[], NUL-padded to 8 bytes
struct ForkRecord {
  perf_event_header header;
  uint32_t pid, ppid;
  uint32_t tid, ptid;
  uint64_t time;
};
struct Mmap2RecordHead {
  perf_event_header header;
  uint32_t pid, tid;
  uint64_t addr, len, pgoff;
  uint32_t maj, min;
  uint64_t ino, ino_generation;
  uint32_t prot, flags;
};  // then char filename[], NUL-padded to 8 bytes
struct NamespacesRecordHead {
  perf_event_header header;
  uint32_t pid, tid;
  uint64_t nr_namespaces;
};  // then perf_ns_link_info[nr_namespaces]
static_assert(sizeof(CommRecordHead) == 16, "ABI");
static_assert(sizeof(ForkRecord) == 32, "ABI");
static_assert(sizeof(Mmap2RecordHead) == 72, "ABI");
static_assert(sizeof(NamespacesRecordHead) == 24, "ABI");
static_assert(sizeof(perf_ns_link_info) == 16, "ABI");

inline constexpr size_t kMaxRecordSize = sizeof(Mmap2RecordHead) + kMaxFilenameBytes + 1;
static_assert(kMaxRecordSize % 8 == 0, "records are 8-byte aligned");

// Room for any record these functions write, aligned for their fields.
struct RecordBuffer {
  alignas(8) char bytes[kMaxRecordSize];
};

struct Mmap2Fields {
  uint16_t misc = PERF_RECORD_MISC_USER;  // | PERF_RECORD_MISC_MMAP_DATA for data
  uint32_t pid = 0, tid = 0;
  uint64_t addr = 0, len = 0, pgoff = 0;
  uint32_t maj = 0, min = 0;
  uint64_t ino = 0, ino_generation = 0;
  uint32_t prot = 0, flags = 0;  // PROT_*, MAP_SHARED or MAP_PRIVATE
};

// Each writes one record at `out` (kMaxRecordSize bytes, 8-aligned) and returns its size,
// a multiple of 8. Names longer than the ABI allows are cut as perf cuts them.
size_t EncodeFork(uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid, char* out);
size_t EncodeComm(uint32_t pid, uint32_t tid, absl::string_view comm, char* out);
size_t EncodeMmap2(const Mmap2Fields& fields, absl::string_view filename, char* out);
size_t EncodeNamespaces(uint32_t pid, uint32_t tid, const perf_ns_link_info* links, size_t count,
                        char* out);

struct DecodedRecord {
  uint32_t type = 0;
  uint16_t misc = 0;
  uint16_t size = 0;
  uint32_t pid = 0, tid = 0;                  // every type
  uint32_t ppid = 0, ptid = 0;                // FORK
  uint64_t time = 0;                          // FORK
  Mmap2Fields mmap2;                          // MMAP2 (misc, pid and tid repeated there)
  std::string text;                           // COMM's name, MMAP2's filename
  std::vector<perf_ns_link_info> namespaces;  // NAMESPACES
};

// Splits a stream of records and checks each: a header that does not fit, a size below
// 8, not a multiple of 8, beyond the stream or below its type's fixed part, a string
// without its NUL, a namespace count that disagrees with the size, or a type other than
// the four above: InvalidArgument with the record's offset.
absl::StatusOr<std::vector<DecodedRecord>> DecodeRecords(absl::string_view bytes);

// "FORK", "COMM", "MMAP2", "NAMESPACES", or the number.
std::string RecordTypeName(uint32_t type);

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_SYNTHESIZE_PERF_RECORDS_H_
