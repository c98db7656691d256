// What `perf record` takes from /proc about a task when it synthesizes its records: the
// name, thread-group id, parent and whether it is a kernel thread, from
// /proc/PID/task/TID/status; and the plain name from /proc/PID/task/TID/comm.
//
// perf (perf_event__get_comm_ids) takes the name from status's "Name:" line, in which
// the kernel escapes '\n' and '\\'; the comm file has the name as set. Both parsers
// return views into the text they were given, so the hot path allocates nothing.
//
// Example:
//   absl::StatusOr<perfscale::ProcStatus> st = perfscale::ParseProcStatus(text);
//   if (st.ok() && !st->kernel_thread && st->tgid == tid) { ... the leader: read maps ... }
#ifndef PERFSCALE_BENCHMARKS_SYNTHESIZE_PROC_STATUS_H_
#define PERFSCALE_BENCHMARKS_SYNTHESIZE_PROC_STATUS_H_

#include <sys/types.h>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace perfscale {

struct ProcStatus {
  absl::string_view name;  // a view into the parsed text
  pid_t tgid = -1;
  pid_t ppid = -1;
  // "Kthread: 1" where the kernel has that line (6.x); otherwise perf's rule: no
  // "VmPeak:" line but a "Threads:" line.
  bool kernel_thread = false;
};

// Parses the text of /proc/PID[/task/TID]/status. Name, Tgid and PPid are required;
// a missing or non-numeric one is InvalidArgument naming it.
absl::StatusOr<ProcStatus> ParseProcStatus(absl::string_view text);

// The text of /proc/PID/task/TID/comm ("name\n"): the name without its newline (it may
// be empty: prctl(PR_SET_NAME, "") is allowed). Longer than the kernel's 15 bytes, or a
// NUL or newline inside: InvalidArgument.
absl::StatusOr<absl::string_view> ParseCommText(absl::string_view text);

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_SYNTHESIZE_PROC_STATUS_H_
