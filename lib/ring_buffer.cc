#include "lib/ring_buffer.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "lib/capabilities.h"
#include "lib/cpu_set.h"
#include "lib/errno_status.h"
#include "lib/file_reader.h"

namespace perfscale {
namespace {

constexpr int kCapIpcLock = 14;

uint64_t PageSize() {
  long size = sysconf(_SC_PAGESIZE);
  return size > 0 ? static_cast<uint64_t>(size) : 4096;
}

std::string KiB(uint64_t bytes) {
  if (bytes == UINT64_MAX) return "unlimited";
  return absl::StrCat(bytes / 1024, " KiB");
}

std::string DescribeLimits(const MlockLimits& limits) {
  return absl::StrCat("kernel.perf_event_mlock_kb=", limits.perf_event_mlock_kb, " x ",
                      limits.online_cpus, " CPUs + RLIMIT_MEMLOCK ", KiB(limits.rlimit_memlock));
}

}  // namespace

absl::Status ValidateRingPages(uint64_t pages) {
  if (pages == 0 || (pages & (pages - 1)) != 0 || pages > kMaxRingPages) {
    return absl::InvalidArgumentError(
        absl::StrCat("ring buffer size must be a power of two number of pages between 1 and ",
                     kMaxRingPages, ", got ", pages, " (perf record -m would round it up to one)"));
  }
  return absl::OkStatus();
}

MlockLimits ProbeMlockLimits() {
  MlockLimits limits;
  limits.page_size = PageSize();
  if (absl::StatusOr<std::string> text = ReadTextFile("/proc/sys/kernel/perf_event_mlock_kb");
      text.ok()) {
    if (absl::StatusOr<int64_t> kb = ParseSysctlInt(*text); kb.ok() && *kb >= 0) {
      limits.perf_event_mlock_kb = static_cast<uint64_t>(*kb);
    }
  }
  if (absl::StatusOr<std::vector<int>> cpus = OnlineCpus(); cpus.ok() && !cpus->empty()) {
    limits.online_cpus = static_cast<int>(cpus->size());
  }
  rlimit memlock{};
  if (getrlimit(RLIMIT_MEMLOCK, &memlock) == 0) {
    limits.rlimit_memlock =
        memlock.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(memlock.rlim_cur);
  }
  if (absl::StatusOr<std::string> status = ReadTextFile("/proc/self/status"); status.ok()) {
    if (absl::StatusOr<uint64_t> mask = ParseEffectiveCapabilities(*status);
        mask.ok() && ((*mask >> kCapIpcLock) & 1)) {
      limits.exempt = true;
      limits.exempt_because = "CAP_IPC_LOCK";
    }
  }
  if (!limits.exempt) {
    if (absl::StatusOr<std::string> text = ReadTextFile("/proc/sys/kernel/perf_event_paranoid");
        text.ok()) {
      if (absl::StatusOr<int64_t> level = ParseSysctlInt(*text); level.ok() && *level == -1) {
        limits.exempt = true;
        limits.exempt_because = "kernel.perf_event_paranoid=-1";
      }
    }
  }
  return limits;
}

absl::Status CheckRingBufferBudget(const MlockLimits& limits, uint64_t data_pages,
                                   uint64_t buffers) {
  if (absl::Status valid = ValidateRingPages(data_pages); !valid.ok()) return valid;
  if (limits.exempt || buffers == 0) return absl::OkStatus();
  const uint64_t page = limits.page_size == 0 ? 4096 : limits.page_size;
  // perf_mmap(): the user's allowance is perf_event_mlock_kb per online CPU; whatever
  // goes beyond it is charged to this process's RLIMIT_MEMLOCK.
  const uint64_t user_pages =
      limits.perf_event_mlock_kb * 1024 / page * static_cast<uint64_t>(limits.online_cpus);
  const uint64_t rlimit_pages =
      limits.rlimit_memlock == UINT64_MAX ? UINT64_MAX : limits.rlimit_memlock / page;
  const uint64_t needed = (data_pages + 1) * buffers;
  const uint64_t beyond = needed > user_pages ? needed - user_pages : 0;
  if (beyond <= rlimit_pages) return absl::OkStatus();
  const uint64_t allowed_bytes = (user_pages + rlimit_pages) * page;
  return absl::InvalidArgumentError(absl::StrCat(
      buffers, " ring buffers of ", data_pages, "+1 pages would lock ", KiB(needed * page),
      ", over the limit of ", KiB(allowed_bytes), " (", DescribeLimits(limits),
      "): use fewer pages, raise 'ulimit -l' or 'sysctl kernel.perf_event_mlock_kb', or run "
      "as root (CAP_IPC_LOCK)"));
}

absl::StatusOr<RingBuffer> RingBuffer::Map(int fd, uint64_t data_pages) {
  if (absl::Status valid = ValidateRingPages(data_pages); !valid.ok()) return valid;
  const uint64_t page = PageSize();
  const size_t length = static_cast<size_t>((data_pages + 1) * page);
  void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    int err = errno;
    absl::Status status =
        ErrnoStatus(err, absl::StrCat("mmap of a perf ring buffer (1+", data_pages, " pages)"));
    std::string hint;
    if (err == EPERM) {
      hint = absl::StrCat("locked memory over the limit (", DescribeLimits(ProbeMlockLimits()),
                          ", shared with this user's other perf buffers): use fewer pages, "
                          "raise 'ulimit -l' or run as root (CAP_IPC_LOCK)");
    } else if (err == EINVAL) {
      hint =
          "the kernel refuses inherited per-task events opened with cpu=-1 (open one "
          "per CPU instead) and sizes that are not a power of two pages";
    }
    if (hint.empty()) return status;
    return absl::Status(status.code(), absl::StrCat(status.message(), ": ", hint));
  }
  auto* meta = static_cast<perf_event_mmap_page*>(base);
  // data_offset/data_size are set by kernels since 4.1; older ones put the data right
  // after the first page.
  uint64_t data_offset = meta->data_offset != 0 ? meta->data_offset : page;
  uint64_t data_size = meta->data_size != 0 ? meta->data_size : data_pages * page;
  return RingBuffer(base, length, data_offset, data_size);
}

