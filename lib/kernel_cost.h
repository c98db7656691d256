// Measures what the kernel spent around a piece of work: IPIs (system-wide, from
// /proc/interrupts), this process's system and user CPU time (all its threads, plus
// reaped children when asked) and, with `attribute_tasks`, what the calling thread and
// the tasks it creates afterwards caused (lib/task_counters.h). Construct it before the
// benchmark creates its threads (inheritance only reaches tasks created later); start it
// before the timed loop and stop it after, so the reads themselves are never timed.
//
// Example:
//   perfscale::KernelCostMeter meter(/*include_children=*/false, /*attribute_tasks=*/true);
//   ... create threads ...
//   meter.Start();
//   for (auto _ : state) { ... }
//   absl::StatusOr<perfscale::KernelCost> cost = meter.Stop();
#ifndef PERFSCALE_LIB_KERNEL_COST_H_
#define PERFSCALE_LIB_KERNEL_COST_H_

#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lib/interrupts.h"
#include "lib/task_counters.h"

namespace perfscale {

struct KernelCost {
  IpiCounts ipis;
  double system_seconds = 0;
  double user_seconds = 0;
  std::optional<TaskCounts> tasks;  // with attribute_tasks
  KernelCost& operator+=(const KernelCost& other);
};

class KernelCostMeter {
 public:
  explicit KernelCostMeter(bool include_children = false, bool attribute_tasks = false,
                           const TaskCounters::Options& task_options = {});
  // Errors only when /proc/interrupts or the attribution counters cannot be read; CPU
  // times always work.
  absl::Status Start();
  absl::StatusOr<KernelCost> Stop();
  // Null without attribute_tasks.
  const TaskCounters* task_counters() const { return tasks_.get(); }

 private:
  struct Sample {
    IpiCounts ipis;
    double system_seconds = 0;
    double user_seconds = 0;
  };
  absl::StatusOr<Sample> TakeSample() const;
  bool include_children_;
  std::unique_ptr<TaskCounters> tasks_;
  Sample start_;
};

}  // namespace perfscale

#endif  // PERFSCALE_LIB_KERNEL_COST_H_
