// The syscall injector: a known, real slowdown of every syscall on the machine, switched
// on and off at will, for testing what the regression gate can see. While a
// SyscallInjector is open, N counting perf events per online CPU sit on each of the
// tracepoints raw_syscalls:sys_enter and raw_syscalls:sys_exit, system-wide (pid -1):
// every syscall on every CPU then walks 2N events in the kernel's tracepoint handler
// (perf_tp_event: the optional filter, the count update). Closing the events (destroying
// the injector, or the process exiting) switches it off. No rebuild, no reboot, no change
// to the code being measured.
//
// MeasureInjectorCost sizes it outside Google Benchmark: a bare getppid() loop, timed in
// rounds alternately without and with the events open, medians of each side. The rounds
// are sized by time, not by a call count, so the same code takes well under a second
// both on the host and in a QEMU guest under TCG (50-100x slower).
//
// Needs what system-wide tracepoint events need: root, CAP_PERFMON or
// kernel.perf_event_paranoid <= 0, and tracefs (mounted here when this process may).
// Used by the benchmark binaries' --inject_syscall_events (benchmarks/harness) and by
// `tools/perfscale inject` (tools/inject).
//
// Example:
//   absl::StatusOr<perfscale::InjectorCost> cost = perfscale::MeasureInjectorCost(8);
//   if (!cost.ok()) skip(cost.status().message());
//   absl::StatusOr<perfscale::SyscallInjector> injector = perfscale::SyscallInjector::Open(8);
//   if (!injector.ok()) skip(injector.status().message());
//   ... every syscall now costs about cost->added_ns() more ...
//   // injector goes out of scope: the events are closed, syscalls cost what they did
#ifndef PERFSCALE_LIB_SYSCALL_INJECTOR_H_
#define PERFSCALE_LIB_SYSCALL_INJECTOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "lib/capabilities.h"
#include "lib/perf_event.h"

namespace perfscale {

// The tracepoints every injected event sits on, in the order the events are opened.
inline constexpr const char* kInjectorTracepoints[] = {"raw_syscalls:sys_enter",
                                                       "raw_syscalls:sys_exit"};
inline constexpr size_t kInjectorTracepointCount = 2;

// Events per CPU and tracepoint: 1..kMaxInjectorEventsPerCpu.
inline constexpr int kMaxInjectorEventsPerCpu = 4096;

// InvalidArgument unless 1 <= events_per_cpu <= kMaxInjectorEventsPerCpu.
absl::Status CheckInjectorEventsPerCpu(int64_t events_per_cpu);

// "40 counting events per CPU on raw_syscalls:sys_enter and raw_syscalls:sys_exit
// (2 CPUs, 160 events)", then ", filter 'EXPR'" when there is one.
std::string DescribeInjector(int events_per_cpu, size_t cpus, absl::string_view filter);

class SyscallInjector {
 public:
  // Opens events_per_cpu counting events per online CPU on each of kInjectorTracepoints,
  // each with `filter` (PERF_EVENT_IOC_SET_FILTER) when it is not empty. Raises the soft
  // RLIMIT_NOFILE while they are open when they would not fit under it. A failure says why
  // (the paranoid level and what to do; the fd limit; how to mount tracefs; the filter
  // the kernel refused) and leaves nothing open.
  static absl::StatusOr<SyscallInjector> Open(int events_per_cpu, absl::string_view filter = "");

  SyscallInjector(SyscallInjector&&) noexcept = default;
  SyscallInjector& operator=(SyscallInjector&&) noexcept = default;
  SyscallInjector(const SyscallInjector&) = delete;
  SyscallInjector& operator=(const SyscallInjector&) = delete;
  ~SyscallInjector() = default;

  int events_per_cpu() const { return events_per_cpu_; }
  const std::vector<int>& cpus() const { return cpus_; }
  const std::string& filter() const { return filter_; }
  // All open events: events_per_cpu x CPUs x tracepoints.
  size_t events() const { return events_.size(); }
  // DescribeInjector of this one.
  std::string Describe() const;

  // Per tracepoint and copy, the count summed over the CPUs: element
  // tracepoint * events_per_cpu() + copy. Each copy sees every syscall of the machine, so
  // a syscall made between two reads adds one to every element.
  absl::StatusOr<std::vector<uint64_t>> ReadCopyTotals();

 private:
  SyscallInjector() = default;

  // Declared before the events, so that on destruction the events close first.
  std::unique_ptr<ScopedFdLimit> fd_limit_;
  // In the order [tracepoint][cpu][copy].
  std::vector<PerfEvent> events_;
  int events_per_cpu_ = 0;
  std::vector<int> cpus_;
  std::string filter_;
};

// What the injection adds to one syscall, from a bare getppid() loop.
struct InjectorCost {
  double bare_ns = 0;                    // median ns per getppid() without the events
  double injected_ns = 0;                // median ns per getppid() with them open
  int64_t calls_per_round = 0;           // of a bare round
  int64_t injected_calls_per_round = 0;  // of the injected rounds after the first
  int rounds = 0;                        // on each side
  double added_ns() const { return injected_ns - bare_ns; }
};

struct InjectorCostOptions {
  int rounds = 10;                  // on each side, interleaved
  double round_seconds = 0.005;     // the length of one round, either side
  int64_t max_calls = 100'000'000;  // per round, whatever the clock says
};

// The number of calls for a round of `target_seconds`, from a trial of `calls` calls that
// took `elapsed_ns`: at least 1, at most max_calls, and at most 100x the trial (so one
// odd, short trial cannot ask for an hour).
int64_t CallsForRound(int64_t calls, double elapsed_ns, double target_seconds, int64_t max_calls);

// ns per getppid() (syscall(SYS_getppid): never answered by libc) over `calls` calls,
// timed with CLOCK_MONOTONIC.
double BareLoopNs(int64_t calls);

// Sizes the rounds by time, then interleaves options.rounds rounds without and with the
// events (bare, open, injected, injected, close, bare; repeated) and returns the medians
// of each side. About half a second on the host at the defaults (most of it in the
// closes), and about as long under TCG. A refused open is returned as
// SyscallInjector::Open says it.
absl::StatusOr<InjectorCost> MeasureInjectorCost(int events_per_cpu, absl::string_view filter = "",
                                                 const InjectorCostOptions& options = {});

}  // namespace perfscale

#endif  // PERFSCALE_LIB_SYSCALL_INJECTOR_H_
