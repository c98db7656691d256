#include "lib/task_stat.h"

#include <cerrno>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "lib/errno_status.h"
#include "lib/file_reader.h"

namespace perfscale {
namespace {

constexpr int kProcessorField = 39;

}  // namespace

absl::StatusOr<int64_t> TaskStatField(absl::string_view stat, int number) {
  if (number < 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("stat field ", number, " is not an integer field (the first is 4)"));
  }
  size_t close = stat.rfind(')');
  if (close == absl::string_view::npos) {
    return absl::InvalidArgumentError("a task's stat without its command in parentheses");
  }
  // After ") " comes field 3, the state.
  std::vector<absl::string_view> fields =
      absl::StrSplit(stat.substr(close + 1), absl::ByAnyChar(" \n"), absl::SkipEmpty());
  const size_t index = static_cast<size_t>(number - 3);
  int64_t value = 0;
  if (fields.size() <= index || !absl::SimpleAtoi(fields[index], &value)) {
    return absl::InvalidArgumentError(absl::StrCat("a task's stat without an integer field ",
                                                   number, ": '", stat.substr(0, 80), "'"));
  }
  return value;
}

absl::StatusOr<int> ThreadLastCpu(pid_t tid) {
  const std::string path = absl::StrCat("/proc/self/task/", tid, "/stat");
  absl::StatusOr<std::string> stat = ReadTextFile(path);
  if (!stat.ok()) {
    if (StatusErrno(stat.status()) == ENOENT || StatusErrno(stat.status()) == ESRCH) {
      return absl::NotFoundError(absl::StrCat("thread ", tid, " is gone (", path, ")"));
    }
    return stat.status();
  }
  absl::StatusOr<int64_t> cpu = TaskStatField(*stat, kProcessorField);
  if (!cpu.ok()) return cpu.status();
  return static_cast<int>(*cpu);
}

absl::StatusOr<int> ThreadsLastOnOtherCpus(const std::vector<pid_t>& tids, int cpu) {
  int elsewhere = 0;
  for (pid_t tid : tids) {
    absl::StatusOr<int> last = ThreadLastCpu(tid);
    if (!last.ok()) return last.status();
    if (*last != cpu) ++elsewhere;
  }
  return elsewhere;
}

}  // namespace perfscale
