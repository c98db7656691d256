#include "benchmarks/synthesize/perf_records.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace perfscale {
namespace {

size_t Align8(size_t n) { return (n + 7) & ~static_cast<size_t>(7); }

// Copies `text` (cut to `max` bytes) after a fixed part and pads with NULs to 8 bytes;
// returns the padded length.
size_t PutString(absl::string_view text, size_t max, char* out) {
  size_t length = text.size() < max ? text.size() : max;
  size_t padded = Align8(length + 1);
  std::memcpy(out, text.data(), length);
  std::memset(out + length, 0, padded - length);
  return padded;
}

void PutHeader(perf_event_header* header, uint32_t type, uint16_t misc, size_t size) {
  header->type = type;
  header->misc = misc;
  header->size = static_cast<uint16_t>(size);
}

absl::Status Bad(size_t offset, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("record at offset ", offset, ": ", what));
}

// The NUL-terminated string in [begin, begin + room), or an error when there is no NUL.
bool TakeString(const char* begin, size_t room, std::string* out) {
  const void* nul = std::memchr(begin, '\0', room);
  if (nul == nullptr) return false;
  out->assign(begin, static_cast<const char*>(nul));
  return true;
}

}  // namespace

size_t EncodeFork(uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid, char* out) {
  ForkRecord record;
  // Synthesized, not seen being forked: perf marks it so (perf internal flag).
  PutHeader(&record.header, PERF_RECORD_FORK, PERF_RECORD_MISC_FORK_EXEC, sizeof(record));
  record.pid = pid;
  record.ppid = ppid;
  record.tid = tid;
  record.ptid = ptid;
  record.time = 0;
  std::memcpy(out, &record, sizeof(record));
  return sizeof(record);
}

size_t EncodeComm(uint32_t pid, uint32_t tid, absl::string_view comm, char* out) {
  CommRecordHead head;
  head.pid = pid;
  head.tid = tid;
  size_t size = sizeof(head) + PutString(comm, kMaxCommBytes, out + sizeof(head));
  PutHeader(&head.header, PERF_RECORD_COMM, 0, size);
  std::memcpy(out, &head, sizeof(head));
  return size;
}

size_t EncodeMmap2(const Mmap2Fields& fields, absl::string_view filename, char* out) {
  Mmap2RecordHead head;
  head.pid = fields.pid;
  head.tid = fields.tid;
  head.addr = fields.addr;
  head.len = fields.len;
  head.pgoff = fields.pgoff;
  head.maj = fields.maj;
  head.min = fields.min;
  head.ino = fields.ino;
  head.ino_generation = fields.ino_generation;
  head.prot = fields.prot;
  head.flags = fields.flags;
  size_t size = sizeof(head) + PutString(filename, kMaxFilenameBytes, out + sizeof(head));
  PutHeader(&head.header, PERF_RECORD_MMAP2, fields.misc, size);
  std::memcpy(out, &head, sizeof(head));
  return size;
}

size_t EncodeNamespaces(uint32_t pid, uint32_t tid, const perf_ns_link_info* links, size_t count,
                        char* out) {
  NamespacesRecordHead head;
  head.pid = pid;
  head.tid = tid;
  head.nr_namespaces = count;
  size_t size = sizeof(head) + count * sizeof(perf_ns_link_info);
  PutHeader(&head.header, PERF_RECORD_NAMESPACES, 0, size);
  std::memcpy(out, &head, sizeof(head));
  if (count > 0) std::memcpy(out + sizeof(head), links, count * sizeof(perf_ns_link_info));
  return size;
}

