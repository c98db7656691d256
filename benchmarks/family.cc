#include "benchmarks/family.h"

#include <regex.h>

#include "lib/flags.h"

namespace perfscale {
namespace {

Flag& quick_flag =
    DefineBoolFlag("quick", false, "smaller default parameter lists, for a smoke run (true/false)");

struct RunSelection {
  std::string filter = ".";
  bool negative = false;
  bool list_only = false;
};

RunSelection& Selection() {
  static auto* selection = new RunSelection;
  return *selection;
}

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

bool QuickRun() { return quick_flag.bool_value(); }

void SetRunSelection(const std::string& filter, bool list_only) {
  RunSelection& selection = Selection();
  selection.filter = filter.empty() || filter == "all" ? "." : filter;
  selection.negative = selection.filter[0] == '-';
  if (selection.negative) selection.filter.erase(0, 1);
  selection.list_only = list_only;
}

bool WillRun(const std::string& name) {
  const RunSelection& selection = Selection();
  if (selection.list_only) return false;
  regex_t compiled;
  // A filter that does not compile was rejected before any family registered.
  if (regcomp(&compiled, selection.filter.c_str(), REG_EXTENDED | REG_NOSUB) != 0) return true;
  bool matches = regexec(&compiled, name.c_str(), 0, nullptr, 0) == 0;
  regfree(&compiled);
  return matches != selection.negative;
}

}  // namespace perfscale
