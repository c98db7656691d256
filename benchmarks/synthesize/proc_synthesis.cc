#include "benchmarks/synthesize/proc_synthesis.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "benchmarks/synthesize/proc_maps.h"
#include "benchmarks/synthesize/proc_status.h"
#include "benchmarks/synthesize/text_lines.h"
#include "lib/errno_status.h"

namespace perfscale {
namespace {

// perf's names for the namespace files, in NAMESPACES record order (NET_NS_INDEX...).
constexpr const char* kNamespaceFiles[NR_NAMESPACES] = {"net",  "uts", "ipc",   "pid_for_children",
                                                        "user", "mnt", "cgroup"};

constexpr size_t kStatusBytes = 4096;  // perf reads 4095 bytes of status, once
constexpr size_t kCommBytes = 64;
constexpr size_t kMapsChunk = 64 * 1024;
constexpr size_t kDirentBytes = 32 * 1024;

// What a failed open or read of a /proc file means: the task went away (or we may not
// look at it), which perf silently skips; anything else is a real error.
bool IsGone(int err) {
  return err == ENOENT || err == ESRCH || err == EACCES || err == EPERM || err == ENOTDIR;
}

int OpenRetrying(const char* path, int flags) {
  int fd;
  do {
    fd = open(path, flags | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

ssize_t ReadRetrying(int fd, char* buffer, size_t size) {
  ssize_t n;
  do {
    n = read(fd, buffer, size);
  } while (n < 0 && errno == EINTR);
  return n;
}

// One read of up to `size` bytes (perf reads status and comm that way). Returns the
// length, or -errno.
ssize_t ReadOnce(const char* path, char* buffer, size_t size) {
  int fd = OpenRetrying(path, O_RDONLY);
  if (fd < 0) return -errno;
  ssize_t n = ReadRetrying(fd, buffer, size);
  int err = errno;
  close(fd);
  return n < 0 ? -err : n;
}

// Reads to EOF into `buffer` (grown as needed, never shrunk). Returns the length, or
// -errno.
ssize_t ReadAll(const char* path, std::string& buffer) {
  int fd = OpenRetrying(path, O_RDONLY);
  if (fd < 0) return -errno;
  size_t length = 0;
  for (;;) {
    if (buffer.size() - length < kMapsChunk) buffer.resize(length + 2 * kMapsChunk);
    ssize_t n = ReadRetrying(fd, &buffer[length], buffer.size() - length);
    if (n < 0) {
      int err = errno;
      close(fd);
      return -err;
    }
    if (n == 0) break;
    length += static_cast<size_t>(n);
  }
  close(fd);
  return static_cast<ssize_t>(length);
}

bool ParseId(const char* name, pid_t* id) {
  if (name[0] < '0' || name[0] > '9') return false;
  int32_t value = 0;
  if (!absl::SimpleAtoi(name, &value) || value <= 0) return false;
  *id = value;
  return true;
}

// Appends the numeric entries of directory `fd` to `ids`, with getdents64 into a
// reusable buffer (opendir/scandir would allocate per call or per entry).
absl::Status ReadIds(int fd, std::vector<char>& buffer, std::vector<pid_t>& ids, const char* what) {
  if (buffer.size() < kDirentBytes) buffer.resize(kDirentBytes);
  for (;;) {
    long n = syscall(SYS_getdents64, fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(errno, absl::StrCat("getdents64 ", what));
    if (n == 0) return absl::OkStatus();
    for (long pos = 0; pos < n;) {
      // linux_dirent64: ino (8), off (8), reclen (2), type (1), name.
      unsigned short reclen;
      std::memcpy(&reclen, buffer.data() + pos + 16, sizeof(reclen));
      pid_t id;
      if (ParseId(buffer.data() + pos + 19, &id)) ids.push_back(id);
      pos += reclen;
    }
  }
}

}  // namespace

ProcSynthesizer::ProcSynthesizer(SynthesisOptions options) : options_(std::move(options)) {
  status_.resize(kStatusBytes);
  comm_.resize(kCommBytes);
  path_.reserve(options_.proc_root.size() + 64);
}

const char* ProcSynthesizer::Path(pid_t a, pid_t b, const char* leaf) {
  path_.assign(options_.proc_root);
  char digits[absl::numbers_internal::kFastToBufferSize];
  path_.push_back('/');
  path_.append(digits, absl::numbers_internal::FastIntToBuffer(a, digits));
  if (b > 0) {
    path_.append("/task/");
    path_.append(digits, absl::numbers_internal::FastIntToBuffer(b, digits));
  }
  path_.push_back('/');
  path_.append(leaf);
  return path_.c_str();
}

absl::Status ProcSynthesizer::Emit(RecordSink& sink, size_t size) {
  ++counts_.records;
  counts_.bytes += size;
  return sink.Write(record_.bytes, size);
}

absl::Status ProcSynthesizer::SynthesizeProcess(pid_t pid, RecordSink& sink) {
  int fd = OpenRetrying(Path(pid, 0, "task"), O_RDONLY | O_DIRECTORY);
  if (fd < 0) {
    if (IsGone(errno)) {
      ++counts_.tasks_vanished;
      return absl::OkStatus();
    }
    return ErrnoStatus(errno, absl::StrCat("open ", path_));
  }
  tids_.clear();
  absl::Status listed = ReadIds(fd, dirents_, tids_, path_.c_str());
  close(fd);
  if (!listed.ok()) {
    // A process that exits between the open and the listing answers ENOENT: gone, like
    // a failed open, not an error that would skip the whole system-wide benchmark.
    if (std::optional<int> err = StatusErrno(listed); err && IsGone(*err)) {
      ++counts_.tasks_vanished;
      return absl::OkStatus();
    }
    return listed;
  }
  for (pid_t tid : tids_) {
    if (absl::Status status = SynthesizeTask(pid, tid, sink); !status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status ProcSynthesizer::SynthesizeTask(pid_t pid, pid_t tid, RecordSink& sink) {
  ssize_t n = ReadOnce(Path(pid, tid, "status"), &status_[0], status_.size());
  if (n <= 0) {
    if (n == 0 || IsGone(static_cast<int>(-n))) {
      ++counts_.tasks_vanished;
      return absl::OkStatus();
    }
    return ErrnoStatus(static_cast<int>(-n), absl::StrCat("read ", path_));
  }
  absl::StatusOr<ProcStatus> status =
      ParseProcStatus(absl::string_view(status_.data(), static_cast<size_t>(n)));
  if (!status.ok()) {
    return absl::InternalError(absl::StrCat(path_, ": ", status.status().message()));
  }
  absl::string_view name = status->name;
  if (options_.comm_source == CommSource::kCommFile) {
    ssize_t length = ReadOnce(Path(pid, tid, "comm"), &comm_[0], comm_.size());
    if (length < 0) {
      if (IsGone(static_cast<int>(-length))) {
        ++counts_.tasks_vanished;
        return absl::OkStatus();
      }
      return ErrnoStatus(static_cast<int>(-length), absl::StrCat("read ", path_));
    }
    absl::StatusOr<absl::string_view> comm =
        ParseCommText(absl::string_view(comm_.data(), static_cast<size_t>(length)));
    if (!comm.ok()) {
      return absl::InternalError(absl::StrCat(path_, ": ", comm.status().message()));
    }
    name = *comm;
  }
  const uint32_t tgid = static_cast<uint32_t>(status->tgid);
  const uint32_t utid = static_cast<uint32_t>(tid);
  ++counts_.tasks;

  // perf's convention: a leader's parent is PPid; other threads were "forked" by the
  // leader.
  const uint32_t parent = status->tgid == tid ? static_cast<uint32_t>(status->ppid) : tgid;
  if (absl::Status s = Emit(sink, EncodeFork(tgid, parent, utid, parent, record_.bytes)); !s.ok()) {
    return s;
  }
  if (options_.namespaces) {
    // perf stats /proc/TID/ns/NAME; a namespace it cannot stat stays zero.
    perf_ns_link_info links[NR_NAMESPACES] = {};
    Path(tid, 0, "ns/");
    const size_t base = path_.size();
    for (int i = 0; i < NR_NAMESPACES; ++i) {
      path_.resize(base);
      path_.append(kNamespaceFiles[i]);
      struct stat st;
      if (stat(path_.c_str(), &st) == 0) {
        links[i].dev = st.st_dev;
        links[i].ino = st.st_ino;
      }
    }
    if (absl::Status s =
            Emit(sink, EncodeNamespaces(tgid, utid, links, NR_NAMESPACES, record_.bytes));
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = Emit(sink, EncodeComm(tgid, utid, name, record_.bytes)); !s.ok()) {
    return s;
  }
  if (tid == pid && !status->kernel_thread) return SynthesizeMmaps(pid, status->tgid, sink);
  return absl::OkStatus();
}

absl::Status ProcSynthesizer::SynthesizeMmaps(pid_t pid, pid_t tgid, RecordSink& sink) {
  ssize_t n = ReadAll(Path(pid, pid, "maps"), maps_);
  if (n < 0) {
    if (IsGone(static_cast<int>(-n))) {
      ++counts_.tasks_vanished;
      return absl::OkStatus();
    }
    return ErrnoStatus(static_cast<int>(-n), absl::StrCat("read ", path_));
  }
  absl::string_view text(maps_.data(), static_cast<size_t>(n));
  Mmap2Fields fields;
  fields.pid = static_cast<uint32_t>(tgid);
  fields.tid = static_cast<uint32_t>(pid);
  for (absl::string_view line : TextLines(text)) {
    absl::StatusOr<MapsEntry> entry = ParseMapsLine(line);
    if (!entry.ok()) {
      return absl::InternalError(absl::StrCat(path_, ": ", entry.status().message()));
    }
    fields.misc = PERF_RECORD_MISC_USER;
    if (!entry->executable) {
      if (!options_.data_mmaps || !entry->readable) continue;
      fields.misc |= PERF_RECORD_MISC_MMAP_DATA;
    }
    fields.addr = entry->start;
    fields.len = entry->end - entry->start;
    fields.pgoff = entry->offset;
    fields.maj = entry->dev_major;
    fields.min = entry->dev_minor;
    fields.ino = entry->inode;
    fields.prot = (entry->readable ? PROT_READ : 0) | (entry->writable ? PROT_WRITE : 0) |
                  (entry->executable ? PROT_EXEC : 0);
    fields.flags = entry->shared ? MAP_SHARED : MAP_PRIVATE;
    absl::string_view filename = entry->path.empty() ? "//anon" : entry->path;
    if (absl::Status s = Emit(sink, EncodeMmap2(fields, filename, record_.bytes)); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<pid_t>> ListProcessIds(const std::string& proc_root) {
  int fd = OpenRetrying(proc_root.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("open ", proc_root));
  std::vector<char> buffer;
  std::vector<pid_t> ids;
  absl::Status listed = ReadIds(fd, buffer, ids, proc_root.c_str());
  close(fd);
  if (!listed.ok()) return listed;
  return ids;
}

std::vector<std::pair<size_t, size_t>> SplitContiguous(size_t n, size_t parts) {
  std::vector<std::pair<size_t, size_t>> ranges;
  if (n == 0 || parts == 0) return ranges;
  if (parts > n) parts = n;
  size_t each = n / parts, extra = n % parts, begin = 0;
  for (size_t i = 0; i < parts; ++i) {
    size_t size = each + (i < extra ? 1 : 0);
    ranges.emplace_back(begin, begin + size);
    begin += size;
  }
  return ranges;
}

}  // namespace perfscale
