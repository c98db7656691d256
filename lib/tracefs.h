// Finds tracefs wherever it is mounted and turns "subsystem:name" into the tracepoint id
// that perf_event_open wants.
//
// Example:
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

// The text of an events/<subsystem>/<event>/id file.
absl::StatusOr<uint64_t> ParseTracepointId(absl::string_view text);

// Reads /proc/mounts and the id file through `reader` (the real filesystem by default).
absl::StatusOr<uint64_t> TracepointId(absl::string_view name,
                                      const TextFileReader& reader = ReadTextFile);

}  // namespace perfscale

#endif  // PERFSCALE_LIB_TRACEFS_H_
