#include "testing/common/family_harness.h"

#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "benchmarks/harness/bench_support.h"
#include "benchmarks/harness/family.h"
#include "benchmarks/harness/flags.h"
#include "testing/common/benchmark_json.h"

namespace perfscale {
namespace testing {

Argv::Argv(std::vector<std::string> args) : args_(std::move(args)) {
  args_.insert(args_.begin(), "family_test");
  for (std::string& arg : args_) pointers_.push_back(arg.data());
  pointers_.push_back(nullptr);
  argc_ = static_cast<int>(args_.size());
}

absl::Status RegisterFamily(absl::string_view family, const std::vector<std::string>& flags) {
  ResetFlagsForTest();
  Argv argv(flags);
  if (absl::Status parsed = ParseFlags(*argv.argc(), argv.argv()); !parsed.ok()) return parsed;
  bool found = false;
  for (const Family& linked : Families()) {
    if (!family.empty() && linked.name != family) continue;
    found = true;
    if (absl::Status registered = linked.register_benchmarks(); !registered.ok()) {
      return registered;
    }
  }
  if (!found) return absl::NotFoundError(absl::StrCat("family '", family, "' is not linked"));
  return absl::OkStatus();
}

void InitializeBenchmark(const std::vector<std::string>& flags) {
  Argv argv(flags);
  benchmark::Initialize(argv.argc(), argv.argv());
}

std::vector<BenchmarkRun> RunBenchmarks(const std::string& filter) {
  CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter, filter);
  ReleaseRowFixtures();  // as main does once the benchmarks ran
  return reporter.runs();
}

std::vector<std::string> ListBenchmarks() {
  // Google Benchmark lists (rather than runs) under its own flag only.
  InitializeBenchmark({"--benchmark_list_tests=true"});
  CollectingReporter lister;
  std::ostringstream listed;
  lister.SetOutputStream(&listed);
  lister.SetErrorStream(&listed);
  benchmark::RunSpecifiedBenchmarks(&lister, ".");
  InitializeBenchmark({"--benchmark_list_tests=false"});
  std::vector<std::string> names;
  for (absl::string_view line : absl::StrSplit(listed.str(), '\n', absl::SkipEmpty())) {
    names.emplace_back(line);
  }
  return names;
}

std::string ExactFilter(const std::string& name) {
  std::string out = "^";
  for (char c : name) {
    if (std::string(".[]{}()\\*+?^$|").find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out + "$";
}

::testing::AssertionResult LeavesProcessAsFound(const std::function<void()>& body, int settle_ms) {
  absl::StatusOr<ProcessState> before = CaptureProcessState();
  if (!before.ok()) return ::testing::AssertionFailure() << before.status();
  body();
  absl::StatusOr<ProcessState> after = CaptureProcessStateSettled(*before, settle_ms);
  if (!after.ok()) return ::testing::AssertionFailure() << after.status();
  if (*after != *before) {
    return ::testing::AssertionFailure() << "before: " << *before << "\nafter:  " << *after;
  }
  return ::testing::AssertionSuccess();
}

double BenchmarkResult::Number(const std::string& key) const {
  auto it = numbers.find(key);
  if (it == numbers.end()) {
    ADD_FAILURE() << name << ": no number \"" << key << "\"";
    return -1;
  }
  return it->second;
}

std::vector<std::string> BinaryRun::names() const {
  std::vector<std::string> names;
  for (const BenchmarkResult& benchmark : benchmarks) names.push_back(benchmark.name);
  return names;
}

std::string FamilyBinaryPath(absl::string_view binary) { return RunfilePath(binary); }

namespace {

// The member `key` of `object` when it is a string, else "".
std::string StringOf(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

BinaryRun RunFamilyBinary(absl::string_view binary, const std::vector<std::string>& flags) {
  std::vector<std::string> args = flags;
  args.push_back("--benchmark_format=json");
  BinaryRun run;
  static_cast<CommandResult&>(run) = RunRunfile(binary, args);
  if (run.exit_code != 0) {
    run.json = absl::FailedPreconditionError(absl::StrCat("exit code ", run.exit_code));
    return run;
  }
  run.json = ParseBenchmarkJson(run.out);
  if (!run.json.ok()) return run;
  if (!run.json->is_object()) {
    run.json = absl::InvalidArgumentError("not a JSON object");
    return run;
  }
  if (auto context = run.json->find("context");
      context != run.json->end() && context->is_object()) {
    run.context = *context;
  }
  auto benchmarks = run.json->find("benchmarks");
  if (benchmarks == run.json->end() || !benchmarks->is_array()) {
    run.json = absl::InvalidArgumentError("no \"benchmarks\" array");
    return run;
  }
  for (const nlohmann::json& entry : *benchmarks) {
    BenchmarkResult result;
    result.name = StringOf(entry, "name");
    result.message = StringOf(entry, "error_message") + StringOf(entry, "skip_message");
    result.label = StringOf(entry, "label");
    result.time_unit = StringOf(entry, "time_unit");
    if (auto error = entry.find("error_occurred"); error != entry.end() && error->is_boolean()) {
      result.error = error->get<bool>();
    }
    if (auto skipped = entry.find("skipped"); skipped != entry.end() && skipped->is_boolean()) {
      result.skipped = skipped->get<bool>();
    }
    if (entry.is_object()) {
      for (const auto& [key, value] : entry.items()) {
        if (value.is_number()) result.numbers[key] = value.get<double>();
      }
    }
    run.benchmarks.push_back(std::move(result));
  }
  return run;
}

void ExpectUsageErrors(absl::string_view binary, const std::vector<BadFlag>& cases,
                       const std::vector<std::string>& common) {
  for (const BadFlag& bad : cases) {
    SCOPED_TRACE(absl::StrJoin(bad.args, " "));
    std::vector<std::string> args = bad.args;
    args.insert(args.end(), common.begin(), common.end());
    CommandResult result = RunRunfile(binary, args);
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_TRUE(absl::StrContains(result.err, bad.message)) << result.err;
    EXPECT_FALSE(absl::StrContains(result.out, "BM_")) << "ran benchmarks:\n" << result.out;
    EXPECT_FALSE(absl::StrContains(result.err, "BM_")) << result.err;
  }
}

}  // namespace testing
}  // namespace perfscale
