// The kernel's `uprobe` PMU (perf_event_open with the PMU's dynamic type): a probe on one
// instruction of a file, counting hits, without tracefs or BPF.
//
// The event names its instruction with config1 (a pointer to the file's path) and
// config2 (the file offset, elf_offset.h); the `retprobe` bit of config, at the position
// /sys/bus/event_source/devices/uprobe/format/retprobe gives ("config:0"), makes it a
// uretprobe, which fires on the function's return instead. The kernel's perf_uprobe
// PMU wants CAP_PERFMON (or CAP_SYS_ADMIN) whatever perf_event_paranoid says; the open's
// refusal is explained with that, the paranoid level and the lockdown mode.
//
// Example:
//   absl::StatusOr<perfscale::UprobePmu> pmu = perfscale::ProbeUprobePmu();
//   absl::StatusOr<perfscale::PerfEvent> probe = perfscale::OpenUprobe(
//       *pmu, location, /*retprobe=*/false, /*pid=*/0, /*cpu=*/-1, /*inherit=*/true);
#ifndef PERFSCALE_BENCHMARKS_UPROBE_UPROBE_PMU_H_
#define PERFSCALE_BENCHMARKS_UPROBE_UPROBE_PMU_H_

#include <linux/perf_event.h>
#include <sys/types.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "benchmarks/uprobe/elf_offset.h"
#include "lib/perf_event.h"

namespace perfscale {

inline constexpr char kUprobePmuDir[] = "/sys/bus/event_source/devices/uprobe";

struct UprobePmu {
  uint32_t type = 0;
  int retprobe_bit = 0;  // bit of attr.config
};

// A one-bit field of a PMU's format file: "config:0\n" -> 0. Ranges ("config:32-63"),
// other fields (config1) and anything else are InvalidArgument.
absl::StatusOr<int> ParseConfigBit(absl::string_view text);

// Reads the PMU's type and retprobe bit under `dir`. NotFound (with the kernel option
// that is missing) when the PMU is not there.
absl::StatusOr<UprobePmu> ProbeUprobePmu(const std::string& dir = kUprobePmuDir);

// The counting attr for a probe of `location`; config1 points into location.path, which
// must outlive the open, and with `inherit` the event: the kernel reads the path again
// from that address for each inherited copy, when a thread or process is created
// (perf_uprobe_init; a path gone by then fails the clone with ENOENT).
perf_event_attr UprobeAttr(const UprobePmu& pmu, const CodeLocation& location, bool retprobe,
                           bool inherit);

// Opens the probe (pid/cpu as perf_event_open(2)), enabled. A refusal names the reason:
// the capability the PMU wants, perf_event_paranoid, lockdown (PermissionDenied); an
// instruction this kernel will not probe is Unimplemented (probe_sites.h).
absl::StatusOr<PerfEvent> OpenUprobe(const UprobePmu& pmu, const CodeLocation& location,
                                     bool retprobe, pid_t pid, int cpu, bool inherit);

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_UPROBE_UPROBE_PMU_H_
