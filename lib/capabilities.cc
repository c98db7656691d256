#include "lib/capabilities.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "lib/errno_status.h"
#include "lib/file_reader.h"
#include "lib/perf_attr.h"
#include "lib/perf_event.h"
#include "lib/tracefs.h"

namespace perfscale {
namespace {

std::optional<int64_t> ReadSysctl(const std::string& path) {
  absl::StatusOr<std::string> text = ReadTextFile(path);
  if (!text.ok()) return std::nullopt;
  absl::StatusOr<int64_t> value = ParseSysctlInt(*text);
  if (!value.ok()) return std::nullopt;
  return *value;
}

// Threads that exist system-wide: the 4th field of /proc/loadavg is "running/total".
std::optional<int64_t> SystemThreadCount() {
  absl::StatusOr<std::string> text = ReadTextFile("/proc/loadavg");
  if (!text.ok()) return std::nullopt;
  std::vector<absl::string_view> fields = absl::StrSplit(*text, ' ', absl::SkipEmpty());
  if (fields.size() < 4) return std::nullopt;
  std::vector<absl::string_view> ratio = absl::StrSplit(fields[3], '/');
  int64_t total = 0;
  if (ratio.size() != 2 || !absl::SimpleAtoi(ratio[1], &total)) return std::nullopt;
  return total;
}

// The pids controller of our cgroup (v2), when it sets a limit.
std::optional<int64_t> CgroupPidsHeadroom() {
  absl::StatusOr<std::string> cgroup = ReadTextFile("/proc/self/cgroup");
  if (!cgroup.ok()) return std::nullopt;
  for (absl::string_view line : absl::StrSplit(*cgroup, '\n')) {
    if (!absl::StartsWith(line, "0::")) continue;
    std::string dir = absl::StrCat("/sys/fs/cgroup", absl::StripAsciiWhitespace(line.substr(3)));
    absl::StatusOr<std::string> max_text = ReadTextFile(dir + "/pids.max");
    absl::StatusOr<std::string> current_text = ReadTextFile(dir + "/pids.current");
    if (!max_text.ok() || !current_text.ok()) return std::nullopt;
    absl::StatusOr<int64_t> max = ParseSysctlInt(*max_text);  // "max" fails: no limit
    absl::StatusOr<int64_t> current = ParseSysctlInt(*current_text);
    if (!max.ok() || !current.ok()) return std::nullopt;
    return *max - *current;
  }
  return std::nullopt;
}

// The tasks (threads) whose real user is `uid`, system-wide: what RLIMIT_NPROC counts,
// this process's own threads included.
int64_t UserTaskCount(uid_t uid) {
  int64_t tasks = 0;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return 0;
  while (dirent* entry = readdir(proc)) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(entry->d_name[0]))) continue;
    absl::StatusOr<std::string> status =
        ReadTextFile(absl::StrCat("/proc/", entry->d_name, "/status"));
    if (!status.ok()) continue;  // gone meanwhile
    int64_t real_uid = -1;
    int64_t threads = 0;
    for (absl::string_view line : absl::StrSplit(*status, '\n')) {
      if (absl::ConsumePrefix(&line, "Uid:")) {
        std::vector<absl::string_view> ids =
            absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
        if (ids.empty() || !absl::SimpleAtoi(ids[0], &real_uid)) real_uid = -1;
      } else if (absl::ConsumePrefix(&line, "Threads:")) {
        if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &threads)) threads = 0;
      }
    }
    if (real_uid == static_cast<int64_t>(uid)) tasks += threads;
  }
  closedir(proc);
  return tasks;
}

uint64_t ThreadBudget(bool exempt_from_nproc) {
  int64_t budget = INT64_MAX;
  std::optional<int64_t> threads_max = ReadSysctl("/proc/sys/kernel/threads-max");
  std::optional<int64_t> pid_max = ReadSysctl("/proc/sys/kernel/pid_max");
  std::optional<int64_t> in_use = SystemThreadCount();
  int64_t used = in_use.value_or(0);
  if (threads_max) budget = std::min(budget, *threads_max - used);
  if (pid_max) budget = std::min(budget, *pid_max - used);
  if (std::optional<int64_t> cgroup = CgroupPidsHeadroom()) budget = std::min(budget, *cgroup);
  rlimit nproc{};
  if (!exempt_from_nproc && getrlimit(RLIMIT_NPROC, &nproc) == 0 &&
      nproc.rlim_cur != RLIM_INFINITY) {
    // The kernel refuses a new task once the user's count reaches the limit, and the
    // count already holds this process's threads and the user's other tasks.
    int64_t limit = nproc.rlim_cur > static_cast<rlim_t>(INT64_MAX)
                        ? INT64_MAX
                        : static_cast<int64_t>(nproc.rlim_cur);
    budget = std::min(budget, limit - UserTaskCount(getuid()));
  }
  return budget < 0 ? 0 : static_cast<uint64_t>(budget);
}

}  // namespace

