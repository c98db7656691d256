#include "lib/interrupts.h"

#include <algorithm>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "lib/file_reader.h"

namespace perfscale {
namespace {

enum class Row { kOther, kFunctionCall, kTlb, kRescheduling };

Row Classify(absl::string_view label, absl::string_view rest) {
  if (label == "CAL" || absl::StrContains(rest, "Function call interrupts")) {
    return Row::kFunctionCall;
  }
  if (label == "TLB" || absl::StrContains(rest, "TLB shootdowns")) return Row::kTlb;
  if (label == "RES" || absl::StrContains(rest, "Rescheduling interrupts")) {
    return Row::kRescheduling;
  }
  return Row::kOther;
}

}  // namespace

absl::StatusOr<IpiCounts> ParseIpiCounts(absl::string_view text) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  size_t num_cpus = 0;
  size_t first_row = 0;
  for (; first_row < lines.size(); ++first_row) {
    absl::string_view header = absl::StripAsciiWhitespace(lines[first_row]);
    if (header.empty()) continue;
    for (absl::string_view column : absl::StrSplit(header, ' ', absl::SkipEmpty())) {
      if (!absl::StartsWith(column, "CPU")) {
        return absl::InvalidArgumentError(absl::StrCat("/proc/interrupts: header has '", column,
                                                       "' where a CPUn column was expected"));
      }
      ++num_cpus;
    }
    ++first_row;
    break;
  }
  if (num_cpus == 0) {
    return absl::InvalidArgumentError("/proc/interrupts: no CPU header line");
  }

  IpiCounts counts;
  counts.function_call_per_cpu.assign(num_cpus, 0);
  for (size_t i = first_row; i < lines.size(); ++i) {
    absl::string_view line = lines[i];
    size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    absl::string_view label = absl::StripAsciiWhitespace(line.substr(0, colon));
    std::vector<absl::string_view> fields =
        absl::StrSplit(line.substr(colon + 1), ' ', absl::SkipEmpty());
    Row row = Classify(label, line.substr(colon + 1));
    if (row == Row::kOther) continue;
    uint64_t total = 0;
    // Rows can be shorter than the header (e.g. ERR/MIS have one column); the numbers
    // come first, then the description.
    for (size_t cpu = 0; cpu < std::min(num_cpus, fields.size()); ++cpu) {
      uint64_t value = 0;
      if (!absl::SimpleAtoi(fields[cpu], &value)) break;
      total += value;
      if (row == Row::kFunctionCall) counts.function_call_per_cpu[cpu] += value;
    }
    switch (row) {
      case Row::kFunctionCall:
        counts.function_call += total;
        break;
      case Row::kTlb:
        counts.tlb_shootdown += total;
        break;
      case Row::kRescheduling:
        counts.rescheduling += total;
        break;
      case Row::kOther:
        break;
    }
  }
  return counts;
}

absl::StatusOr<IpiCounts> ReadIpiCounts() {
  absl::StatusOr<std::string> text = ReadTextFile("/proc/interrupts");
  if (!text.ok()) return text.status();
  return ParseIpiCounts(*text);
}

IpiCounts operator-(const IpiCounts& b, const IpiCounts& a) {
  auto sub = [](uint64_t x, uint64_t y) { return x >= y ? x - y : 0; };
  IpiCounts d;
  d.function_call = sub(b.function_call, a.function_call);
  d.tlb_shootdown = sub(b.tlb_shootdown, a.tlb_shootdown);
  d.rescheduling = sub(b.rescheduling, a.rescheduling);
  d.function_call_per_cpu.resize(b.function_call_per_cpu.size());
  for (size_t i = 0; i < b.function_call_per_cpu.size(); ++i) {
    uint64_t before = i < a.function_call_per_cpu.size() ? a.function_call_per_cpu[i] : 0;
    d.function_call_per_cpu[i] = sub(b.function_call_per_cpu[i], before);
  }
  return d;
}

}  // namespace perfscale
