#include "benchmarks/trace_overhead/syscall_events.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "lib/tracefs.h"

namespace perfscale {

std::vector<std::string> SyscallTracepoints(absl::string_view syscall) {
  return {absl::StrCat("syscalls:sys_enter_", syscall),
          absl::StrCat("syscalls:sys_exit_", syscall)};
}

std::vector<std::string> ParseUserMemoryFields(absl::string_view format) {
  // "\tfield:__data_loc char[] __filename_val;\toffset:48;\tsize:4;\tsigned:0;"
  constexpr absl::string_view kDynamicString = "field:__data_loc char[] ";
  std::vector<std::string> fields;
  for (absl::string_view line : absl::StrSplit(format, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!absl::ConsumePrefix(&line, kDynamicString)) continue;
    absl::string_view name = line.substr(0, line.find(';'));
    if (name.size() > 6 && absl::StartsWith(name, "__") && absl::EndsWith(name, "_val")) {
      fields.emplace_back(name);
    }
  }
  return fields;
}

absl::StatusOr<std::vector<std::string>> UserMemoryFields(absl::string_view tracepoint,
                                                          const TextFileReader& reader) {
  absl::StatusOr<TracepointName> name = ParseTracepointName(tracepoint);
  if (!name.ok()) return name.status();
  absl::StatusOr<std::string> root = TracefsRoot(reader);
  if (!root.ok()) return root.status();
  const std::string path =
      absl::StrCat(*root, "/events/", name->subsystem, "/", name->event, "/format");
  absl::StatusOr<std::string> format = reader(path);
  if (absl::IsNotFound(format.status())) {
    return absl::NotFoundError(
        absl::StrCat("tracepoint ", tracepoint, " does not exist on this kernel (no ", path,
                     "): its syscall trace events need CONFIG_FTRACE_SYSCALLS"));
  }
  if (!format.ok()) return format.status();
  return ParseUserMemoryFields(*format);
}

}  // namespace perfscale
