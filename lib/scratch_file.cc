#include "lib/scratch_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

#include "absl/strings/str_cat.h"
#include "lib/errno_status.h"
#include "lib/interrupt_cleanup.h"

namespace perfscale {

std::string ScratchFile::DefaultDir() {
  const char* tmpdir = std::getenv("TMPDIR");
  return tmpdir != nullptr && tmpdir[0] != '\0' ? tmpdir : "/tmp";
}

absl::StatusOr<ScratchFile> ScratchFile::Create(const std::string& dir) {
  std::string base = dir.empty() ? DefaultDir() : dir;
  std::vector<char> tmpl(base.begin(), base.end());
  for (char c : std::string("/perfscale-XXXXXX")) tmpl.push_back(c);
  tmpl.push_back('\0');
  if (mkdtemp(tmpl.data()) == nullptr) {
    return ErrnoStatus(errno, absl::StrCat("create a directory in ", base));
  }
  std::string private_dir(tmpl.data());
  // Only for the microseconds until it is removed below.
  ScopedTempPathRegistration registered(private_dir);
  int fd = open(private_dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  int err = errno;
  if (fd < 0 && (err == EOPNOTSUPP || err == EISDIR || err == EINVAL)) {
    // No O_TMPFILE on this filesystem: a named file, unlinked at once.
    std::string path = private_dir + "/records";
    fd = open(path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    err = errno;
    if (fd >= 0) unlink(path.c_str());
  }
  rmdir(private_dir.c_str());
  if (fd < 0) return ErrnoStatus(err, absl::StrCat("create a file in ", base));
  return ScratchFile(fd);
}

ScratchFile::ScratchFile(ScratchFile&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

ScratchFile& ScratchFile::operator=(ScratchFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

ScratchFile::~ScratchFile() {
  if (fd_ >= 0) close(fd_);
}

absl::Status ScratchFile::Truncate() {
  if (ftruncate(fd_, 0) != 0) return ErrnoStatus(errno, "ftruncate scratch file");
  if (lseek(fd_, 0, SEEK_SET) != 0) return ErrnoStatus(errno, "lseek scratch file");
  return absl::OkStatus();
}

absl::StatusOr<std::string> ScratchFile::ReadAll() const {
  struct stat st;
  if (fstat(fd_, &st) != 0) return ErrnoStatus(errno, "fstat scratch file");
  std::string data(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = pread(fd_, &data[done], data.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(errno, "pread scratch file");
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  data.resize(done);
  return data;
}

absl::Status WriteFully(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(errno, "write");
    data += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status PwriteFully(int fd, const char* data, size_t size, off_t offset) {
  while (size > 0) {
    ssize_t n = pwrite(fd, data, size, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(errno, "pwrite");
    data += n;
    size -= static_cast<size_t>(n);
    offset += n;
  }
  return absl::OkStatus();
}

}  // namespace perfscale
