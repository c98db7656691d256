// Finds tracefs wherever it is mounted (mounting it first, as perf does, when the kernel
// has it, nothing mounted it yet and this process may) and turns "subsystem:name" into
// the tracepoint id that perf_event_open wants.
//
// Example:
//   if (absl::StatusOr<std::string> root = perfscale::EnsureTracefs(caps.cap_sys_admin);
//       !root.ok()) skip(root.status().message());
//   absl::StatusOr<uint64_t> id = perfscale::TracepointId("lock:contention_begin");
//   if (id.ok()) attr = perfscale::TracepointAttr(*id);
#ifndef PERFSCALE_LIB_TRACEFS_H_
#define PERFSCALE_LIB_TRACEFS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "lib/file_reader.h"

namespace perfscale {

struct TracepointName {
  std::string subsystem;
  std::string event;
};

// "lock:contention_begin" -> {"lock", "contention_begin"}. Names are what tracefs allows
// in a directory name: letters, digits, '_', '-', '.'.
absl::StatusOr<TracepointName> ParseTracepointName(absl::string_view text);

// From the text of /proc/mounts: the tracefs mount point, else debugfs's "tracing"
// directory. NotFound, with how to mount it, when neither is there.
absl::StatusOr<std::string> FindTracefsMount(absl::string_view proc_mounts);

// Where a new machine's tracefs goes, and the command that puts it there.
inline constexpr char kTracefsMountPoint[] = "/sys/kernel/tracing";
inline constexpr char kMountTracefsCommand[] = "mount -t tracefs nodev /sys/kernel/tracing";

struct TracefsPlan {
  std::string root;    // where tracefs is, or will be once mounted
  bool mount = false;  // mount it at `root` first
};

// What to do to reach tracefs, from the text of /proc/mounts and /proc/filesystems and
// whether this process may mount (CAP_SYS_ADMIN): use the mount that is there; mount it at
// kTracefsMountPoint when the kernel has tracefs and we may; otherwise NotFound giving
// kMountTracefsCommand, or Unimplemented when the kernel has no tracefs at all.
absl::StatusOr<TracefsPlan> PlanTracefs(absl::string_view proc_mounts,
                                        absl::string_view proc_filesystems, bool may_mount);

// The tracefs root on this machine, after carrying out PlanTracefs. A mount is attempted
// at most once per process (under a lock on the mount point, so that concurrent processes
// do not stack mounts) and announced with one line on stderr; a later call only looks.
// Callers that are about to use tracepoints call it (Capabilities::RequireTracefs does),
// so that nothing is mounted that was not needed.
absl::StatusOr<std::string> EnsureTracefs(bool may_mount);

// The tracefs root, from /proc/mounts read through `reader` (FindTracefsMount). Never
// mounts: on the real filesystem, call EnsureTracefs first.
absl::StatusOr<std::string> TracefsRoot(const TextFileReader& reader = ReadTextFile);

// The text of an events/<subsystem>/<event>/id file.
absl::StatusOr<uint64_t> ParseTracepointId(absl::string_view text);

// Reads /proc/mounts and the id file through `reader` (the real filesystem by default).
// Never mounts: on the real filesystem, call EnsureTracefs first.
absl::StatusOr<uint64_t> TracepointId(absl::string_view name,
                                      const TextFileReader& reader = ReadTextFile);

}  // namespace perfscale

#endif  // PERFSCALE_LIB_TRACEFS_H_
