#include "lib/tracefs.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "lib/errno_status.h"

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

// /proc/filesystems lines are "nodev\ttracefs" or "\text4": the name is the last field.
bool KernelHasTracefs(absl::string_view proc_filesystems) {
  for (absl::string_view line : absl::StrSplit(proc_filesystems, '\n')) {
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (!fields.empty() && fields.back() == "tracefs") return true;
  }
  return false;
}

absl::StatusOr<TracefsPlan> ReadAndPlanTracefs(bool may_mount) {
  absl::StatusOr<std::string> mounts = ReadTextFile("/proc/mounts");
  if (!mounts.ok()) return mounts.status();
  absl::StatusOr<std::string> filesystems = ReadTextFile("/proc/filesystems");
  if (!filesystems.ok()) return filesystems.status();
  return PlanTracefs(*mounts, *filesystems, may_mount);
}

// Mounts tracefs unless another process did while we waited for the mount point's lock.
absl::Status MountTracefs() {
  auto failed = [](const absl::Status& why) {
    return WithMessage(
        why, absl::StrCat("tracefs is not mounted and mounting it failed (", why.message(),
                          "): run '", kMountTracefsCommand, "' as root"));
  };
  int dir = open(kTracefsMountPoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return failed(ErrnoStatus(errno, absl::StrCat("open ", kTracefsMountPoint)));
  int locked;
  do {
    locked = flock(dir, LOCK_EX);
  } while (locked != 0 && errno == EINTR);
  absl::Status status = locked == 0 ? absl::OkStatus() : failed(ErrnoStatus(errno, "flock"));
  absl::StatusOr<TracefsPlan> plan = ReadAndPlanTracefs(true);
  if (status.ok() && plan.ok() && plan->mount) {
    if (mount("nodev", kTracefsMountPoint, "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) !=
        0) {
      status = failed(ErrnoStatus(errno, kMountTracefsCommand));
    } else {
      fprintf(stderr, "perfscale: tracefs was not mounted; mounted it at %s (as perf does)\n",
              kTracefsMountPoint);
    }
  }
  close(dir);  // drops the lock
  return status;
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
      absl::StrCat("tracefs is not mounted: mount it with '", kMountTracefsCommand, "'"));
}

absl::StatusOr<TracefsPlan> PlanTracefs(absl::string_view proc_mounts,
                                        absl::string_view proc_filesystems, bool may_mount) {
  if (absl::StatusOr<std::string> root = FindTracefsMount(proc_mounts); root.ok()) {
    return TracefsPlan{*root, false};
  }
  if (!KernelHasTracefs(proc_filesystems)) {
    return absl::UnimplementedError(
        "this kernel has no tracefs (it is not in /proc/filesystems; CONFIG_TRACING): "
        "tracepoints are unavailable");
  }
  if (may_mount) return TracefsPlan{kTracefsMountPoint, true};
  return absl::NotFoundError(
      absl::StrCat("tracefs is not mounted, and mounting it needs "
                   "CAP_SYS_ADMIN: run 'sudo ",
                   kMountTracefsCommand, "' (or tools/setup as root)"));
}

absl::StatusOr<std::string> EnsureTracefs(bool may_mount) {
  static std::mutex mu;
  static bool attempted = false;
  static std::optional<absl::Status> mount_failure;
  std::lock_guard<std::mutex> lock(mu);
  absl::StatusOr<TracefsPlan> plan = ReadAndPlanTracefs(may_mount && !attempted);
  if (!plan.ok()) {
    // Repeat why our one mount failed rather than "needs CAP_SYS_ADMIN".
    if (mount_failure && absl::IsNotFound(plan.status())) return *mount_failure;
    return plan.status();
  }
  if (!plan->mount) return plan->root;
  attempted = true;
  if (absl::Status mounted = MountTracefs(); !mounted.ok()) {
    mount_failure = mounted;
    return mounted;
  }
  plan = ReadAndPlanTracefs(false);
  if (!plan.ok()) return plan.status();
  return plan->root;
}

absl::StatusOr<uint64_t> ParseTracepointId(absl::string_view text) {
  uint64_t id = 0;
  absl::string_view body = absl::StripAsciiWhitespace(text);
  if (!absl::SimpleAtoi(body, &id) || body.empty() || body[0] == '-' || body[0] == '+') {
    return absl::InvalidArgumentError(absl::StrCat("bad tracepoint id '", body.substr(0, 32), "'"));
  }
  return id;
}

absl::StatusOr<std::string> TracefsRoot(const TextFileReader& reader) {
  absl::StatusOr<std::string> mounts = reader("/proc/mounts");
  if (!mounts.ok()) return mounts.status();
  return FindTracefsMount(*mounts);
}

absl::StatusOr<uint64_t> TracepointId(absl::string_view name, const TextFileReader& reader) {
  absl::StatusOr<TracepointName> parsed = ParseTracepointName(name);
  if (!parsed.ok()) return parsed.status();
  absl::StatusOr<std::string> root = TracefsRoot(reader);
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
