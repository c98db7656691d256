// The main of every perfscale benchmark binary: Google Benchmark's flags first, then
// perfscale's (perf-bench style parameters), then each linked family registers its
// benchmarks, the plan fits the selection into --budget (benchmarks/harness/suite_plan.h), the
// run's context is recorded, the syscall injector is switched on when asked
// (--inject_syscall_events, benchmarks/harness/syscall_injection.h), and the benchmarks run
// with progress on stderr.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "benchmark/benchmark.h"
#include "benchmarks/harness/bench_support.h"
#include "benchmarks/harness/benchmark_flags.h"
#include "benchmarks/harness/family.h"
#include "benchmarks/harness/flags.h"
#include "benchmarks/harness/machine_identity.h"
#include "benchmarks/harness/profile_support.h"
#include "benchmarks/harness/progress.h"
#include "benchmarks/harness/result_file.h"
#include "benchmarks/harness/run_context.h"
#include "benchmarks/harness/suite_plan.h"
#include "benchmarks/harness/syscall_injection.h"
#include "lib/interrupt_cleanup.h"
#include "lib/tracepoint_keep_alive.h"

namespace {

// The ways out besides 0: a usage error (2) is a bad flag or a machine that cannot do what
// was asked, found before any benchmark ran; a failure (1) is a result lost after the run.
constexpr int kUsageError = 2;
constexpr int kFailed = 1;

// "<program>: <message>" on stderr; returns `code` for main to return.
int Exit(int code, const char* program, absl::string_view message) {
  std::fprintf(stderr, "%s: %.*s\n", program, static_cast<int>(message.size()), message.data());
  return code;
}

int UsageError(const char* program, absl::string_view message) {
  return Exit(kUsageError, program, message);
}

bool WantsHelp(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) return true;
  }
  return false;
}

