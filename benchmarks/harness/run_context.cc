#include "benchmarks/harness/run_context.h"

#include <sys/utsname.h>

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "lib/capabilities.h"
#include "lib/cpu_set.h"

namespace perfscale {
namespace {

std::string Trimmed(const absl::StatusOr<std::string>& text, const char* fallback) {
  if (!text.ok()) return fallback;
  std::string value(absl::StripAsciiWhitespace(*text));
  return value.empty() ? fallback : value;
}

bool IsHexHash(absl::string_view text) {
  return text.size() >= 7 && text.size() <= 64 &&
         std::all_of(text.begin(), text.end(), absl::ascii_isxdigit);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> RunContext::Fields() const {
  return {
      {"kernel_release", kernel_release},
      {"perf_event_paranoid", perf_event_paranoid},
      {"online_cpus", online_cpus},
      {"num_online_cpus", absl::StrCat(num_online_cpus)},
      {"hypervisor", hypervisor},
      {"clocksource", clocksource},
      {"breakpoints_fire", breakpoints_fire},
      {"perfscale_revision", perfscale_revision},
  };
}

std::string DetectHypervisor(absl::string_view cpuinfo, absl::string_view hypervisor_type) {
  bool flagged = false;
  for (absl::string_view line : absl::StrSplit(cpuinfo, '\n')) {
    if (!absl::StartsWith(line, "flags")) continue;
    size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    for (absl::string_view flag : absl::StrSplit(line.substr(colon + 1), ' ', absl::SkipEmpty())) {
      if (flag == "hypervisor") flagged = true;
    }
    break;
  }
  if (!flagged) return "none";
  std::string vendor(absl::StripAsciiWhitespace(hypervisor_type));
  return vendor.empty() ? "yes" : vendor;
}

absl::StatusOr<std::string> ResolveGitHead(const TextFileReader& read_in_git_dir) {
  absl::StatusOr<std::string> head = read_in_git_dir("HEAD");
  if (!head.ok()) return head.status();
  absl::string_view value = absl::StripAsciiWhitespace(*head);
  if (IsHexHash(value)) return std::string(value);
  if (!absl::StartsWith(value, "ref: ")) {
    return absl::InvalidArgumentError("HEAD is neither a hash nor a ref");
  }
  std::string ref(absl::StripAsciiWhitespace(value.substr(5)));
  if (ref.find("..") != std::string::npos) {
    return absl::InvalidArgumentError("HEAD names an unsafe ref");
  }
  if (absl::StatusOr<std::string> loose = read_in_git_dir(ref); loose.ok()) {
    absl::string_view hash = absl::StripAsciiWhitespace(*loose);
    if (IsHexHash(hash)) return std::string(hash);
  }
  if (absl::StatusOr<std::string> packed = read_in_git_dir("packed-refs"); packed.ok()) {
    for (absl::string_view line : absl::StrSplit(*packed, '\n')) {
      std::vector<absl::string_view> parts = absl::StrSplit(line, ' ');
      if (parts.size() == 2 && absl::StripAsciiWhitespace(parts[1]) == ref && IsHexHash(parts[0])) {
        return std::string(parts[0]);
      }
    }
  }
  return absl::NotFoundError(absl::StrCat("ref ", ref, " has no commit yet"));
}

std::string DescribeBreakpointsFire(const absl::Status& fires) {
  return fires.ok() ? "yes" : absl::StrCat("no: ", fires.message());
}

std::string FindPerfscaleRevision() {
  if (const char* env = std::getenv("PERFSCALE_REVISION"); env != nullptr && *env != '\0') {
    return env;
  }
  const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  std::string git_dir = absl::StrCat(workspace != nullptr ? workspace : ".", "/.git/");
  absl::StatusOr<std::string> revision =
      ResolveGitHead([&git_dir](const std::string& path) { return ReadTextFile(git_dir + path); });
  return revision.ok() ? *revision : "unknown";
}

RunContext CollectRunContext() {
  RunContext context;
  utsname names{};
  context.kernel_release = uname(&names) == 0 ? names.release : "unknown";
  context.perf_event_paranoid =
      Trimmed(ReadTextFile("/proc/sys/kernel/perf_event_paranoid"), "unsupported");
  if (absl::StatusOr<std::vector<int>> online = OnlineCpus(); online.ok()) {
    context.online_cpus = FormatCpuList(*online);
    context.num_online_cpus = static_cast<int>(online->size());
  } else {
    context.online_cpus = "unknown";
  }
  absl::StatusOr<std::string> cpuinfo = ReadTextFile("/proc/cpuinfo");
  absl::StatusOr<std::string> hypervisor_type = ReadTextFile("/sys/hypervisor/type");
  context.hypervisor =
      DetectHypervisor(cpuinfo.ok() ? *cpuinfo : "", hypervisor_type.ok() ? *hypervisor_type : "");
  context.clocksource = Trimmed(
      ReadTextFile("/sys/devices/system/clocksource/clocksource0/current_clocksource"), "unknown");
  context.breakpoints_fire =
      DescribeBreakpointsFire(ProbeCapabilities().RequireFiringBreakpoints());
  context.perfscale_revision = FindPerfscaleRevision();
  return context;
}

}  // namespace perfscale
