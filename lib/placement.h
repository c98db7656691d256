// Named thread placements shared by families where one thread drives the work and
// other threads take part (a toggler and the threads that inherited its breakpoint; one
// side of a pipe and its peer). Where those threads sit decides whether the kernel's
// cross-CPU work is a local call or an IPI, so families offer it as a parameter:
//   unpinned    leave everything to the scheduler (what perf bench does);
//   same_cpu    the driver and the others on the first CPU of the caller's affinity;
//   other_cpus  the driver on the first CPU, the others on the remaining ones.
//
// Example:
//   absl::StatusOr<perfscale::Placement> p = perfscale::ResolvePlacement("other_cpus");
//   absl::StatusOr<std::unique_ptr<perfscale::ScopedAffinity>> pin = perfscale::PinDriver(*p);
//   ... start the other threads pinned to p->others ...
#ifndef PERFSCALE_LIB_PLACEMENT_H_
#define PERFSCALE_LIB_PLACEMENT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "lib/cpu_set.h"

namespace perfscale {

// The names ResolvePlacement accepts, for flag validation and help texts.
const std::vector<std::string>& PlacementNames();

// Both lists empty for "unpinned". FailedPrecondition when other_cpus is asked for and
// the calling thread may run on one CPU only; InvalidArgument for an unknown name.
struct Placement {
  std::vector<int> driver;
  std::vector<int> others;
};
absl::StatusOr<Placement> ResolvePlacement(absl::string_view name);

// Pins the calling thread to placement.driver until the returned owner is destroyed;
// nullptr (nothing to restore) when the placement leaves the driver unpinned.
absl::StatusOr<std::unique_ptr<ScopedAffinity>> PinDriver(const Placement& placement);

}  // namespace perfscale

#endif  // PERFSCALE_LIB_PLACEMENT_H_
