#include "benchmarks/harness/result_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "lib/errno_status.h"
#include "lib/interrupt_cleanup.h"
#include "lib/scratch_file.h"

namespace perfscale {
namespace {

// JSONReporter ends its context block with this line and opens the benchmark list.
constexpr char kContextEnd[] = "\n  },\n  \"benchmarks\": [\n";
constexpr char kIncomplete[] = ",\n    \"run_complete\": \"false\"";
constexpr char kComplete[] = ",\n    \"run_complete\": \"true\"";

std::string Directory(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string TempPattern(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return absl::StrCat(Directory(path), "/.", base, ".XXXXXX");
}

}  // namespace

absl::StatusOr<std::unique_ptr<ResultFileReporter>> ResultFileReporter::Create(
    const std::string& path, const std::string& format) {
  if (format == "csv") {
    // Google Benchmark deprecates its CSV reporter: that format stays its own.
    return absl::UnimplementedError("csv output is written by Google Benchmark");
  }
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(path, " is not a regular file"));
  }
  std::string pattern = TempPattern(path);
  int fd = mkstemp(pattern.data());
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("create a file beside ", path));
  close(fd);
  unlink(pattern.c_str());

  std::unique_ptr<benchmark::BenchmarkReporter> writer;
  std::string closing;
  if (format == "console") {
    writer = std::make_unique<benchmark::ConsoleReporter>(benchmark::ConsoleReporter::OO_None);
  } else {
    writer = std::make_unique<benchmark::JSONReporter>();
    closing = "\n  ]\n}\n";
  }
  mode_t mask = umask(0);
  umask(mask);
  return std::unique_ptr<ResultFileReporter>(
      new ResultFileReporter(path, std::move(writer), std::move(closing), 0666 & ~mask));
}

ResultFileReporter::ResultFileReporter(std::string path,
                                       std::unique_ptr<benchmark::BenchmarkReporter> format,
                                       std::string closing, mode_t mode)
    : path_(std::move(path)),
      format_(std::move(format)),
      closing_(std::move(closing)),
      mode_(mode) {
  format_->SetOutputStream(&buffer_);
  format_->SetErrorStream(&buffer_);
}

bool ResultFileReporter::ReportContext(const Context& context) {
  bool ok = format_->ReportContext(context);
  if (!closing_.empty()) {
    std::string text = buffer_.str();
    size_t end = text.rfind(kContextEnd);
    if (end != std::string::npos) {
      text.insert(end, kIncomplete);
      buffer_.str(text);
      buffer_.seekp(0, std::ios_base::end);
    }
  }
  Write(buffer_.str() + closing_);
  return ok;
}

void ResultFileReporter::ReportRuns(const std::vector<Run>& runs) {
  format_->ReportRuns(runs);
  Write(buffer_.str() + closing_);
}

void ResultFileReporter::Finalize() {
  format_->Finalize();
  std::string text = buffer_.str();
  size_t mark = text.find(kIncomplete);
  if (mark != std::string::npos) text.replace(mark, sizeof(kIncomplete) - 1, kComplete);
  Write(text);
}

void ResultFileReporter::Write(const std::string& document) {
  if (!status_.ok()) return;
  std::string temp = TempPattern(path_);
  int fd = mkstemp(temp.data());
  if (fd < 0) {
    status_ = ErrnoStatus(errno, absl::StrCat("create a file beside ", path_));
    return;
  }
  // Should a signal end the run mid-write, the handler removes the partial copy; the
  // file at path_ is the previous whole document until the rename replaces it.
  ScopedTempPathRegistration cleanup(temp);
  absl::Status written = WriteFully(fd, document.data(), document.size());
  if (written.ok() && fchmod(fd, mode_) != 0) written = ErrnoStatus(errno, "fchmod");
  if (close(fd) != 0 && written.ok()) written = ErrnoStatus(errno, "close");
  if (written.ok() && rename(temp.c_str(), path_.c_str()) != 0) {
    written = ErrnoStatus(errno, absl::StrCat("rename into ", path_));
  }
  if (!written.ok()) {
    unlink(temp.c_str());
    status_ = written;
  }
}

}  // namespace perfscale
