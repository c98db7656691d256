// Feeds arbitrary bytes to the parsers of /proc (maps, status, comm), of sysfs PMU
// descriptions, and to the perf record decoder: text and records from the kernel are
// trusted to be well formed by nothing in perfscale.
#include <cstdint>

#include "absl/strings/string_view.h"
#include "lib/perf_records.h"
#include "lib/pmu_sysfs.h"
#include "lib/proc_maps.h"
#include "lib/proc_status.h"

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
  return 0;
}
