// The facts a reader needs to interpret or compare a run: kernel release, the
// perf_event_paranoid level, online CPUs, whether it ran under a hypervisor, the
// clocksource, whether hardware breakpoints fire there, and perfscale's git revision when
// known. Benchmarks' main adds them to
// every run's JSON "context", and nightly uses them to compare only like with like.
//
// Example:
//   for (const auto& [key, value] : perfscale::CollectRunContext().Fields())
//     benchmark::AddCustomContext(key, value);
#ifndef PERFSCALE_BENCHMARKS_HARNESS_RUN_CONTEXT_H_
#define PERFSCALE_BENCHMARKS_HARNESS_RUN_CONTEXT_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "lib/file_reader.h"

namespace perfscale {

struct RunContext {
  std::string kernel_release;
  std::string perf_event_paranoid;
  std::string online_cpus;  // kernel list format, e.g. "0-1"
  int num_online_cpus = 0;
  std::string hypervisor;  // "none", or the vendor/"yes" when the CPU flag says so
  std::string clocksource;
  // "yes", or "no: WHY" (BreakpointsFire): the families' breakpoints never need to fire,
  // but a reader comparing machines should know when a hypervisor never delivers them.
  std::string breakpoints_fire;
  std::string perfscale_revision;  // "unknown" when it cannot be found

  // Stable key names, in a stable order.
  std::vector<std::pair<std::string, std::string>> Fields() const;
};

// From /proc/cpuinfo text: "none" without the hypervisor flag; otherwise the vendor
// from /sys/hypervisor/type when given (empty when not), else "yes".
std::string DetectHypervisor(absl::string_view cpuinfo, absl::string_view hypervisor_type);

// The context's text for the breakpoint-firing probe's verdict.
std::string DescribeBreakpointsFire(const absl::Status& fires);

// Resolves a git HEAD: "ref: refs/heads/main" through the loose ref or packed-refs, or a
// detached hash. `read` reads files relative to the .git directory.
absl::StatusOr<std::string> ResolveGitHead(const TextFileReader& read_in_git_dir);

// Revision from $PERFSCALE_REVISION, else the git checkout at $BUILD_WORKSPACE_DIRECTORY
// (set by `bazel run`) or the current directory.
std::string FindPerfscaleRevision();

RunContext CollectRunContext();

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_HARNESS_RUN_CONTEXT_H_