RingBuffer::RingBuffer(RingBuffer&& other) noexcept
    : base_(other.base_),
      mapped_bytes_(other.mapped_bytes_),
      data_offset_(other.data_offset_),
      data_size_(other.data_size_),
      scratch_(std::move(other.scratch_)) {
  other.base_ = nullptr;
  other.mapped_bytes_ = 0;
}

RingBuffer& RingBuffer::operator=(RingBuffer&& other) noexcept {
  if (this != &other) {
    Unmap();
    base_ = other.base_;
    mapped_bytes_ = other.mapped_bytes_;
    data_offset_ = other.data_offset_;
    data_size_ = other.data_size_;
    scratch_ = std::move(other.scratch_);
    other.base_ = nullptr;
    other.mapped_bytes_ = 0;
  }
  return *this;
}

RingBuffer::~RingBuffer() { Unmap(); }

void RingBuffer::Unmap() {
  if (base_ != nullptr) munmap(base_, mapped_bytes_);
  base_ = nullptr;
  mapped_bytes_ = 0;
}

uint64_t RingBuffer::Pending() const {
  if (base_ == nullptr) return 0;
  uint64_t head = __atomic_load_n(&meta()->data_head, __ATOMIC_ACQUIRE);
  return head - meta()->data_tail;
}

absl::StatusOr<RingBuffer::Consumed> RingBuffer::Consume(RecordVisitor on_record) {
  return ConsumeImpl(on_record, nullptr);
}

absl::StatusOr<RingBuffer::Consumed> RingBuffer::Consume(RecordVisitor on_record,
                                                         ChunkVisitor on_chunk) {
  return ConsumeImpl(on_record, &on_chunk);
}

absl::StatusOr<RingBuffer::Consumed> RingBuffer::ConsumeImpl(RecordVisitor on_record,
                                                             ChunkVisitor* on_chunk) {
  Consumed consumed;
  if (base_ == nullptr) return absl::FailedPreconditionError("ring buffer is not mapped");
  // Acquire pairs with the kernel's barrier before it publishes data_head: every byte
  // below head is written once we see it.
  const uint64_t head = __atomic_load_n(&meta()->data_head, __ATOMIC_ACQUIRE);
  const uint64_t tail = meta()->data_tail;  // only this reader writes it
  if (head == tail) return consumed;
  // Hands the space back; release orders our reads of the records before the kernel
  // may overwrite them.
  auto publish_tail = [this](uint64_t new_tail) {
    __atomic_store_n(&meta()->data_tail, new_tail, __ATOMIC_RELEASE);
  };
  const uint64_t mask = data_size_ - 1;
  if (head - tail > data_size_) {
    publish_tail(head);
    return absl::DataLossError(absl::StrCat("ring buffer head ", head, " is more than ", data_size_,
                                            " bytes past tail ", tail));
  }
  if (on_chunk != nullptr) {
    const uint64_t start = tail & mask;
    const uint64_t length = head - tail;
    const uint64_t first = std::min(length, data_size_ - start);
    (*on_chunk)(absl::MakeConstSpan(data() + start, static_cast<size_t>(first)));
    if (length > first) {
      (*on_chunk)(absl::MakeConstSpan(data(), static_cast<size_t>(length - first)));
    }
  }
  uint64_t position = tail;
  while (position < head) {
    const uint64_t offset = position & mask;
    perf_event_header header;
    // Records are 8-byte aligned, so a header never straddles the end; copy anyway, so
    // nothing depends on it.
    for (size_t i = 0; i < sizeof(header); ++i) {
      reinterpret_cast<uint8_t*>(&header)[i] = data()[(offset + i) & mask];
    }
    if (header.size < sizeof(header) || header.size > head - position) {
      publish_tail(head);
      return absl::DataLossError(absl::StrCat("corrupt record in ring buffer at ", position,
                                              ": size ", header.size, " with ", head - position,
                                              " bytes published"));
    }
    absl::Span<const uint8_t> record;
    if (offset + header.size <= data_size_) {
      record = absl::MakeConstSpan(data() + offset, header.size);
    } else {
      scratch_.resize(header.size);
      const size_t first = static_cast<size_t>(data_size_ - offset);
      std::memcpy(scratch_.data(), data() + offset, first);
      std::memcpy(scratch_.data() + first, data(), header.size - first);
      record = absl::MakeConstSpan(scratch_.data(), header.size);
    }
    on_record(header, record);
    position += header.size;
    ++consumed.records;
  }
  consumed.bytes = head - tail;
  publish_tail(head);
  return consumed;
}

}  // namespace perfscale
