#include "benchmarks/harness/benchmark_flags.h"

#include <fcntl.h>
#include <regex.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "benchmarks/harness/flags.h"
#include "lib/errno_status.h"

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

// Asks the kernel, as Google Benchmark's open will: access(2) says yes to root for /proc
// and /sys. A file the probe created is removed again; an existing one is left as it was.
absl::Status ProbeWritable(const std::string& path) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd >= 0) {
    close(fd);
    unlink(path.c_str());
    return absl::OkStatus();
  }
  if (errno != EEXIST) return ErrnoStatus(errno, "create");
  fd = open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "open for writing");
  close(fd);
  return absl::OkStatus();
}

// Google Benchmark compiles the filter as a POSIX extended regex after dropping a
// leading '-' (a negative filter), and runs nothing when it does not compile.
absl::Status CompileFilter(absl::string_view filter) {
  absl::ConsumePrefix(&filter, "-");
  std::string pattern(filter);
  regex_t compiled;
  int err = regcomp(&compiled, pattern.c_str(), REG_EXTENDED | REG_NOSUB);
  if (err == 0) {
    regfree(&compiled);
    return absl::OkStatus();
  }
  char message[256];
  regerror(err, &compiled, message, sizeof(message));
  return absl::InvalidArgumentError(message);
}

absl::Status CheckOne(absl::string_view name, absl::string_view value) {
  if (name == "benchmark_repetitions") {
    int repetitions = 0;
    if (!absl::SimpleAtoi(value, &repetitions) || repetitions < 1) {
      return Bad(name, value, "a positive integer");
    }
  } else if (name == "benchmark_min_time" || name == "benchmark_min_warmup_time") {
    // Google Benchmark 1.8+ reads min_time as "<seconds>s" (a bare number still works, with
    // a warning) or "<iterations>x"; the suite plan reads the seconds, so "x" is refused.
    // min_warmup_time stays a plain number of seconds.
    absl::string_view number = value;
    if (name == "benchmark_min_time") absl::ConsumeSuffix(&number, "s");
    double seconds = 0;
    if (!absl::SimpleAtod(number, &seconds) || !(seconds >= 0) || seconds > 1e6) {
      return Bad(
          name, value,
          name == "benchmark_min_time" ? "seconds >= 0, such as 0.5s" : "a number of seconds >= 0");
    }
  } else if (name == "benchmark_format" || name == "benchmark_out_format") {
    if (!IsOneOf(value, {"console", "json", "csv"}))
      return Bad(name, value, "console, json or csv");
  } else if (name == "benchmark_out") {
    if (value.empty()) return Bad(name, value, "a file in an existing, writable directory");
    if (absl::Status writable = ProbeWritable(std::string(value)); !writable.ok()) {
      return Bad(name, value,
                 absl::StrCat("a file this process can write (", writable.message(), ")"));
    }
  } else if (name == "benchmark_time_unit") {
    if (!IsOneOf(value, {"ns", "us", "ms", "s"})) return Bad(name, value, "ns, us, ms or s");
  } else if (name == "benchmark_filter") {
    if (absl::Status compiled = CompileFilter(value); !compiled.ok()) {
      return Bad(name, value, absl::StrCat("a regular expression (", compiled.message(), ")"));
    }
  } else if (IsOneOf(name, {"benchmark_list_tests", "benchmark_enable_random_interleaving",
                            "benchmark_report_aggregates_only", "benchmark_display_aggregates_only",
                            "benchmark_counters_tabular"})) {
    // Google Benchmark reads anything but a few spellings of "false" as true.
    if (!ParseBool(value).ok()) return Bad(name, value, "true or false");
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
