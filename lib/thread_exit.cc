#include "lib/thread_exit.h"

#include <dirent.h>
#include <sys/types.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "lib/errno_status.h"
#include "lib/file_reader.h"

namespace perfscale {
namespace {

// include/linux/sched.h
constexpr uint64_t kPfExiting = 0x00000004;

}  // namespace

absl::StatusOr<bool> StatSaysExiting(absl::string_view stat) {
  size_t close = stat.rfind(')');
  if (close == absl::string_view::npos) {
    return absl::InvalidArgumentError("a task's stat without its command in parentheses");
  }
  // After ") ": state(3) ppid(4) pgrp(5) session(6) tty_nr(7) tpgid(8) flags(9).
  std::vector<absl::string_view> fields =
      absl::StrSplit(stat.substr(close + 1), ' ', absl::SkipEmpty());
  constexpr size_t kFlagsAfterCommand = 6;
  uint64_t flags = 0;
  if (fields.size() <= kFlagsAfterCommand ||
      !absl::SimpleAtoi(fields[kFlagsAfterCommand], &flags)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a task's stat without a flags field: '", stat.substr(0, 80), "'"));
  }
  return (flags & kPfExiting) != 0;
}

absl::StatusOr<std::vector<pid_t>> ExitingThreads() {
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return ErrnoStatus(errno, "opendir /proc/self/task");
  std::vector<pid_t> exiting;
  absl::Status error;
  while (dirent* entry = readdir(dir)) {
    int tid = 0;
    if (!absl::SimpleAtoi(entry->d_name, &tid)) continue;  // "." and ".."
    absl::StatusOr<std::string> stat =
        ReadTextFile(absl::StrCat("/proc/self/task/", entry->d_name, "/stat"));
    if (!stat.ok()) continue;  // finished since the listing: not exiting any more
    absl::StatusOr<bool> is_exiting = StatSaysExiting(*stat);
    if (!is_exiting.ok()) {
      error = is_exiting.status();
      break;
    }
    if (*is_exiting) exiting.push_back(static_cast<pid_t>(tid));
  }
  closedir(dir);
  if (!error.ok()) return error;
  return exiting;
}

absl::Status WaitForExitingThreads(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    absl::StatusOr<std::vector<pid_t>> exiting = ExitingThreads();
    if (!exiting.ok()) return exiting.status();
    if (exiting->empty()) return absl::OkStatus();
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("threads ", absl::StrJoin(*exiting, ", "), " were still exiting ",
                       absl::FormatDuration(timeout),
                       " after they were joined; a count read now would miss theirs"));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

}  // namespace perfscale
