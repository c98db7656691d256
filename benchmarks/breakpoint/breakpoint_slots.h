// How many hardware breakpoints this task can hold at once (x86: 4 debug registers).
// The kernel exposes no count, so this opens inheritable user-space breakpoints on the
// calling thread until the kernel says ENOSPC, then closes them all.
//
// Example:
//   absl::StatusOr<int> slots = perfscale::ProbeBreakpointSlots();
#ifndef PERFSCALE_BENCHMARKS_BREAKPOINT_BREAKPOINT_SLOTS_H_
#define PERFSCALE_BENCHMARKS_BREAKPOINT_BREAKPOINT_SLOTS_H_

#include "absl/status/statusor.h"

namespace perfscale {

// Probes up to `limit` slots. Errors other than ENOSPC (no PMU, no permission) are
// returned as they are.
absl::StatusOr<int> ProbeBreakpointSlots(int limit = 32);

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_BREAKPOINT_BREAKPOINT_SLOTS_H_
