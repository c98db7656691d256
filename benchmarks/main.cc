// The main of every perfscale benchmark binary: Google Benchmark's flags first, then
// perfscale's (perf-bench style parameters), then each linked family registers its
// benchmarks, the run's context is recorded, and the benchmarks run.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/strip.h"
#include "benchmark/benchmark.h"
#include "benchmarks/benchmark_flags.h"
#include "benchmarks/family.h"
#include "benchmarks/profile_support.h"
#include "benchmarks/result_file.h"
#include "lib/flags.h"
#include "lib/interrupt_cleanup.h"
#include "lib/run_context.h"

namespace {

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
    std::fprintf(stderr, "%s: %s\n", argv[0], std::string(checked.message()).c_str());
    return 2;
  }
  // perfscale keeps --benchmark_out whole itself (result_file.h): Google Benchmark gets
  // /dev/null to write, so it neither truncates the file early nor leaves it half done.
  char** out_arg = nullptr;
  std::string out_path = BenchmarkFlag(argc, argv, "benchmark_out", "", &out_arg);
  std::unique_ptr<perfscale::ResultFileReporter> result_file;
  static char dev_null_out[] = "--benchmark_out=/dev/null";
  if (!out_path.empty()) {
    absl::StatusOr<std::unique_ptr<perfscale::ResultFileReporter>> created =
        perfscale::ResultFileReporter::Create(
            out_path, BenchmarkFlag(argc, argv, "benchmark_out_format", "json"));
    if (created.ok()) {
      result_file = *std::move(created);
      *out_arg = dev_null_out;
    }
  }
  bool list_only = perfscale::ParseBool(BenchmarkFlag(argc, argv, "benchmark_list_tests", "false"))
                       .value_or(false);
  benchmark::Initialize(&argc, argv);  // exits after printing its help for --help
  if (absl::Status parsed = perfscale::ParseFlags(argc, argv); !parsed.ok()) {
    std::fprintf(stderr, "%s: %s\n", argv[0], std::string(parsed.message()).c_str());
    return 2;
  }
  perfscale::SetRunSelection(benchmark::GetBenchmarkFilter(), list_only);
  if (absl::Status profiling = perfscale::SetUpProfiling(args); !profiling.ok()) {
    std::fprintf(stderr, "%s: %s\n", argv[0], std::string(profiling.message()).c_str());
    return 2;
  }
  for (const perfscale::Family& family : perfscale::Families()) {
    if (absl::Status registered = family.register_benchmarks(); !registered.ok()) {
      std::fprintf(stderr, "%s: %s: %s\n", argv[0], family.name.c_str(),
                   std::string(registered.message()).c_str());
      return 2;
    }
  }
  perfscale::InstallInterruptCleanup();
  for (const auto& [key, value] : perfscale::CollectRunContext().Fields()) {
    benchmark::AddCustomContext(key, value);
  }
  std::unique_ptr<benchmark::BenchmarkReporter> display(benchmark::CreateDefaultDisplayReporter());
  size_t matched = benchmark::RunSpecifiedBenchmarks(display.get(), result_file.get());
  benchmark::Shutdown();
  if (matched == 0) {
    std::fprintf(stderr,
                 "%s: --benchmark_filter=%s: no benchmark matches (--benchmark_list_tests lists "
                 "them)\n",
                 argv[0], benchmark::GetBenchmarkFilter().c_str());
    return 2;
  }
  if (result_file != nullptr && !result_file->status().ok()) {
    std::fprintf(stderr, "%s: --benchmark_out=%s: %s\n", argv[0], out_path.c_str(),
                 std::string(result_file->status().message()).c_str());
    return 1;
  }
  if (absl::Status written = perfscale::FinishProfiling(); !written.ok()) {
    std::fprintf(stderr, "%s: --profile: %s\n", argv[0], std::string(written.message()).c_str());
    return 1;
  }
  return 0;
}
