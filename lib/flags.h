// perf-bench-style parameters that sit beside Google Benchmark's own flags, e.g.
// `--breakpoints=0,4 --parallelism=2`. Families define their flags as statics; the
// shared main parses what Google Benchmark left over, and rejects anything unknown with
// a message naming it. Value parsers are pure so tests and fuzzers can feed them anything.
//
// Example:
//   perfscale::Flag& breakpoints = perfscale::DefineFlag(
//       "breakpoints", "", "breakpoints held while threads churn (default 0,1,2,4)");
//   absl::StatusOr<std::vector<int64_t>> values =
//       perfscale::ParseIntList(breakpoints.value(), 0, 64);
#ifndef PERFSCALE_LIB_FLAGS_H_
#define PERFSCALE_LIB_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace perfscale {

// "5" -> 5, within [min, max].
absl::StatusOr<int64_t> ParseInt(absl::string_view text, int64_t min, int64_t max);

// "0,4" or "1-8" or "1,2,8-10", each value within [min, max], in the order given,
// duplicates dropped. At most 4096 values, so a typo cannot ask for billions of runs.
absl::StatusOr<std::vector<int64_t>> ParseIntList(absl::string_view text, int64_t min, int64_t max);

// "true"/"false" (also "1"/"0", "yes"/"no"): Google Benchmark's booleans and ours.
absl::StatusOr<bool> ParseBool(absl::string_view text);

// "mutex,atomic" where every item is one of `allowed`; duplicates dropped.
absl::StatusOr<std::vector<std::string>> ParseChoiceList(absl::string_view text,
                                                         const std::vector<std::string>& allowed);

class Flag {
 public:
  Flag(std::string name, std::string default_value, std::string help, bool is_bool = false)
      : name_(std::move(name)),
        value_(std::move(default_value)),
        help_(std::move(help)),
        is_bool_(is_bool) {}
  const std::string& name() const { return name_; }
  const std::string& value() const { return value_; }
  const std::string& help() const { return help_; }
  bool is_set() const { return is_set_; }
  bool is_bool() const { return is_bool_; }
  // The value of a flag made by DefineBoolFlag (ParseFlags accepted only booleans).
  bool bool_value() const { return ParseBool(value_).value_or(false); }
  void Set(std::string value) {
    value_ = std::move(value);
    is_set_ = true;
  }
  // Prefixes a value-parsing error with "--name: ".
  absl::Status Annotate(const absl::Status& status) const;

 private:
  std::string name_;
  std::string value_;
  std::string help_;
  bool is_bool_;
  bool is_set_ = false;
};

// Registers a flag in the process-wide table (call from a static initializer). The same
// name defined twice aborts at startup: two families must not disagree on a flag.
Flag& DefineFlag(std::string name, std::string default_value, std::string help);
// A boolean flag: `--name` alone means true; any value but a boolean is rejected.
Flag& DefineBoolFlag(std::string name, bool default_value, std::string help);

// Parses argv[1..argc) as --name=value (or --name value) against the table, leaving
// argv untouched. Unknown flags, positional arguments, empty values (`--name=`: leave
// the flag out for its default) and non-booleans for boolean flags are errors naming
// the flag, the same for every flag.
absl::Status ParseFlags(int argc, char** argv);

// One line per flag, sorted, for --help.
std::string FlagsHelp();

// Test hook: forget values set by ParseFlags.
void ResetFlagsForTest();

}  // namespace perfscale

#endif  // PERFSCALE_LIB_FLAGS_H_