absl::StatusOr<uint64_t> ParseEffectiveCapabilities(absl::string_view proc_status) {
  for (absl::string_view line : absl::StrSplit(proc_status, '\n')) {
    if (!absl::StartsWith(line, "CapEff:")) continue;
    absl::string_view hex = absl::StripAsciiWhitespace(line.substr(7));
    uint64_t mask = 0;
    if (hex.empty() || hex.size() > 16 || !absl::SimpleHexAtoi(hex, &mask) ||
        !std::all_of(hex.begin(), hex.end(), absl::ascii_isxdigit)) {
      return absl::InvalidArgumentError(absl::StrCat("bad CapEff value '", hex, "'"));
    }
    return mask;
  }
  return absl::InvalidArgumentError("no CapEff line in /proc/self/status");
}

absl::StatusOr<int64_t> ParseSysctlInt(absl::string_view text) {
  absl::string_view body = absl::StripAsciiWhitespace(text);
  int64_t value = 0;
  if (body.empty() || !absl::SimpleAtoi(body, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected an integer, got '", body.substr(0, 32), "'"));
  }
  return value;
}

bool Capabilities::CanProfileSystemWide() const {
  return cap_perfmon || cap_sys_admin ||
         (perf_event_paranoid.has_value() && *perf_event_paranoid <= 0);
}

absl::Status Capabilities::RequirePerfEvents() const {
  if (!perf_event_paranoid) {
    return absl::UnimplementedError(
        "this kernel has no perf_event support (/proc/sys/kernel/perf_event_paranoid is "
        "missing; CONFIG_PERF_EVENTS)");
  }
  // No verdict from the level alone: mainline kernels let a user open its own user-space
  // events at every level, distributions' patches refuse them above 2. The open decides,
  // and its refusal is explained with the level (ExplainPerfEventOpenError).
  return absl::OkStatus();
}

absl::Status Capabilities::RequireBreakpointPmu() const {
  if (absl::Status perf = RequirePerfEvents(); !perf.ok()) return perf;
  if (!breakpoint_pmu) {
    return absl::NotFoundError(
        "no hardware breakpoint support: /sys/bus/event_source/devices/breakpoint is "
        "missing (CONFIG_HAVE_HW_BREAKPOINT)");
  }
  return absl::OkStatus();
}

absl::Status Capabilities::RequireFiringBreakpoints() const {
  if (absl::Status pmu = RequireBreakpointPmu(); !pmu.ok()) return pmu;
  return BreakpointsFire();
}

absl::Status JudgeBreakpointProbe(const absl::Status& opened, absl::StatusOr<uint64_t> counted) {
  if (!opened.ok()) return opened;
  if (!counted.ok()) return counted.status();
  if (*counted == static_cast<uint64_t>(kBreakpointProbeWrites)) return absl::OkStatus();
  if (*counted == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "hardware breakpoints open but never fire on this machine: a write breakpoint counted "
        "0 of ",
        kBreakpointProbeWrites,
        " writes (the hypervisor does not deliver debug exceptions to this guest); what needs "
        "a breakpoint to fire cannot run here, the families' figures (breakpoints that never "
        "fire) stand"));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("hardware breakpoints fire unreliably on this machine: a write breakpoint "
                   "counted ",
                   *counted, " of ", kBreakpointProbeWrites, " writes"));
}

absl::Status BreakpointsFire() {
  static const absl::Status* const verdict = [] {
    // What a machine whose breakpoints never fire answers, on a machine where they do: so
    // that the skips and the context of such a machine can be seen and tested anywhere.
    if (const char* assume = std::getenv(kAssumeBreakpointsNeverFire);
        assume != nullptr && std::string(assume) == "1") {
      absl::Status never = JudgeBreakpointProbe(absl::OkStatus(), uint64_t{0});
      return new absl::Status(
          never.code(),
          absl::StrCat(never.message(), " (assumed: ", kAssumeBreakpointsNeverFire, "=1)"));
    }
    static volatile uint32_t watched_word = 0;
    BreakpointSpec spec;
    spec.address = &watched_word;
    spec.length = sizeof(watched_word);
    spec.access = BreakpointAccess::kWrite;
    absl::StatusOr<PerfEvent> event = PerfEvent::Open(BreakpointAttr(spec), 0, -1);
    absl::StatusOr<uint64_t> counted = absl::UnknownError("not read");
    if (event.ok()) {
      for (int i = 0; i < kBreakpointProbeWrites; ++i) watched_word = static_cast<uint32_t>(i);
      counted = event->ReadCount();
    }
    return new absl::Status(JudgeBreakpointProbe(event.status(), std::move(counted)));
  }();
  return *verdict;
}

