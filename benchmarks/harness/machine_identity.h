// What makes two machines the same, for the run's context: CPU model, microcode,
// sockets/cores/threads, NUMA nodes, memory, governor, boost and the kernel's
// mitigations (machine_* keys), and the kernel's build string and command line
// (kernel_* keys; the kernel under test, not part of a lineage). Read where the binary
// runs, so a guest records the guest's. The same keys and formats as
// tools/py/perfscale/history/identity.py, which digests the machine_* fields into the
// lineage (docs/fleet-history.md).
//
// Example:
//   for (const auto& [key, value] : perfscale::CollectMachineIdentity())
//     benchmark::AddCustomContext(key, value);
#ifndef PERFSCALE_BENCHMARKS_HARNESS_MACHINE_IDENTITY_H_
#define PERFSCALE_BENCHMARKS_HARNESS_MACHINE_IDENTITY_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace perfscale {

struct CpuTopology {
  std::string model = "unknown";
  std::string microcode = "unknown";
  int sockets = 0;
  int cores = 0;
  int threads = 0;
};

// From /proc/cpuinfo text: distinct physical ids, distinct (physical id, core id) pairs
// and processors (sockets 1 and cores = threads where the file has no topology).
CpuTopology ParseCpuinfo(absl::string_view cpuinfo);

// {"name": "status", ...} sorted by name, as Python's json.dumps(sort_keys=True) writes it.
std::string MitigationsJson(std::vector<std::pair<std::string, std::string>> mitigations);

// Memory in GiB, rounded half to even as Python's round(), from /proc/meminfo text.
long MemoryGib(absl::string_view meminfo);

// The fields, read from `root` + /proc and /sys paths ("" for this machine).
std::vector<std::pair<std::string, std::string>> CollectMachineIdentity(
    const std::string& root = "");

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_HARNESS_MACHINE_IDENTITY_H_
