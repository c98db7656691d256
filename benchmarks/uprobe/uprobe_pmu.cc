#include "benchmarks/uprobe/uprobe_pmu.h"

#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "lib/capabilities.h"
#include "lib/errno_status.h"
#include "lib/file_reader.h"

namespace perfscale {
namespace {

// Linux's internal ENOTSUPP, which perf_event_open returns for an instruction the uprobe
// code will not probe (no libc names it).
constexpr int kEnotsupp = 524;

// "[none] integrity confidentiality" -> "none"; empty when the file is absent.
std::string LockdownMode() {
  absl::StatusOr<std::string> text = ReadTextFile("/sys/kernel/security/lockdown");
  if (!text.ok()) return "";
  size_t open = text->find('['), close = text->find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return "";
  return text->substr(open + 1, close - open - 1);
}

}  // namespace

absl::StatusOr<int> ParseConfigBit(absl::string_view text) {
  absl::string_view body = absl::StripAsciiWhitespace(text);
  int bit = -1;
  if (!absl::ConsumePrefix(&body, "config:") || !absl::SimpleAtoi(body, &bit) || bit < 0 ||
      bit > 63 || !absl::ascii_isdigit(static_cast<unsigned char>(body.front()))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected a format of one bit of config (config:N), got '", text.substr(0, 32), "'"));
  }
  return bit;
}

absl::StatusOr<UprobePmu> ProbeUprobePmu(const std::string& dir) {
  absl::StatusOr<std::string> type_text = ReadTextFile(dir + "/type");
  if (!type_text.ok()) {
    return absl::NotFoundError(absl::StrCat(
        "no uprobe PMU: ", dir, "/type is missing (CONFIG_UPROBE_EVENTS, Linux 4.17 or later): ",
        type_text.status().message()));
  }
  absl::StatusOr<int64_t> type = ParseSysctlInt(*type_text);
  if (!type.ok() || *type < 0 || *type > UINT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(dir, "/type: '", *type_text, "'"));
  }
  absl::StatusOr<std::string> format = ReadTextFile(dir + "/format/retprobe");
  if (!format.ok()) {
    return absl::NotFoundError(
        absl::StrCat("the uprobe PMU has no retprobe format: ", format.status().message()));
  }
  absl::StatusOr<int> bit = ParseConfigBit(*format);
  if (!bit.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, "/format/retprobe: ", bit.status().message()));
  }
  return UprobePmu{static_cast<uint32_t>(*type), *bit};
}

perf_event_attr UprobeAttr(const UprobePmu& pmu, const CodeLocation& location, bool retprobe,
                           bool inherit) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = pmu.type;
  attr.config = retprobe ? uint64_t{1} << pmu.retprobe_bit : 0;
  attr.config1 = reinterpret_cast<uintptr_t>(location.path.c_str());  // uprobe_path
  attr.config2 = location.offset;                                     // probe_offset
  attr.inherit = inherit ? 1 : 0;
  return attr;
}

absl::StatusOr<PerfEvent> OpenUprobe(const UprobePmu& pmu, const CodeLocation& location,
                                     bool retprobe, pid_t pid, int cpu, bool inherit) {
  perf_event_attr attr = UprobeAttr(pmu, location, retprobe, inherit);
  absl::StatusOr<PerfEvent> event = PerfEvent::Open(attr, pid, cpu);
  if (event.ok()) return event;
  std::optional<int> err = StatusErrno(event.status());
  if (err == kEnotsupp) {
    // The kernel's own errno, leaked: uprobe_register found an instruction its x86
    // decoder tables (or a prefix check) refuse, which no privilege changes.
    return absl::UnimplementedError(absl::StrCat(
        "the kernel refuses a uprobe on the instruction at ", location.path, "+0x",
        absl::Hex(location.offset), " (errno 524, ENOTSUPP: arch_uprobe_analyze_insn)"));
  }
  if (err != EACCES && err != EPERM) return event.status();
  // perf_uprobe_event_init refuses without CAP_PERFMON/CAP_SYS_ADMIN at every paranoid
  // level (so the generic advice to lower perf_event_paranoid does not apply); a
  // locked-down kernel may refuse even those.
  Capabilities caps = ProbeCapabilities();
  std::string why = absl::StrCat(
      ErrnoStatus(*err,
                  absl::StrCat("perf_event_open of the uprobe PMU (pid ", pid, ", cpu ", cpu, ")"))
          .message(),
      ": the uprobe PMU needs CAP_PERFMON or CAP_SYS_ADMIN whatever "
      "kernel.perf_event_paranoid says (it is ",
      caps.perf_event_paranoid ? absl::StrCat(*caps.perf_event_paranoid) : "absent",
      "; root: ", caps.is_root ? "yes" : "no", ", CAP_PERFMON: ", caps.cap_perfmon ? "yes" : "no",
      ")");
  std::string lockdown = LockdownMode();
  if (!lockdown.empty() && lockdown != "none") {
    absl::StrAppend(&why, "; the kernel is locked down (", lockdown,
                    "), which may refuse it to root as well");
  } else if (caps.is_root || caps.cap_perfmon) {
    absl::StrAppend(&why, "; with the capability, an LSM (SELinux's perf_event class) refused it");
  } else {
    absl::StrAppend(&why, ": run as root or 'sudo setcap cap_perfmon+ep BINARY'");
  }
  return absl::PermissionDeniedError(why);
}

}  // namespace perfscale
