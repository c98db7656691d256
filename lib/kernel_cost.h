// Measures what the kernel spent around a piece of work: IPIs (system-wide, from
// /proc/interrupts) and this process's system and user CPU time (all its threads, plus
// reaped children when asked). Benchmarks start it before their timed loop and stop it
// after, so the reads themselves are never timed.
//
// Example:
//   perfscale::KernelCostMeter meter;
//   meter.Start();
//   for (auto _ : state) { ... }
//   absl::StatusOr<perfscale::KernelCost> cost = meter.Stop();
#ifndef PERFSCALE_LIB_KERNEL_COST_H_
#define PERFSCALE_LIB_KERNEL_COST_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lib/interrupts.h"

namespace perfscale {

struct KernelCost {
  IpiCounts ipis;
  double system_seconds = 0;
  double user_seconds = 0;
};

class KernelCostMeter {
 public:
  explicit KernelCostMeter(bool include_children = false) : include_children_(include_children) {}
  // Errors only when /proc/interrupts cannot be read; CPU times always work.
  absl::Status Start();
  absl::StatusOr<KernelCost> Stop();

 private:
  struct Sample {
    IpiCounts ipis;
    double system_seconds = 0;
    double user_seconds = 0;
  };
  absl::StatusOr<Sample> TakeSample() const;
  bool include_children_;
  Sample start_;
};

}  // namespace perfscale

#endif  // PERFSCALE_LIB_KERNEL_COST_H_
