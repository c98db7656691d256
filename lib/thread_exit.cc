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
#include "lib/errno_status.h"
#include "lib/file_reader.h"
#include "lib/task_stat.h"

namespace perfscale {
namespace {

// include/linux/sched.h
constexpr uint64_t kPfExiting = 0x00000004;
constexpr int kFlagsField = 9;

}  // namespace

absl::StatusOr<bool> StatSaysExiting(absl::string_view stat) {
  absl::StatusOr<int64_t> flags = TaskStatField(stat, kFlagsField);
  if (!flags.ok()) return flags.status();
  if (*flags < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("a task's stat with negative flags: '", stat.substr(0, 80), "'"));
  }
  return (static_cast<uint64_t>(*flags) & kPfExiting) != 0;
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
