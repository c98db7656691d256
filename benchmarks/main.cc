// The main of every perfscale benchmark binary: Google Benchmark's flags first, then
// perfscale's (perf-bench style parameters), then each linked family registers its
// benchmarks, the run's context is recorded, and the benchmarks run.
#include <cstdio>
#include <cstring>

#include "benchmark/benchmark.h"
#include "benchmarks/benchmark_flags.h"
#include "benchmarks/family.h"
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

}  // namespace

int main(int argc, char** argv) {
  if (WantsHelp(argc, argv)) {
    std::printf("perfscale flags (families:");
    for (const perfscale::Family& family : perfscale::Families()) {
      std::printf(" %s", family.name.c_str());
    }
    std::printf(")\n%s\nGoogle Benchmark flags:\n", perfscale::FlagsHelp().c_str());
  }
  if (absl::Status checked = perfscale::CheckBenchmarkFlags({argv + 1, argv + argc});
      !checked.ok()) {
    std::fprintf(stderr, "%s: %s\n", argv[0], std::string(checked.message()).c_str());
    return 2;
  }
  benchmark::Initialize(&argc, argv);  // exits after printing its help for --help
  if (absl::Status parsed = perfscale::ParseFlags(argc, argv); !parsed.ok()) {
    std::fprintf(stderr, "%s: %s\n", argv[0], std::string(parsed.message()).c_str());
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
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
