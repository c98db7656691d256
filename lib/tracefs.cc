#include "lib/tracefs.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace perfscale {
namespace {

bool IsTracefsNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

bool IsValidPart(absl::string_view part) {
  if (part.empty() || part == "." || part == "..") return false;
  for (char c : part) {
    if (!IsTracefsNameChar(c)) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<TracepointName> ParseTracepointName(absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  if (parts.size() != 2 || !IsValidPart(parts[0]) || !IsValidPart(parts[1])) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad tracepoint name '", text, "': expected subsystem:event, e.g. sched:sched_switch"));
  }
  return TracepointName{std::string(parts[0]), std::string(parts[1])};
}

absl::StatusOr<std::string> FindTracefsMount(absl::string_view proc_mounts) {
  std::string debugfs_tracing;
  for (absl::string_view line : absl::StrSplit(proc_mounts, '\n')) {
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (fields.size() < 3) continue;
    if (fields[2] == "tracefs") return std::string(fields[1]);
    if (fields[2] == "debugfs" && debugfs_tracing.empty()) {
      debugfs_tracing = absl::StrCat(fields[1], "/tracing");
    }
  }
  if (!debugfs_tracing.empty()) return debugfs_tracing;
  return absl::NotFoundError(
      "tracefs is not mounted: mount it with 'mount -t tracefs nodev /sys/kernel/tracing'");
}

absl::StatusOr<uint64_t> ParseTracepointId(absl::string_view text) {
  uint64_t id = 0;
  absl::string_view body = absl::StripAsciiWhitespace(text);
  if (!absl::SimpleAtoi(body, &id) || body.empty() || body[0] == '-' || body[0] == '+') {
    return absl::InvalidArgumentError(absl::StrCat("bad tracepoint id '", body.substr(0, 32), "'"));
  }
  return id;
}

absl::StatusOr<uint64_t> TracepointId(absl::string_view name, const TextFileReader& reader) {
  absl::StatusOr<TracepointName> parsed = ParseTracepointName(name);
  if (!parsed.ok()) return parsed.status();
  absl::StatusOr<std::string> mounts = reader("/proc/mounts");
  if (!mounts.ok()) return mounts.status();
  absl::StatusOr<std::string> root = FindTracefsMount(*mounts);
  if (!root.ok()) return root.status();
  std::string path = absl::StrCat(*root, "/events/", parsed->subsystem, "/", parsed->event, "/id");
  absl::StatusOr<std::string> text = reader(path);
  if (!text.ok()) {
    if (absl::IsNotFound(text.status())) {
      return absl::NotFoundError(
          absl::StrCat("tracepoint ", name, " does not exist on this kernel (no ", path,
                       "); 'perf list tracepoint' shows the available ones"));
    }
    if (absl::IsPermissionDenied(text.status())) {
      return absl::PermissionDeniedError(absl::StrCat(
          "cannot read ", path, ": tracefs needs root (or 'chmod -R o+rX ", *root, "')"));
    }
    return text.status();
  }
  absl::StatusOr<uint64_t> id = ParseTracepointId(*text);
  if (!id.ok()) return absl::InternalError(absl::StrCat(path, ": ", id.status().message()));
  return id;
}

}  // namespace perfscale
