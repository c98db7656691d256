// What this process may do with perf_event and tracing on this machine: the paranoid
// level, root / CAP_PERFMON / CAP_SYS_ADMIN, the breakpoint PMU (and whether its
// breakpoints fire), tracefs, the fd and thread limits. Benchmarks and tests consult it to
// skip with a one-line reason instead of failing.
//
// Example:
//   perfscale::Capabilities caps = perfscale::ProbeCapabilities();
//   if (absl::Status s = caps.RequireBreakpointPmu(); !s.ok()) skip(s.message());
//   if (absl::Status s = caps.RequireFiringBreakpoints(); !s.ok()) skip(s.message());
#ifndef PERFSCALE_LIB_CAPABILITIES_H_
#define PERFSCALE_LIB_CAPABILITIES_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace perfscale {

// Capability bits from linux/capability.h (kept here so old headers still build).
inline constexpr int kCapSysAdmin = 21;
inline constexpr int kCapPerfmon = 38;

// The effective capability mask from the text of /proc/self/status ("CapEff:\t...").
absl::StatusOr<uint64_t> ParseEffectiveCapabilities(absl::string_view proc_status);

// A single integer sysctl file ("2\n").
absl::StatusOr<int64_t> ParseSysctlInt(absl::string_view text);

struct Capabilities {
  std::optional<int64_t> perf_event_paranoid;  // absent: no perf_event support at all
  bool is_root = false;
  bool cap_perfmon = false;
  bool cap_sys_admin = false;
  bool breakpoint_pmu = false;
  std::optional<std::string> tracefs;  // mount point, when mounted at probe time
  // How many more threads this process may create (threads-max, pid_max, RLIMIT_NPROC
  // where it applies), approximately.
  uint64_t thread_budget = 0;

  // CAP_PERFMON, CAP_SYS_ADMIN or paranoid <= 0 (root has the capabilities).
  bool CanProfileSystemWide() const;

  // The kernel has perf_event at all. Whether this user may open per-task events is the
  // kernel's answer to the open, not a guess from perf_event_paranoid.
  absl::Status RequirePerfEvents() const;
  absl::Status RequireBreakpointPmu() const;
  // The breakpoint PMU, and a breakpoint that opens also fires (BreakpointsFire). The
  // families never need a breakpoint to fire (their breakpoints watch bytes nobody
  // touches); what counts hits does.
  absl::Status RequireFiringBreakpoints() const;
  absl::Status RequireSystemWide() const;
  // When the probe found tracefs unmounted, mounts it if cap_sys_admin (EnsureTracefs).
  absl::Status RequireTracefs() const;
  absl::Status RequireThreads(uint64_t needed) const;
};

Capabilities ProbeCapabilities();

// Whether a user-space write breakpoint that opens also fires: it watches a word, the word
// is written kBreakpointProbeWrites times, and the count must say so. Some hypervisors
// accept the breakpoint and never deliver the debug exception (seen: 2 vCPUs of an AMD
// EPYC under KVM), so every count reads 0. OK when it fires; FailedPrecondition naming
// the count when it does not; the open's own error when no breakpoint opens. Probed once
// per process (one open, a few writes, one read: microseconds); later calls return the
// first answer.
// With the environment variable kAssumeBreakpointsNeverFire set to 1, the probe answers
// as on such a machine without probing (tools/perfscale test passes it to the tests).
inline constexpr int kBreakpointProbeWrites = 4;
inline constexpr char kAssumeBreakpointsNeverFire[] = "PERFSCALE_ASSUME_BREAKPOINTS_NEVER_FIRE";
absl::Status BreakpointsFire();

// The probe's verdict from what it saw, apart so tests can give it any count: `opened` is
// the open's status, `counted` what the breakpoint read after the writes.
absl::Status JudgeBreakpointProbe(const absl::Status& opened, absl::StatusOr<uint64_t> counted);

// Raises RLIMIT_NOFILE's soft limit to fit `needed` more fds (up to the hard limit) and
// puts the old limit back on destruction.
class ScopedFdLimit {
 public:
  static absl::StatusOr<ScopedFdLimit> Ensure(uint64_t needed);
  ScopedFdLimit(ScopedFdLimit&& other) noexcept;
  ScopedFdLimit& operator=(ScopedFdLimit&&) = delete;
  ScopedFdLimit(const ScopedFdLimit&) = delete;
  ~ScopedFdLimit();

 private:
  ScopedFdLimit(uint64_t old_soft, bool changed) : old_soft_(old_soft), changed_(changed) {}
  uint64_t old_soft_;
  bool changed_;
};

// Number of fds the process has open now (entries of /proc/self/fd).
absl::StatusOr<int> CountOpenFds();

}  // namespace perfscale

#endif  // PERFSCALE_LIB_CAPABILITIES_H_
