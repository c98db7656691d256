// Builders for the perf_event_attr of each kind of event perfscale opens: hardware
// breakpoints, software events and tracepoints. They only fill the struct; opening is
// perf_event.h's job.
//
// Example:
//   perf_event_attr attr = perfscale::BreakpointAttr(
//       {.address = &watched, .length = 1, .access = perfscale::BreakpointAccess::kReadWrite,
//        .inherit = true});
#ifndef PERFSCALE_LIB_PERF_ATTR_H_
#define PERFSCALE_LIB_PERF_ATTR_H_

#include <linux/perf_event.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace perfscale {

enum class BreakpointAccess { kRead, kWrite, kReadWrite, kExecute };

struct BreakpointSpec {
  const volatile void* address = nullptr;
  int length = 1;  // 1, 2, 4 or 8 bytes (ignored for kExecute)
  BreakpointAccess access = BreakpointAccess::kReadWrite;
  bool inherit = false;   // children created later get a copy
  bool disabled = false;  // start disabled
};

// Like `perf bench breakpoint`: user space only (exclude_kernel, exclude_hv), so no
// privilege beyond perf_event_paranoid <= 2 is needed for the calling task.
perf_event_attr BreakpointAttr(const BreakpointSpec& spec);

// A PERF_TYPE_SOFTWARE event (PERF_COUNT_SW_*), counting only, user and kernel.
perf_event_attr SoftwareAttr(uint64_t config);

// Maps perf's names ("cpu-clock", "task-clock", "dummy", "context-switches", ...) to
// PERF_COUNT_SW_* values.
absl::StatusOr<uint64_t> ParseSoftwareEventName(absl::string_view name);

// A PERF_TYPE_TRACEPOINT event by its tracefs id, counting only.
perf_event_attr TracepointAttr(uint64_t id);

}  // namespace perfscale

#endif  // PERFSCALE_LIB_PERF_ATTR_H_
