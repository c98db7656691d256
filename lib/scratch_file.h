// A file on a chosen filesystem that has no name: written and read with the ordinary
// syscalls (write(2), pwrite(2), page cache, the filesystem's own locking), but nothing
// is ever left behind, even when the process is killed. It is created in a fresh
// directory under `dir` with O_TMPFILE (or created and unlinked at once where the
// filesystem lacks O_TMPFILE), and that directory is removed before Create returns. It is
// where perfscale's file sinks write (the synthesis output, the trace recorder's
// perf.data stand-in).
//
// Example:
//   absl::StatusOr<perfscale::ScratchFile> file = perfscale::ScratchFile::Create("/tmp");
//   write(file->fd(), data, size);
//   file->Truncate();  // empty again for the next run
#ifndef PERFSCALE_LIB_SCRATCH_FILE_H_
#define PERFSCALE_LIB_SCRATCH_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace perfscale {

class ScratchFile {
 public:
  // Errors name `dir` and say why (missing, not a directory, not writable, full).
  // Empty `dir`: DefaultDir().
  static absl::StatusOr<ScratchFile> Create(const std::string& dir);
  // $TMPDIR, or /tmp where it is unset or empty.
  static std::string DefaultDir();

  ScratchFile(ScratchFile&& other) noexcept;
  ScratchFile& operator=(ScratchFile&& other) noexcept;
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  ~ScratchFile();

  int fd() const { return fd_; }
  // Size 0 and file offset 0.
  absl::Status Truncate();
  // The whole content, read with pread (the file offset is left alone).
  absl::StatusOr<std::string> ReadAll() const;

 private:
  explicit ScratchFile(int fd) : fd_(fd) {}
  int fd_;
};

// Every byte of `data` with write(2) at the file offset, retrying short writes and EINTR.
absl::Status WriteFully(int fd, const char* data, size_t size);
// The same with pwrite(2) at `offset`.
absl::Status PwriteFully(int fd, const char* data, size_t size, off_t offset);

}  // namespace perfscale

#endif  // PERFSCALE_LIB_SCRATCH_FILE_H_
