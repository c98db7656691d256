#include "benchmarks/synthesize/proc_status.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "benchmarks/synthesize/text_lines.h"

namespace perfscale {
namespace {

// The kernel's TASK_COMM_LEN less the terminating NUL.
constexpr size_t kMaxCommBytes = 15;

absl::string_view SkipBlanks(absl::string_view text) {
  size_t i = 0;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
  return text.substr(i);
}

// A non-negative decimal that fits a pid_t, blanks around it allowed.
bool ParsePid(absl::string_view text, pid_t* out) {
  text = SkipBlanks(text);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  if (text.empty() || text.size() > 10) return false;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  if (value > INT32_MAX) return false;
  *out = static_cast<pid_t>(value);
  return true;
}

}  // namespace

absl::StatusOr<ProcStatus> ParseProcStatus(absl::string_view text) {
  ProcStatus status;
  bool have_name = false, have_tgid = false, have_ppid = false;
  bool have_kthread = false, have_vmpeak = false, have_threads = false;
  for (absl::string_view line : TextLines(text)) {
    size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    absl::string_view key = line.substr(0, colon);
    absl::string_view value = line.substr(colon + 1);
    if (key == "Name" && !have_name) {
      status.name = SkipBlanks(value);
      have_name = true;
    } else if (key == "Tgid" && !have_tgid) {
      if (!ParsePid(value, &status.tgid)) {
        return absl::InvalidArgumentError(
            absl::StrCat("status: bad Tgid value '", value.substr(0, 32), "'"));
      }
      have_tgid = true;
    } else if (key == "PPid" && !have_ppid) {
      if (!ParsePid(value, &status.ppid)) {
        return absl::InvalidArgumentError(
            absl::StrCat("status: bad PPid value '", value.substr(0, 32), "'"));
      }
      have_ppid = true;
    } else if (key == "Kthread" && !have_kthread) {
      absl::string_view flag = SkipBlanks(value);
      if (flag != "0" && flag != "1") {
        return absl::InvalidArgumentError(
            absl::StrCat("status: bad Kthread value '", flag.substr(0, 32), "'"));
      }
      status.kernel_thread = flag == "1";
      have_kthread = true;
    } else if (key == "VmPeak") {
      have_vmpeak = true;
    } else if (key == "Threads") {
      have_threads = true;
    }
    // Every field perf needs has been seen: the rest of the file is not read.
    if (have_name && have_tgid && have_ppid && (have_kthread || have_vmpeak)) break;
  }
  if (!have_name) return absl::InvalidArgumentError("status: no Name line");
  if (!have_tgid) return absl::InvalidArgumentError("status: no Tgid line");
  if (!have_ppid) return absl::InvalidArgumentError("status: no PPid line");
  if (!have_kthread) status.kernel_thread = !have_vmpeak && have_threads;
  return status;
}

absl::StatusOr<absl::string_view> ParseCommText(absl::string_view text) {
  absl::string_view name = text;
  if (!name.empty() && name.back() == '\n') name.remove_suffix(1);
  if (name.size() > kMaxCommBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("comm: ", name.size(), " bytes, the kernel allows ", kMaxCommBytes));
  }
  if (name.find('\n') != absl::string_view::npos || name.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError("comm: a newline or NUL inside the name");
  }
  return name;
}

}  // namespace perfscale
