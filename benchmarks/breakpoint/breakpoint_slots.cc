#include "benchmarks/breakpoint/breakpoint_slots.h"

#include <cerrno>
#include <vector>

#include "lib/errno_status.h"
#include "lib/perf_attr.h"
#include "lib/perf_event.h"

namespace perfscale {

absl::StatusOr<int> ProbeBreakpointSlots(int limit) {
  // Distinct bytes, never touched, so the probe breakpoints cannot fire.
  static volatile char watched[64];
  std::vector<PerfEvent> held;
  for (int i = 0; i < limit; ++i) {
    BreakpointSpec spec;
    spec.address = &watched[i % 64];
    spec.inherit = true;
    absl::StatusOr<PerfEvent> event = PerfEvent::Open(BreakpointAttr(spec), 0, -1);
    if (!event.ok()) {
      // Only ENOSPC means "no slot left"; EMFILE or ENOMEM are other limits.
      if (StatusErrno(event.status()) == ENOSPC && i > 0) return i;
      return event.status();
    }
    held.push_back(*std::move(event));
  }
  return limit;
}

}  // namespace perfscale
