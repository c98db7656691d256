#include "benchmarks/breakpoint/breakpoint_slots.h"

#include <algorithm>
#include <cerrno>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "lib/errno_status.h"
#include "lib/perf_attr.h"
#include "lib/perf_event.h"

namespace perfscale {
namespace {

// How many breakpoints this task can open now, up to `limit`.
absl::StatusOr<int> CountFreeSlots(int limit) {
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
      if (StatusErrno(event.status()) == ENOSPC) return i;
      return event.status();
    }
    held.push_back(*std::move(event));
  }
  return limit;
}

}  // namespace

int HardwareBreakpointSlots() {
#if defined(__x86_64__) || defined(__i386__)
  return 4;  // DR0-DR3 (the kernel's HBP_NUM)
#else
  return 0;  // arm64 and others: read from the debug unit at boot, not exposed to users
#endif
}

std::string BreakpointSlots::Describe() const {
  return absl::StrCat("the hardware has ", hardware, " breakpoint slots, ", in_use(),
                      " are in use elsewhere (", free,
                      " free; CPU-wide breakpoints of another process, such as `perf record -a "
                      "-e mem:ADDR`, take them)");
}

absl::StatusOr<BreakpointSlots> ProbeBreakpointSlots(int limit) {
  absl::StatusOr<int> free_slots = CountFreeSlots(limit);
  if (!free_slots.ok()) return free_slots.status();
  BreakpointSlots slots;
  slots.free = *free_slots;
  const int hardware = HardwareBreakpointSlots();
  if (hardware == 0 && slots.free == 0 && limit > 0) {
    return absl::ResourceExhaustedError(
        "no hardware breakpoint slot is free (held by other processes' CPU-wide "
        "breakpoints?), and this architecture's count of slots is unknown");
  }
  // Never fewer than this task just held (a kernel with more slots than we know of).
  slots.hardware = std::max(hardware, slots.free);
  return slots;
}

}  // namespace perfscale
