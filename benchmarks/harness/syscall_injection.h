// `--inject_syscall_events=N`: the run's benchmarks with the syscall injector on
// (lib/syscall_injector.h), so that the gate's known slowdown is the binary's own and
// works wherever the binary does, a QEMU guest without Python included. Before the
// benchmarks, the injector's cost is measured on a bare getppid() loop and recorded in
// the run's context; then its events are opened and held until the benchmarks finish.
// A gate fails closed: an injector that cannot be opened or measured stops the run
// (exit 2) before any benchmark runs.
//
// Example (main):
//   if (absl::Status checked = perfscale::CheckSyscallInjectionFlags(); !checked.ok()) ...
//   ... plan, not plan-only, not --benchmark_list_tests:
//   absl::StatusOr<std::unique_ptr<perfscale::SyscallInjector>> injector =
//       perfscale::StartSyscallInjection();  // nullptr when the flag is 0
//   if (!injector.ok()) { print "--inject_syscall_events: " + message; return 2; }
//   benchmark::RunSpecifiedBenchmarks(...);
//   injector->reset();  // the events close
#ifndef PERFSCALE_BENCHMARKS_HARNESS_SYSCALL_INJECTION_H_
#define PERFSCALE_BENCHMARKS_HARNESS_SYSCALL_INJECTION_H_

#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lib/syscall_injector.h"

namespace perfscale {

// The flags' values (after ParseFlags): the uniform rejection of a bad count, and of a
// filter without events.
absl::Status CheckSyscallInjectionFlags();

// The run context's keys for an injector: injector (its description),
// injector_events_per_cpu, injector_bare_ns, injector_ns, injector_added_ns (ns per
// getppid(), "%.1f").
std::vector<std::pair<std::string, std::string>> InjectorContext(const std::string& description,
                                                                 int events_per_cpu,
                                                                 const InjectorCost& cost);

// "injector: <description>: getppid() B ns bare, I ns injected, +A ns per syscall (bare
// loop)", with a newline.
std::string InjectorLine(const std::string& description, const InjectorCost& cost);

// With --inject_syscall_events=0: nullptr, and nothing else. Otherwise measures the cost,
// opens the injector, adds InjectorContext to Google Benchmark's custom context, writes
// InjectorLine to `log`, and returns the open injector. The error says why (it does not
// name the flag).
absl::StatusOr<std::unique_ptr<SyscallInjector>> StartSyscallInjection(FILE* log = stderr);

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_HARNESS_SYSCALL_INJECTION_H_
