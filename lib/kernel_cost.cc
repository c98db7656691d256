#include "lib/kernel_cost.h"

#include <sys/resource.h>

namespace perfscale {
namespace {

double Seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec * 1e-6; }

}  // namespace

KernelCost& KernelCost::operator+=(const KernelCost& other) {
  ipis.function_call += other.ipis.function_call;
  ipis.tlb_shootdown += other.ipis.tlb_shootdown;
  ipis.rescheduling += other.ipis.rescheduling;
  system_seconds += other.system_seconds;
  user_seconds += other.user_seconds;
  if (other.tasks.has_value()) {
    if (!tasks.has_value()) tasks.emplace();
    *tasks += *other.tasks;
  }
  return *this;
}

KernelCostMeter::KernelCostMeter(bool include_children, bool attribute_tasks,
                                 const TaskCounters::Options& task_options)
    : include_children_(include_children) {
  if (attribute_tasks) tasks_ = TaskCounters::Open(task_options);
}

absl::StatusOr<KernelCostMeter::Sample> KernelCostMeter::TakeSample() const {
  Sample sample;
  absl::StatusOr<IpiCounts> ipis = ReadIpiCounts();
  if (!ipis.ok()) return ipis.status();
  sample.ipis = *std::move(ipis);
  rusage self{};
  getrusage(RUSAGE_SELF, &self);
  sample.system_seconds = Seconds(self.ru_stime);
  sample.user_seconds = Seconds(self.ru_utime);
  if (include_children_) {
    rusage children{};
    getrusage(RUSAGE_CHILDREN, &children);
    sample.system_seconds += Seconds(children.ru_stime);
    sample.user_seconds += Seconds(children.ru_utime);
  }
  return sample;
}

absl::Status KernelCostMeter::Start() {
  absl::StatusOr<Sample> sample = TakeSample();
  if (!sample.ok()) return sample.status();
  start_ = *std::move(sample);
  // Last, so that reading /proc/interrupts is outside the attributed window.
  return tasks_ != nullptr ? tasks_->Start() : absl::OkStatus();
}

absl::StatusOr<KernelCost> KernelCostMeter::Stop() {
  std::optional<TaskCounts> tasks;
  if (tasks_ != nullptr) {
    absl::StatusOr<TaskCounts> counted = tasks_->Stop();
    if (!counted.ok()) return counted.status();
    tasks = *counted;
  }
  absl::StatusOr<Sample> end = TakeSample();
  if (!end.ok()) return end.status();
  KernelCost cost;
  cost.ipis = end->ipis - start_.ipis;
  cost.system_seconds = end->system_seconds - start_.system_seconds;
  cost.user_seconds = end->user_seconds - start_.user_seconds;
  cost.tasks = tasks;
  return cost;
}

}  // namespace perfscale
