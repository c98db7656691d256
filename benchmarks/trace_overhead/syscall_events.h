// The syscall trace events of one syscall (syscalls:sys_enter_NAME, sys_exit_NAME), and
// what a kernel copies into them from user memory.
//
// Unlike raw_syscalls:sys_enter, which records the six argument registers of every
// syscall, the per-syscall events can carry the memory an argument points to: kernels
// with Steven Rostedt's "tracing: Have syscall trace events read user space string"
// (2025) fault in openat's path, write's buffer and the like (a bounded prefix of each)
// and append them to the record: more work per event and bigger records for the same
// syscall. The event's format file names each such copy as a `__data_loc
// char[]` field `__ARG_val` (`__filename_val`, `__buf_val`); older kernels record the
// pointer only. A recorded row that got slower, or whose bytes/op grew, on a kernel whose
// format gained such a field did so for that.
//
// Example:
//   std::vector<std::string> events = perfscale::SyscallTracepoints("openat");
//   absl::StatusOr<std::vector<std::string>> copied =
//       perfscale::UserMemoryFields(events[0]);  // {"__filename_val"} on newer kernels
#ifndef PERFSCALE_BENCHMARKS_TRACE_OVERHEAD_SYSCALL_EVENTS_H_
#define PERFSCALE_BENCHMARKS_TRACE_OVERHEAD_SYSCALL_EVENTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "lib/file_reader.h"

namespace perfscale {

// {"syscalls:sys_enter_SYSCALL", "syscalls:sys_exit_SYSCALL"}.
std::vector<std::string> SyscallTracepoints(absl::string_view syscall);

// The user-memory fields of an event's format file text: `__data_loc char[]` fields named
// `__*_val`, in the order the format lists them.
std::vector<std::string> ParseUserMemoryFields(absl::string_view format);

// Reads the tracepoint's format file ("syscalls:sys_enter_openat") through `reader`
// (/proc/mounts for tracefs first; never mounts) and parses it. NotFound when the kernel
// has no such event.
absl::StatusOr<std::vector<std::string>> UserMemoryFields(
    absl::string_view tracepoint, const TextFileReader& reader = ReadTextFile);

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_TRACE_OVERHEAD_SYSCALL_EVENTS_H_
