#include "benchmarks/harness/syscall_injection.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "benchmark/benchmark.h"
#include "benchmarks/harness/flags.h"

namespace perfscale {
namespace {

Flag& events_flag = DefineSuiteFlag(
    "inject_syscall_events", "0", absl::StrCat("an integer 0..", kMaxInjectorEventsPerCpu),
    "hold N counting perf events per CPU on raw_syscalls:sys_enter and sys_exit, "
    "system-wide, while the benchmarks run: real extra work in every syscall (the gate's "
    "known slowdown); its cost per getppid() goes into the run's context; 0: off");
Flag& filter_flag = DefineSuiteFlag(
    "inject_syscall_filter", "", "a tracepoint filter, e.g. 'id >= 0'",
    "with --inject_syscall_events: a filter on each injected event (more work per syscall)",
    "none");

int EventsPerCpu() {
  absl::StatusOr<int64_t> events = ParseInt(events_flag.value(), 0, kMaxInjectorEventsPerCpu);
  return events.ok() ? static_cast<int>(*events) : 0;
}

}  // namespace

absl::Status CheckSyscallInjectionFlags() {
  absl::StatusOr<int64_t> events = ParseInt(events_flag.value(), 0, kMaxInjectorEventsPerCpu);
  if (!events.ok()) return events_flag.Reject(events_flag.value(), events.status());
  if (*events == 0 && filter_flag.is_set()) {
    return filter_flag.Annotate(absl::InvalidArgumentError(
        "a filter of the injected events needs --inject_syscall_events=N with N > 0"));
  }
  return absl::OkStatus();
}

std::vector<std::pair<std::string, std::string>> InjectorContext(const std::string& description,
                                                                 int events_per_cpu,
                                                                 const InjectorCost& cost) {
  return {
      {"injector", description},
      {"injector_events_per_cpu", absl::StrCat(events_per_cpu)},
      {"injector_bare_ns", absl::StrFormat("%.1f", cost.bare_ns)},
      {"injector_ns", absl::StrFormat("%.1f", cost.injected_ns)},
      {"injector_added_ns", absl::StrFormat("%.1f", cost.added_ns())},
  };
}

std::string InjectorLine(const std::string& description, const InjectorCost& cost) {
  return absl::StrFormat(
      "injector: %s: getppid() %.1f ns bare, %.1f ns injected, %+.1f ns per syscall (bare "
      "loop)\n",
      description, cost.bare_ns, cost.injected_ns, cost.added_ns());
}

absl::StatusOr<std::unique_ptr<SyscallInjector>> StartSyscallInjection(FILE* log) {
  const int events_per_cpu = EventsPerCpu();
  if (events_per_cpu == 0) return nullptr;
  const std::string filter = filter_flag.value();
  absl::StatusOr<InjectorCost> cost = MeasureInjectorCost(events_per_cpu, filter);
  if (!cost.ok()) return cost.status();
  absl::StatusOr<SyscallInjector> injector = SyscallInjector::Open(events_per_cpu, filter);
  if (!injector.ok()) return injector.status();
  const std::string description = injector->Describe();
  for (const auto& [key, value] : InjectorContext(description, events_per_cpu, *cost)) {
    benchmark::AddCustomContext(key, value);
  }
  std::fputs(InjectorLine(description, *cost).c_str(), log);
  std::fflush(log);
  return std::make_unique<SyscallInjector>(*std::move(injector));
}

}  // namespace perfscale
