#include "benchmarks/family.h"

#include "lib/flags.h"

namespace perfscale {
namespace {

Flag& quick_flag =
    DefineFlag("quick", "false", "smaller default parameter lists, for a smoke run (true/false)");

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

bool QuickRun() { return quick_flag.value() == "true" || quick_flag.value() == "1"; }

}  // namespace perfscale
