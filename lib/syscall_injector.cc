#include "lib/syscall_injector.h"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "lib/cpu_set.h"
#include "lib/errno_status.h"
#include "lib/perf_attr.h"
#include "lib/tracefs.h"

namespace perfscale {
namespace {

// What an open needs: the tracepoints' ids (tracefs mounted first where this process may)
// and the online CPUs.
struct Target {
  uint64_t ids[kInjectorTracepointCount] = {};
  std::vector<int> cpus;
};

absl::StatusOr<Target> FindTarget() {
  if (absl::StatusOr<std::string> root = EnsureTracefs(ProbeCapabilities().cap_sys_admin);
      !root.ok()) {
    return root.status();
  }
  Target target;
  for (size_t i = 0; i < kInjectorTracepointCount; ++i) {
    absl::StatusOr<uint64_t> id = TracepointId(kInjectorTracepoints[i]);
    if (!id.ok()) return id.status();
    target.ids[i] = *id;
  }
  absl::StatusOr<std::vector<int>> cpus = OnlineCpus();
  if (!cpus.ok()) return cpus.status();
  if (cpus->empty()) return absl::InternalError("no online CPU found");
  target.cpus = *std::move(cpus);
  return target;
}

std::string FewerEvents(int events_per_cpu, size_t total) {
  return absl::StrCat("; or ask for fewer events per CPU (", events_per_cpu,
                      " per CPU and tracepoint here: ", total, " file descriptors)");
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  if (n == 0) return 0;
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

int64_t NowNs() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

}  // namespace

absl::Status CheckInjectorEventsPerCpu(int64_t events_per_cpu) {
  if (events_per_cpu < 1 || events_per_cpu > kMaxInjectorEventsPerCpu) {
    return absl::InvalidArgumentError(absl::StrCat(
        "events per CPU must be in 1..", kMaxInjectorEventsPerCpu, ", got ", events_per_cpu));
  }
  return absl::OkStatus();
}

std::string DescribeInjector(int events_per_cpu, size_t cpus, absl::string_view filter) {
  std::string text = absl::StrCat(
      events_per_cpu, " counting events per CPU on ", kInjectorTracepoints[0], " and ",
      kInjectorTracepoints[1], " (", cpus, cpus == 1 ? " CPU, " : " CPUs, ",
      static_cast<uint64_t>(events_per_cpu) * cpus * kInjectorTracepointCount, " events)");
  if (!filter.empty()) absl::StrAppend(&text, ", filter '", filter, "'");
  return text;
}

absl::StatusOr<SyscallInjector> SyscallInjector::Open(int events_per_cpu,
                                                      absl::string_view filter) {
  if (absl::Status checked = CheckInjectorEventsPerCpu(events_per_cpu); !checked.ok()) {
    return checked;
  }
  absl::StatusOr<Target> target = FindTarget();
  if (!target.ok()) return target.status();
  SyscallInjector injector;
  injector.events_per_cpu_ = events_per_cpu;
  injector.cpus_ = target->cpus;
  injector.filter_ = std::string(filter);
  const size_t total =
      static_cast<size_t>(events_per_cpu) * target->cpus.size() * kInjectorTracepointCount;
  absl::StatusOr<ScopedFdLimit> limit = ScopedFdLimit::Ensure(total);
  if (!limit.ok()) {
    return WithMessage(limit.status(),
                       absl::StrCat(limit.status().message(), FewerEvents(events_per_cpu, total)));
  }
  injector.fd_limit_ = std::make_unique<ScopedFdLimit>(*std::move(limit));
  injector.events_.reserve(total);
  // On any failure below, `injector` goes out of scope: what was opened is closed and
  // the fd limit is back.
  for (size_t tp = 0; tp < kInjectorTracepointCount; ++tp) {
    const perf_event_attr attr = TracepointAttr(target->ids[tp]);
    for (int cpu : target->cpus) {
      for (int copy = 0; copy < events_per_cpu; ++copy) {
        // Counting from the open on: the events only need to exist to cost.
        absl::StatusOr<PerfEvent> event = PerfEvent::Open(attr, /*pid=*/-1, cpu);
        if (!event.ok()) {
          std::optional<int> err = StatusErrno(event.status());
          const bool out_of_fds = err && (*err == EMFILE || *err == ENFILE);
          const std::string which = absl::StrCat(injector.events_.size() + 1, " of ", total, ": ",
                                                 kInjectorTracepoints[tp], " on CPU ", cpu);
          return WithMessage(
              event.status(),
              absl::StrCat(
                  absl::IsPermissionDenied(event.status())
                      ? absl::StrCat("system-wide tracepoint events refused (event ", which, "): ")
                      : absl::StrCat("cannot open the injector's event ", which, ": "),
                  event.status().message(), out_of_fds ? FewerEvents(events_per_cpu, total) : ""));
        }
        if (!injector.filter_.empty() &&
            ioctl(event->fd(), PERF_EVENT_IOC_SET_FILTER, injector.filter_.c_str()) != 0) {
          absl::Status refused = ErrnoStatus(errno, "PERF_EVENT_IOC_SET_FILTER");
          return WithMessage(
              refused,
              absl::StrCat(
                  "tracepoint filter '", injector.filter_, "' refused on ",
                  kInjectorTracepoints[tp], ": ", refused.message(),
                  ": the filter goes on both tracepoints, so use their common field id (e.g. "
                  "'id >= 0'); args is sys_enter's alone, ret sys_exit's (tracefs "
                  "events/raw_syscalls/*/format)"));
        }
        injector.events_.push_back(*std::move(event));
      }
    }
  }
  return injector;
}

std::string SyscallInjector::Describe() const {
  return DescribeInjector(events_per_cpu_, cpus_.size(), filter_);
}

absl::StatusOr<std::vector<uint64_t>> SyscallInjector::ReadCopyTotals() {
  std::vector<uint64_t> totals(kInjectorTracepointCount * static_cast<size_t>(events_per_cpu_), 0);
  const size_t per_tracepoint = cpus_.size() * static_cast<size_t>(events_per_cpu_);
  for (size_t i = 0; i < events_.size(); ++i) {
    absl::StatusOr<uint64_t> count = events_[i].ReadCount();
    if (!count.ok()) return count.status();
    const size_t tp = i / per_tracepoint;
    const size_t copy = (i % per_tracepoint) % static_cast<size_t>(events_per_cpu_);
    totals[tp * static_cast<size_t>(events_per_cpu_) + copy] += *count;
  }
  return totals;
}

int64_t CallsForRound(int64_t calls, double elapsed_ns, double target_seconds, int64_t max_calls) {
  calls = std::max<int64_t>(calls, 1);
  max_calls = std::max<int64_t>(max_calls, 1);
  const double most = std::min(static_cast<double>(max_calls), 100.0 * static_cast<double>(calls));
  double want =
      elapsed_ns > 0 ? static_cast<double>(calls) * target_seconds * 1e9 / elapsed_ns : most;
  if (!(want >= 1)) want = 1;  // also NaN
  return static_cast<int64_t>(std::min(want, most));
}

double BareLoopNs(int64_t calls) {
  calls = std::max<int64_t>(calls, 1);
  const int64_t start = NowNs();
  for (int64_t i = 0; i < calls; ++i) syscall(SYS_getppid);
  return static_cast<double>(NowNs() - start) / static_cast<double>(calls);
}

absl::StatusOr<InjectorCost> MeasureInjectorCost(int events_per_cpu, absl::string_view filter,
                                                 const InjectorCostOptions& options) {
  if (absl::Status checked = CheckInjectorEventsPerCpu(events_per_cpu); !checked.ok()) {
    return checked;
  }
  // The round's size from the bare loop: grow a trial until it lasts a quarter of a round
  // (a few steps on the host; the first trial already does under TCG), then scale it.
  const double trial_ns = options.round_seconds * 1e9 / 4;
  int64_t calls = 64;
  for (;;) {
    const double elapsed_ns = BareLoopNs(calls) * static_cast<double>(calls);
    if (elapsed_ns >= trial_ns || calls >= options.max_calls) {
      calls = CallsForRound(calls, elapsed_ns, options.round_seconds, options.max_calls);
      break;
    }
    calls = std::min(calls * 8, options.max_calls);
  }
  InjectorCost cost;
  cost.calls_per_round = calls;
  cost.injected_calls_per_round = calls;
  cost.rounds = std::max(options.rounds, 1);
  std::vector<double> bare, injected;
  // Cycles of bare, open, injected, injected, close, bare: every cycle's midpoint is the
  // same for both sides, so a linear drift of the machine falls on both alike, and what
  // the open or the close leaves behind (RCU callbacks, IPIs) lands on bare rounds before
  // and after alike. Two injected rounds per open halve the closes, which dominate the
  // time: a close waits for the tracepoint's RCU grace periods (70-80 ms on Linux 6.18
  // here, whatever the count).
  while (injected.size() < static_cast<size_t>(cost.rounds)) {
    if (bare.size() < static_cast<size_t>(cost.rounds)) bare.push_back(BareLoopNs(calls));
    {
      absl::StatusOr<SyscallInjector> injector = SyscallInjector::Open(events_per_cpu, filter);
      if (!injector.ok()) return injector.status();
      for (int i = 0; i < 2 && injected.size() < static_cast<size_t>(cost.rounds); ++i) {
        const double ns = BareLoopNs(cost.injected_calls_per_round);
        injected.push_back(ns);
        if (injected.size() == 1) {
          // The injected rounds are sized by time too: a strong injection makes each
          // call many times slower.
          cost.injected_calls_per_round =
              CallsForRound(cost.injected_calls_per_round,
                            ns * static_cast<double>(cost.injected_calls_per_round),
                            options.round_seconds, options.max_calls);
        }
      }
    }  // the events close here, before the next bare round
    if (bare.size() < static_cast<size_t>(cost.rounds)) bare.push_back(BareLoopNs(calls));
  }
  while (bare.size() < static_cast<size_t>(cost.rounds)) bare.push_back(BareLoopNs(calls));
  cost.bare_ns = Median(bare);
  cost.injected_ns = Median(injected);
  return cost;
}

}  // namespace perfscale
