// A thread's line in /proc/<pid>/task/<tid>/stat, read by field: whether it is exiting
// (thread_exit) and which CPU it last ran on. A benchmark whose threads the scheduler
// places reads the second to say where they were, since that decides what its figure
// measured (a local call or an IPI per thread).
//
// Example:
//   absl::StatusOr<int> cpu = perfscale::ThreadLastCpu(tid);
#ifndef PERFSCALE_LIB_TASK_STAT_H_
#define PERFSCALE_LIB_TASK_STAT_H_

#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace perfscale {

// Field `number` of a stat line as an integer, numbered as proc(5) numbers them (4: ppid,
// 9: flags, 39: processor); the command, field 2, is skipped whole, whatever spaces and
// parentheses it holds. InvalidArgument for a number below 4 (the pid, the command and
// the state are not integers to read here) and for text without that integer field.
absl::StatusOr<int64_t> TaskStatField(absl::string_view stat, int number);

// The CPU that thread `tid` of this process last ran on (field 39); NotFound once the
// thread is gone.
absl::StatusOr<int> ThreadLastCpu(pid_t tid);

// How many of `tids` (threads of this process) last ran on a CPU other than `cpu`.
absl::StatusOr<int> ThreadsLastOnOtherCpus(const std::vector<pid_t>& tids, int cpu);

}  // namespace perfscale

#endif  // PERFSCALE_LIB_TASK_STAT_H_
