#include "lib/perf_attr.h"

#include <linux/hw_breakpoint.h>

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace perfscale {
namespace {

perf_event_attr ZeroedAttr(uint32_t type, uint64_t config) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = type;
  attr.config = config;
  return attr;
}

uint32_t BreakpointType(BreakpointAccess access) {
  switch (access) {
    case BreakpointAccess::kRead:
      return HW_BREAKPOINT_R;
    case BreakpointAccess::kWrite:
      return HW_BREAKPOINT_W;
    case BreakpointAccess::kReadWrite:
      return HW_BREAKPOINT_RW;
    case BreakpointAccess::kExecute:
      return HW_BREAKPOINT_X;
  }
  return HW_BREAKPOINT_RW;
}

struct SoftwareEventName {
  const char* name;
  uint64_t config;
};

constexpr SoftwareEventName kSoftwareEvents[] = {
    {"cpu-clock", PERF_COUNT_SW_CPU_CLOCK},
    {"task-clock", PERF_COUNT_SW_TASK_CLOCK},
    {"page-faults", PERF_COUNT_SW_PAGE_FAULTS},
    {"faults", PERF_COUNT_SW_PAGE_FAULTS},
    {"context-switches", PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"cs", PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"cpu-migrations", PERF_COUNT_SW_CPU_MIGRATIONS},
    {"migrations", PERF_COUNT_SW_CPU_MIGRATIONS},
    {"minor-faults", PERF_COUNT_SW_PAGE_FAULTS_MIN},
    {"major-faults", PERF_COUNT_SW_PAGE_FAULTS_MAJ},
    {"alignment-faults", PERF_COUNT_SW_ALIGNMENT_FAULTS},
    {"emulation-faults", PERF_COUNT_SW_EMULATION_FAULTS},
    {"dummy", PERF_COUNT_SW_DUMMY},
};

}  // namespace

perf_event_attr BreakpointAttr(const BreakpointSpec& spec) {
  perf_event_attr attr = ZeroedAttr(PERF_TYPE_BREAKPOINT, 0);
  attr.bp_type = BreakpointType(spec.access);
  attr.bp_addr = reinterpret_cast<uint64_t>(spec.address);
  // Execute breakpoints must be sizeof(long) wide on x86.
  attr.bp_len =
      spec.access == BreakpointAccess::kExecute ? sizeof(long) : static_cast<uint64_t>(spec.length);
  attr.inherit = spec.inherit ? 1 : 0;
  attr.disabled = spec.disabled ? 1 : 0;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  return attr;
}

perf_event_attr SoftwareAttr(uint64_t config) { return ZeroedAttr(PERF_TYPE_SOFTWARE, config); }

absl::StatusOr<uint64_t> ParseSoftwareEventName(absl::string_view name) {
  std::string known;
  for (const SoftwareEventName& event : kSoftwareEvents) {
    if (name == event.name) return event.config;
    absl::StrAppend(&known, known.empty() ? "" : ", ", event.name);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown software event '", name, "' (known: ", known, ")"));
}

perf_event_attr TracepointAttr(uint64_t id) {
  perf_event_attr attr = ZeroedAttr(PERF_TYPE_TRACEPOINT, id);
  return attr;
}

}  // namespace perfscale