absl::Status Capabilities::RequireSystemWide() const {
  if (absl::Status perf = RequirePerfEvents(); !perf.ok()) return perf;
  if (!CanProfileSystemWide()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "per-CPU events need root, CAP_PERFMON or kernel.perf_event_paranoid <= 0 (it is ",
        *perf_event_paranoid,
        "): 'sudo sysctl kernel.perf_event_paranoid=0' or "
        "'sudo setcap cap_perfmon+ep BINARY'"));
  }
  return absl::OkStatus();
}

absl::Status Capabilities::RequireTracefs() const {
  std::string root;
  if (tracefs) {
    root = *tracefs;
  } else {
    absl::StatusOr<std::string> mounted = EnsureTracefs(cap_sys_admin);
    if (!mounted.ok()) return mounted.status();
    root = *mounted;
  }
  if (access(root.c_str(), R_OK | X_OK) != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot read tracefs at ", root, ": run as root"));
  }
  return absl::OkStatus();
}

absl::Status Capabilities::RequireThreads(uint64_t needed) const {
  if (needed > thread_budget) {
    return absl::ResourceExhaustedError(
        absl::StrCat("needs ", needed, " threads but this process may create about ", thread_budget,
                     " more (kernel.threads-max, kernel.pid_max, RLIMIT_NPROC, cgroup pids.max)"));
  }
  return absl::OkStatus();
}

Capabilities ProbeCapabilities() {
  Capabilities caps;
  caps.perf_event_paranoid = ReadSysctl("/proc/sys/kernel/perf_event_paranoid");
  caps.is_root = geteuid() == 0;
  if (absl::StatusOr<std::string> status = ReadTextFile("/proc/self/status"); status.ok()) {
    if (absl::StatusOr<uint64_t> mask = ParseEffectiveCapabilities(*status); mask.ok()) {
      caps.cap_perfmon = (*mask >> kCapPerfmon) & 1;
      caps.cap_sys_admin = (*mask >> kCapSysAdmin) & 1;
    }
  }
  caps.breakpoint_pmu = access("/sys/bus/event_source/devices/breakpoint", F_OK) == 0;
  if (absl::StatusOr<std::string> mounts = ReadTextFile("/proc/mounts"); mounts.ok()) {
    if (absl::StatusOr<std::string> root = FindTracefsMount(*mounts); root.ok()) {
      caps.tracefs = *root;
    }
  }
  caps.thread_budget = ThreadBudget(caps.is_root);
  return caps;
}

absl::StatusOr<ScopedFdLimit> ScopedFdLimit::Ensure(uint64_t needed) {
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) != 0) return ErrnoStatus(errno, "getrlimit(RLIMIT_NOFILE)");
  absl::StatusOr<int> open_now = CountOpenFds();
  uint64_t want = needed + static_cast<uint64_t>(open_now.ok() ? *open_now : 0) + 16;
  if (want <= files.rlim_cur) return ScopedFdLimit(files.rlim_cur, false);
  if (want > files.rlim_max) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "needs ", want, " file descriptors but the hard limit (RLIMIT_NOFILE) is ", files.rlim_max,
        ": raise it with 'ulimit -Hn ", want, "' as root, or in /etc/security/limits.conf"));
  }
  rlimit raised = files;
  raised.rlim_cur = want;
  if (setrlimit(RLIMIT_NOFILE, &raised) != 0) return ErrnoStatus(errno, "setrlimit(RLIMIT_NOFILE)");
  return ScopedFdLimit(files.rlim_cur, true);
}

ScopedFdLimit::ScopedFdLimit(ScopedFdLimit&& other) noexcept
    : old_soft_(other.old_soft_), changed_(other.changed_) {
  other.changed_ = false;
}

ScopedFdLimit::~ScopedFdLimit() {
  if (!changed_) return;
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) != 0) return;
  files.rlim_cur = old_soft_;
  setrlimit(RLIMIT_NOFILE, &files);
}

absl::StatusOr<int> CountOpenFds() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return ErrnoStatus(errno, "opendir /proc/self/fd");
  int count = 0;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  closedir(dir);
  return count - 1;  // the directory stream's own fd
}

}  // namespace perfscale
