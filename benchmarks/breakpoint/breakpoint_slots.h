// How many hardware breakpoints the CPU has (x86: 4 debug address registers) and how many
// of them this task can hold now. The kernel exposes neither count, so the free ones are
// found by opening inheritable user-space breakpoints on the calling thread until the
// kernel says ENOSPC, then closing them all. A task's slots are taken by its own
// breakpoints and by CPU-wide ones of any process (a `perf record -a -e mem:ADDR`, a
// kernel watchpoint); other tasks' per-task breakpoints (a debugger's) do not count.
//
// Example:
//   absl::StatusOr<BreakpointSlots> slots = perfscale::ProbeBreakpointSlots();
//   if (slots.ok() && slots->free < 4) std::cerr << slots->Describe();
#ifndef PERFSCALE_BENCHMARKS_BREAKPOINT_BREAKPOINT_SLOTS_H_
#define PERFSCALE_BENCHMARKS_BREAKPOINT_BREAKPOINT_SLOTS_H_

#include <string>

#include "absl/status/statusor.h"

namespace perfscale {

struct BreakpointSlots {
  int hardware = 0;  // the CPU's slots; where the architecture's count is unknown, `free`
  int free = 0;      // what this task can open now

  int in_use() const { return hardware - free; }
  // "the hardware has 4 breakpoint slots, 3 are in use elsewhere (1 free)".
  std::string Describe() const;
};

// The architecture's breakpoint slots, or 0 where this code does not know them.
int HardwareBreakpointSlots();

// Probes up to `limit` free slots. Errors other than ENOSPC (no PMU, no permission) are
// returned as they are; no free slot where the hardware's count is unknown is
// ResourceExhausted.
absl::StatusOr<BreakpointSlots> ProbeBreakpointSlots(int limit = 32);

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_BREAKPOINT_BREAKPOINT_SLOTS_H_
