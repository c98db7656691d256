// Feeds arbitrary bytes to every text parser in lib/ and to the flag-value parsers. A parser may
// reject its input; it must never crash, hang, read out of bounds, or accept what it cannot
// round-trip.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "benchmarks/event_open/event_grid.h"
#include "benchmarks/harness/flags.h"
#include "benchmarks/harness/run_context.h"
#include "benchmarks/synthesize/parallel_synthesis.h"
#include "lib/capabilities.h"
#include "lib/cpu_set.h"
#include "lib/interrupts.h"
#include "lib/perf_attr.h"
#include "lib/tracefs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);

  absl::StatusOr<std::vector<int>> cpus = perfscale::ParseCpuList(text);
  if (cpus.ok()) {
    // What we format must parse back to the same CPUs.
    absl::StatusOr<std::vector<int>> again =
        perfscale::ParseCpuList(perfscale::FormatCpuList(*cpus));
    if (!again.ok() || *again != *cpus) std::abort();
  }
  perfscale::ParseIpiCounts(text).IgnoreError();
  perfscale::ParseTracepointName(text).IgnoreError();
  perfscale::ParseTracepointId(text).IgnoreError();
  perfscale::FindTracefsMount(text).IgnoreError();
  perfscale::ParseEffectiveCapabilities(text).IgnoreError();
  perfscale::ParseSysctlInt(text).IgnoreError();
  perfscale::ParseInt(text, -1000, 1000).IgnoreError();
  perfscale::ParseIntList(text, 0, 1 << 20).IgnoreError();
  perfscale::ParseChoiceList(text, {"mutex", "atomic", "per_worker"}).IgnoreError();
  perfscale::ParseSoftwareEventName(text).IgnoreError();
  perfscale::ParseGridOrder(text).IgnoreError();
  perfscale::ParseOutputStrategy(text).IgnoreError();
  perfscale::ParseOutputSink(text).IgnoreError();
  // A command line: the bytes split at NUL into arguments.
  std::vector<std::string> args = {"fuzz"};
  for (char c : text) {
    if (c == '\0') {
      args.emplace_back();
    } else {
      if (args.size() == 1) args.emplace_back();
      args.back().push_back(c);
    }
  }
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  perfscale::ParseFlags(static_cast<int>(argv.size()), argv.data()).IgnoreError();
  perfscale::DetectHypervisor(text, text);
  perfscale::ResolveGitHead([text](const std::string&) -> absl::StatusOr<std::string> {
    return std::string(text);
  }).IgnoreError();
  return 0;
}