absl::StatusOr<std::vector<DecodedRecord>> DecodeRecords(absl::string_view bytes) {
  std::vector<DecodedRecord> records;
  size_t offset = 0;
  while (offset < bytes.size()) {
    const char* at = bytes.data() + offset;
    size_t left = bytes.size() - offset;
    if (left < sizeof(perf_event_header)) return Bad(offset, "truncated header");
    perf_event_header header;
    std::memcpy(&header, at, sizeof(header));
    if (header.size < sizeof(header)) {
      return Bad(offset, absl::StrCat("size ", header.size, " below the header's 8"));
    }
    if (header.size % 8 != 0) {
      return Bad(offset, absl::StrCat("size ", header.size, " not a multiple of 8"));
    }
    if (header.size > left) {
      return Bad(offset,
                 absl::StrCat("size ", header.size, " runs past the end (", left, " bytes left)"));
    }
    DecodedRecord record;
    record.type = header.type;
    record.misc = header.misc;
    record.size = header.size;
    auto need = [&](size_t fixed) { return header.size >= fixed; };
    switch (header.type) {
      case PERF_RECORD_FORK: {
        if (header.size != sizeof(ForkRecord)) {
          return Bad(offset,
                     absl::StrCat("FORK of size ", header.size, ", expected ", sizeof(ForkRecord)));
        }
        ForkRecord fork;
        std::memcpy(&fork, at, sizeof(fork));
        record.pid = fork.pid;
        record.ppid = fork.ppid;
        record.tid = fork.tid;
        record.ptid = fork.ptid;
        record.time = fork.time;
        break;
      }
      case PERF_RECORD_COMM: {
        if (!need(sizeof(CommRecordHead) + 8)) return Bad(offset, "COMM too short");
        CommRecordHead head;
        std::memcpy(&head, at, sizeof(head));
        record.pid = head.pid;
        record.tid = head.tid;
        if (!TakeString(at + sizeof(head), header.size - sizeof(head), &record.text)) {
          return Bad(offset, "COMM name without NUL");
        }
        break;
      }
      case PERF_RECORD_MMAP2: {
        if (!need(sizeof(Mmap2RecordHead) + 8)) return Bad(offset, "MMAP2 too short");
        Mmap2RecordHead head;
        std::memcpy(&head, at, sizeof(head));
        record.pid = head.pid;
        record.tid = head.tid;
        Mmap2Fields& m = record.mmap2;
        m.misc = header.misc;
        m.pid = head.pid;
        m.tid = head.tid;
        m.addr = head.addr;
        m.len = head.len;
        m.pgoff = head.pgoff;
        m.maj = head.maj;
        m.min = head.min;
        m.ino = head.ino;
        m.ino_generation = head.ino_generation;
        m.prot = head.prot;
        m.flags = head.flags;
        if (!TakeString(at + sizeof(head), header.size - sizeof(head), &record.text)) {
          return Bad(offset, "MMAP2 filename without NUL");
        }
        break;
      }
      case PERF_RECORD_NAMESPACES: {
        if (!need(sizeof(NamespacesRecordHead))) return Bad(offset, "NAMESPACES too short");
        NamespacesRecordHead head;
        std::memcpy(&head, at, sizeof(head));
        record.pid = head.pid;
        record.tid = head.tid;
        size_t room = header.size - sizeof(head);
        if (head.nr_namespaces != room / sizeof(perf_ns_link_info) ||
            room % sizeof(perf_ns_link_info) != 0) {
          return Bad(offset, absl::StrCat("NAMESPACES says ", head.nr_namespaces,
                                          " namespaces but has room for ", room / 16));
        }
        record.namespaces.resize(head.nr_namespaces);
        if (room > 0) std::memcpy(record.namespaces.data(), at + sizeof(head), room);
        break;
      }
      default:
        return Bad(offset, absl::StrCat("unexpected record type ", header.type));
    }
    records.push_back(std::move(record));
    offset += header.size;
  }
  return records;
}

std::string RecordTypeName(uint32_t type) {
  switch (type) {
    case PERF_RECORD_FORK:
      return "FORK";
    case PERF_RECORD_COMM:
      return "COMM";
    case PERF_RECORD_MMAP2:
      return "MMAP2";
    case PERF_RECORD_NAMESPACES:
      return "NAMESPACES";
    default:
      return absl::StrCat(type);
  }
}

}  // namespace perfscale
