// Reads the inter-processor interrupt counts out of /proc/interrupts, so a benchmark can
// report how many IPIs one operation caused (the cost the breakpoint and event-open
// seeds trace back to smp_call_function_single).
//
// The counts are system-wide: anything else running adds to them. Benchmarks take the
// difference around their timed loop, outside it.
//
// Example:
//   perfscale::IpiCounts before = *perfscale::ReadIpiCounts();
//   ... work ...
//   uint64_t calls = perfscale::ReadIpiCounts()->function_call - before.function_call;
#ifndef PERFSCALE_LIB_INTERRUPTS_H_
#define PERFSCALE_LIB_INTERRUPTS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace perfscale {

struct IpiCounts {
  // Sums over all CPUs.
  uint64_t function_call = 0;  // x86 "CAL", arm64 "Function call interrupts"
  uint64_t tlb_shootdown = 0;  // x86 "TLB"
  uint64_t rescheduling = 0;   // x86 "RES"
  // Function-call IPIs received by each CPU column, in column order.
  std::vector<uint64_t> function_call_per_cpu;
};

// Parses the text of /proc/interrupts. Rows are recognized by their description, so
// x86 (CAL/TLB/RES) and arm64 (IPIn) layouts both work. A row that is absent counts 0;
// text without the CPU header line is an error.
absl::StatusOr<IpiCounts> ParseIpiCounts(absl::string_view text);

absl::StatusOr<IpiCounts> ReadIpiCounts();

// b - a, field by field (counts only grow, so a wrap means a reset: clamp to 0).
IpiCounts operator-(const IpiCounts& b, const IpiCounts& a);

}  // namespace perfscale

#endif  // PERFSCALE_LIB_INTERRUPTS_H_
