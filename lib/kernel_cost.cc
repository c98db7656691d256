#include "lib/kernel_cost.h"

#include <sys/resource.h>

namespace perfscale {
namespace {

double Seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec * 1e-6; }

}  // namespace

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
  return absl::OkStatus();
}

absl::StatusOr<KernelCost> KernelCostMeter::Stop() {
  absl::StatusOr<Sample> end = TakeSample();
  if (!end.ok()) return end.status();
  KernelCost cost;
  cost.ipis = end->ipis - start_.ipis;
  cost.system_seconds = end->system_seconds - start_.system_seconds;
  cost.user_seconds = end->user_seconds - start_.user_seconds;
  return cost;
}

}  // namespace perfscale
