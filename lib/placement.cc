#include "lib/placement.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace perfscale {

const std::vector<std::string>& PlacementNames() {
  static const auto* names = new std::vector<std::string>{"unpinned", "same_cpu", "other_cpus"};
  return *names;
}

absl::StatusOr<Placement> ResolvePlacement(absl::string_view name) {
  if (name == "unpinned") return Placement{};
  if (name != "same_cpu" && name != "other_cpus") {
    return absl::InvalidArgumentError(absl::StrCat("unknown placement '", name, "'"));
  }
  absl::StatusOr<CpuMask> allowed = GetAffinity();
  if (!allowed.ok()) return allowed.status();
  std::vector<int> cpus = allowed->Cpus();
  if (cpus.empty()) return absl::FailedPreconditionError("no CPU in this thread's affinity");
  if (name == "same_cpu") return Placement{{cpus[0]}, {cpus[0]}};
  if (cpus.size() < 2) {
    return absl::FailedPreconditionError(
        "placement other_cpus needs at least 2 CPUs in this thread's affinity");
  }
  return Placement{{cpus[0]}, std::vector<int>(cpus.begin() + 1, cpus.end())};
}

absl::StatusOr<std::unique_ptr<ScopedAffinity>> PinDriver(const Placement& placement) {
  if (placement.driver.empty()) return std::unique_ptr<ScopedAffinity>();
  absl::StatusOr<ScopedAffinity> pin = ScopedAffinity::PinTo(placement.driver);
  if (!pin.ok()) return pin.status();
  return std::make_unique<ScopedAffinity>(*std::move(pin));
}

}  // namespace perfscale
