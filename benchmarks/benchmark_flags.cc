#include "benchmarks/benchmark_flags.h"

#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace perfscale {
namespace {

absl::Status Bad(absl::string_view flag, absl::string_view value, absl::string_view expected) {
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, "=", value.substr(0, 64), ": expected ", expected));
}

bool IsOneOf(absl::string_view value, std::initializer_list<absl::string_view> choices) {
  for (absl::string_view choice : choices) {
    if (value == choice) return true;
  }
  return false;
}

// The directory a file would be created in must exist and be writable.
bool CanCreate(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  return access(dir.c_str(), W_OK | X_OK) == 0;
}

absl::Status CheckOne(absl::string_view name, absl::string_view value) {
  if (name == "benchmark_repetitions") {
    int repetitions = 0;
    if (!absl::SimpleAtoi(value, &repetitions) || repetitions < 1) {
      return Bad(name, value, "a positive integer");
    }
  } else if (name == "benchmark_min_time" || name == "benchmark_min_warmup_time") {
    double seconds = 0;
    if (!absl::SimpleAtod(value, &seconds) || !(seconds >= 0) || seconds > 1e6) {
      return Bad(name, value, "a number of seconds >= 0");
    }
  } else if (name == "benchmark_format" || name == "benchmark_out_format") {
    if (!IsOneOf(value, {"console", "json", "csv"}))
      return Bad(name, value, "console, json or csv");
  } else if (name == "benchmark_out") {
    if (value.empty() || !CanCreate(std::string(value))) {
      return Bad(name, value, "a file in an existing, writable directory");
    }
  } else if (name == "benchmark_color") {
    if (!IsOneOf(value, {"auto", "true", "false", "yes", "no", "1", "0"})) {
      return Bad(name, value, "auto, true or false");
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckBenchmarkFlags(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    if (!absl::StartsWith(arg, "--benchmark_")) continue;
    absl::string_view body = absl::string_view(arg).substr(2);
    size_t eq = body.find('=');
    if (eq == absl::string_view::npos) continue;  // booleans and bare flags: its own parser
    if (absl::Status status = CheckOne(body.substr(0, eq), body.substr(eq + 1)); !status.ok()) {
      return status;
    }
  }
  return absl::OkStatus();
}

}  // namespace perfscale
