// BM_MachineSpeed: how fast a CPU runs user code right now, with no system call, fault or
// allocation in the timed loop, so no kernel change (and not the gate's syscall injector)
// can move it. On a shared VM the vCPUs' speed is drawn anew for every run; every
// benchmark of the run shares that draw, and the kernel paths feel it about three times
// as much as this loop does (20 runs here: correlations 0.7-0.85). The gate learns how
// much each benchmark follows this row (tools/perfscale calibrate) and takes that part out
// before it compares runs: the spread between runs fell by about a third, out of sample.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "benchmarks/harness/family.h"
#include "benchmarks/harness/suite_plan.h"
#include "lib/cpu_set.h"

namespace perfscale {
namespace {

// 256 KiB: past L1, within L2 on the machines this runs on, so the loop meets the memory
// hierarchy a kernel path meets, not only the ALUs. A dependent walk: no prefetcher, no
// vectorizing compiler can shorten it.
constexpr uint64_t kWords = 32 * 1024;
constexpr int kStepsPerIteration = 64 * 1024;

void BM_MachineSpeed(benchmark::State& state, int cpu) {
  absl::StatusOr<ScopedAffinity> pin = ScopedAffinity::PinTo(cpu);
  if (!pin.ok()) {
    state.SkipWithError(std::string(pin.status().message()).c_str());
    return;
  }
  std::vector<uint64_t> words(kWords);
  uint64_t x = 88172645463325252ull;  // xorshift64: fixed, so every run walks alike
  for (uint64_t& w : words) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    w = x;
  }
  uint64_t index = 0, sum = 0;
  for (auto _ : state) {
    for (int i = 0; i < kStepsPerIteration; ++i) {
      const uint64_t w = words[index];
      sum += w;
      index = (w ^ sum) & (kWords - 1);
    }
    benchmark::DoNotOptimize(sum);
  }
}

absl::Status RegisterMachineSpeedFamily() {
  absl::StatusOr<std::vector<int>> online = OnlineCpus();
  if (!online.ok()) return online.status();
  // The first and the last CPU: the benchmarks pin to both ends, and on a 16-CPU machine
  // one row per CPU would add minutes to every run.
  std::vector<int> cpus = {online->front()};
  if (online->back() != online->front()) cpus.push_back(online->back());
  for (int cpu : cpus) {
    RegisterPlanned(
        absl::StrCat("BM_MachineSpeed/cpu:", cpu), TimeMode::kReal,
        // About 6 ns a step on the 2-vCPU VM this was written on.
        [](const UnitCosts&) {
          return Cost{0, kStepsPerIteration * 6e-9, 0};
        },
        BM_MachineSpeed, cpu)
        ->Unit(benchmark::kMicrosecond);
  }
  return absl::OkStatus();
}

}  // namespace

PERFSCALE_FAMILY(machine_speed, RegisterMachineSpeedFamily);

}  // namespace perfscale
