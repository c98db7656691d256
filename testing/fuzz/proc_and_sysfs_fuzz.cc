// Feeds arbitrary bytes to the parsers of /proc (maps, status, comm, kallsyms), of sysfs
// PMU descriptions, of tracefs listings and event formats, of ELF symbol tables, to the
// perf record decoder, to --profile's sample parser and callchain summary, and to the
// probe-site classifier: text and records from the kernel are trusted to be well formed by
// nothing in perfscale.
#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

#include "absl/strings/string_view.h"
#include "benchmarks/event_open/pmu_sysfs.h"
#include "benchmarks/harness/cpu_profiler.h"
#include "benchmarks/harness/profile_summary.h"
#include "benchmarks/synthesize/perf_records.h"
#include "benchmarks/synthesize/proc_maps.h"
#include "benchmarks/synthesize/proc_status.h"
#include "benchmarks/trace_overhead/syscall_events.h"
#include "benchmarks/trace_overhead/trace_recorder.h"
#include "benchmarks/uprobe/elf_offset.h"
#include "benchmarks/uprobe/probe_sites.h"
#include "benchmarks/uprobe/uprobe_pmu.h"
#include "lib/symbols.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  perfscale::ParseMapsLine(text).IgnoreError();
  perfscale::ParseMaps(text).IgnoreError();
  perfscale::ParseProcStatus(text).IgnoreError();
  perfscale::ParseCommText(text).IgnoreError();
  perfscale::ParsePmuType(text).IgnoreError();
  perfscale::ParsePmuFormat(text).IgnoreError();
  perfscale::ParseEventTerms(text).IgnoreError();
  perfscale::ParsePmuEventName(text).IgnoreError();
  perfscale::ParsePmuCaching(text).IgnoreError();
  perfscale::DecodeRecords(text).IgnoreError();
  perfscale::ParseKallsyms(text).IgnoreError();
  absl::Span<const uint8_t> bytes(data, size);
  perfscale::ParseElfFunctions(bytes).IgnoreError();
  // A uprobe's file offset: any address the bytes' program headers may or may not hold.
  uint64_t vaddr = 0;
  if (size > 0) std::memcpy(&vaddr, data, size < sizeof(vaddr) ? size : sizeof(vaddr));
  perfscale::ElfFileOffset(bytes, vaddr).IgnoreError();
  perfscale::ElfFileOffset(bytes, 0x401000).IgnoreError();
  perfscale::ParseConfigBit(text).IgnoreError();
  perfscale::SubsystemTracepoints(text, "lock");
  perfscale::ParseUserMemoryFields(text);
  // The bytes as a site as linked and as read back: any split.
  const size_t half = size / 2;
  perfscale::ClassifySitePatch(bytes.subspan(0, half), bytes.subspan(half));
  perfscale::HexBytes(bytes);
  perfscale::ParseProfileSample(bytes).IgnoreError();
  // The bytes as one callchain, context markers and all.
  std::vector<uint64_t> chain(size / 8);
  if (!chain.empty()) std::memcpy(chain.data(), data, chain.size() * 8);
  std::map<std::vector<uint64_t>, uint64_t> chains = {{chain, 1}};
  perfscale::ProfileSummary summary = perfscale::Summarize(
      perfscale::ResolveChains(chains,
                               [](uint64_t address, bool kernel) {
                                 return perfscale::ResolvedFrame{
                                     address % 3 == 0 ? perfscale::kUnknownSymbol : "f",
                                     kernel ? "[kernel.kallsyms]" : perfscale::kUnknownDso};
                               }),
      5);
  perfscale::FormatProfile(summary, 5);
  perfscale::ProfileSummaryJson(summary);
  return 0;
}