// The last `--name=value` of a Google Benchmark flag (its parser's rule), or `fallback`;
// `--name` alone is "true". Points `*where` at that argument when asked to.
std::string BenchmarkFlag(int argc, char** argv, const char* name, const std::string& fallback,
                          char*** where = nullptr) {
  std::string value = fallback;
  std::string prefix = std::string("--") + name;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (!absl::ConsumePrefix(&arg, prefix)) continue;
    if (arg.empty()) {
      value = "true";
    } else if (absl::ConsumePrefix(&arg, "=")) {
      value = std::string(arg);
    } else {
      continue;  // a longer flag name
    }
    if (where != nullptr) *where = &argv[i];
  }
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  if (WantsHelp(argc, argv)) {
    std::printf("perfscale flags (families:");
    for (const perfscale::Family& family : perfscale::Families()) {
      std::printf(" %s", family.name.c_str());
    }
    std::printf(")\n%s\nGoogle Benchmark flags:\n", perfscale::FlagsHelp().c_str());
  }
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (absl::Status checked = perfscale::CheckBenchmarkFlags(args); !checked.ok()) {
    return UsageError(argv[0], checked.message());
  }
  // perfscale keeps --benchmark_out whole itself (result_file.h): Google Benchmark gets
  // /dev/null to write, so it neither truncates the file early nor leaves it half done.
  char** out_arg = nullptr;
  std::string out_path = BenchmarkFlag(argc, argv, "benchmark_out", "", &out_arg);
  const std::string out_format = BenchmarkFlag(argc, argv, "benchmark_out_format", "json");
  std::unique_ptr<perfscale::ResultFileReporter> result_file;
  static char dev_null_out[] = "--benchmark_out=/dev/null";
  if (!out_path.empty()) {
    absl::StatusOr<std::unique_ptr<perfscale::ResultFileReporter>> created =
        perfscale::ResultFileReporter::Create(out_path, out_format);
    if (created.ok()) {
      result_file = *std::move(created);
      *out_arg = dev_null_out;
    }
  }
  bool list_only = perfscale::ParseBool(BenchmarkFlag(argc, argv, "benchmark_list_tests", "false"))
                       .value_or(false);
  // Read before Initialize takes Google Benchmark's flags out of argv; checked above.
  perfscale::PlanRequest request;
  request.min_time = std::atof(BenchmarkFlag(argc, argv, "benchmark_min_time", "0").c_str());
  request.min_warmup_time =
      std::atof(BenchmarkFlag(argc, argv, "benchmark_min_warmup_time", "0").c_str());
  request.repetitions = std::atoi(BenchmarkFlag(argc, argv, "benchmark_repetitions", "1").c_str());
  request.list_only = list_only;
  benchmark::Initialize(&argc, argv);  // exits after printing its help for --help
  if (absl::Status parsed = perfscale::ParseFlags(argc, argv); !parsed.ok()) {
    return UsageError(argv[0], parsed.message());
  }
  if (absl::Status injection = perfscale::CheckSyscallInjectionFlags(); !injection.ok()) {
    return UsageError(argv[0], injection.message());
  }
  perfscale::SetRunSelection(benchmark::GetBenchmarkFilter(), list_only);
  if (absl::Status profiling = perfscale::SetUpProfiling(args); !profiling.ok()) {
    return UsageError(argv[0], profiling.message());
  }
  for (const perfscale::Family& family : perfscale::Families()) {
    if (absl::Status registered = family.register_benchmarks(); !registered.ok()) {
      return UsageError(argv[0], absl::StrCat(family.name, ": ", registered.message()));
    }
  }
  const std::string filter = benchmark::GetBenchmarkFilter();
  absl::StatusOr<perfscale::SuitePlan> plan = perfscale::PlanSuite(request);
  if (!plan.ok()) return UsageError(argv[0], plan.status().message());
  std::fputs(plan->text.c_str(), stderr);
  if (perfscale::PlanOnly()) return 0;
  perfscale::InstallInterruptCleanup();
  for (const auto& [key, value] : perfscale::CollectRunContext().Fields()) {
    benchmark::AddCustomContext(key, value);
  }
  // Read here, where the suite runs: inside a guest, the guest's identity.
  for (const auto& [key, value] : perfscale::CollectMachineIdentity()) {
    benchmark::AddCustomContext(key, value);
  }
  // Opened before the first row so every row is timed alike, closed after the last.
  std::unique_ptr<perfscale::TracepointKeepAlive> kept_tracepoints;
  if (!list_only) kept_tracepoints = perfscale::KeepCountingTracepoints();
  benchmark::AddCustomContext("counter_sources",
                              perfscale::CounterSourcesJson(kept_tracepoints.get()));
  // How the counts were taken: "counting_pass" (timings untouched), "timed" or "off".
  benchmark::AddCustomContext("attribution",
                              perfscale::AttributionName(perfscale::AttributionMode()));
  // Measured and opened before any benchmark, held until the last one finished; a gate
  // fails closed, so an injector that cannot be had stops the run here.
  std::unique_ptr<perfscale::SyscallInjector> injector;
  if (!list_only) {
    absl::StatusOr<std::unique_ptr<perfscale::SyscallInjector>> started =
        perfscale::StartSyscallInjection();
    if (!started.ok()) {
      return UsageError(argv[0],
                        absl::StrCat("--inject_syscall_events: ", started.status().message()));
    }
    injector = *std::move(started);
  }
  std::unique_ptr<benchmark::BenchmarkReporter> display(benchmark::CreateDefaultDisplayReporter());
  // Progress on stderr; the forwarded names lose the plan's iterations:/min_time: segments.
  perfscale::Progress progress(plan->runs, stderr, isatty(STDERR_FILENO) == 1);
  perfscale::PlannedReporter planned_display(display.get(), list_only ? nullptr : &progress);
  std::unique_ptr<benchmark::BenchmarkReporter> fallback_file;
  std::unique_ptr<perfscale::PlannedReporter> planned_file;
  if (result_file != nullptr) {
    planned_file = std::make_unique<perfscale::PlannedReporter>(result_file.get(), nullptr);
  } else if (!out_path.empty()) {  // Google Benchmark writes the file; the names still clean
    fallback_file = perfscale::CreateFileReporter(out_format);
    planned_file = std::make_unique<perfscale::PlannedReporter>(fallback_file.get(), nullptr);
  }
  if (!list_only) {
    perfscale::SetStartListener([&progress](const std::string& name) { progress.Started(name); });
  }
  size_t matched = benchmark::RunSpecifiedBenchmarks(&planned_display, planned_file.get());
  injector.reset();  // the injected work stops with the benchmarks
  perfscale::ReleaseRowFixtures();
  kept_tracepoints.reset();
  perfscale::SetStartListener(nullptr);
  benchmark::Shutdown();
  if (matched == 0) {
    return UsageError(argv[0], absl::StrCat("--benchmark_filter=", filter,
                                            ": no benchmark matches (--benchmark_list_tests "
                                            "lists them)"));
  }
  if (result_file != nullptr && !result_file->status().ok()) {
    return Exit(kFailed, argv[0],
                absl::StrCat("--benchmark_out=", out_path, ": ", result_file->status().message()));
  }
  if (absl::Status written = perfscale::FinishProfiling(); !written.ok()) {
    return Exit(kFailed, argv[0], absl::StrCat("--profile: ", written.message()));
  }
  return 0;
}
