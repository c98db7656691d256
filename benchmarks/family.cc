#include "benchmarks/family.h"

namespace perfscale {
namespace {

std::vector<Family>& MutableFamilies() {
  static auto* families = new std::vector<Family>;
  return *families;
}

}  // namespace

int AddFamily(const char* name, absl::Status (*register_benchmarks)()) {
  MutableFamilies().push_back(Family{name, register_benchmarks});
  return 0;
}

const std::vector<Family>& Families() { return MutableFamilies(); }

}  // namespace perfscale
