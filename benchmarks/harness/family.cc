#include "benchmarks/harness/family.h"

#include <regex.h>

#include "absl/strings/str_cat.h"
#include "benchmarks/harness/flags.h"
#include "lib/cpu_set.h"

namespace perfscale {
namespace {

Flag& quick_flag =
    DefineSuiteBoolFlag("quick", false,
                        "every family's smaller default parameter lists, for a smoke run (--help "
                        "gives each flag's)");

struct RunSelection {
  std::string filter = ".";
  bool negative = false;
  bool list_only = false;
};

RunSelection& Selection() {
  static auto* selection = new RunSelection;
  return *selection;
}

Flag& plan_cpus_flag =
    DefineSuiteFlag("plan_cpus", "", "an integer 1..8192",
                    "with --plan: size the default parameter lists for this many CPUs",
                    "this machine's online CPUs");

constexpr int64_t kMaxPlanCpus = 8192;

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

FlagEnv FamilyFlagEnv() { return FlagEnv{QuickRun(), PlannedCpuCount()}; }

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

bool PlanCpusGiven() { return !plan_cpus_flag.value().empty(); }

int PlannedCpuCount() { return static_cast<int>(PlannedCpus().size()); }

std::vector<int> PlannedCpus() {
  absl::StatusOr<int64_t> planned = ParseInt(plan_cpus_flag.value(), 1, kMaxPlanCpus);
  if (PlanCpusGiven() && planned.ok()) {
    std::vector<int> cpus;
    for (int cpu = 0; cpu < *planned; ++cpu) cpus.push_back(cpu);
    return cpus;
  }
  absl::StatusOr<std::vector<int>> online = OnlineCpus();
  return online.ok() && !online->empty() ? *online : std::vector<int>{0};
}

absl::Status CheckPlanCpus(bool plan_only) {
  if (!PlanCpusGiven()) return absl::OkStatus();
  absl::StatusOr<int64_t> planned = ParseInt(plan_cpus_flag.value(), 1, kMaxPlanCpus);
  if (!planned.ok()) return plan_cpus_flag.Reject(plan_cpus_flag.value(), planned.status());
  if (!plan_only) {
    return plan_cpus_flag.Annotate(absl::InvalidArgumentError(
        "a plan for another machine's size cannot run here: add --plan"));
  }
  return absl::OkStatus();
}

}  // namespace perfscale
