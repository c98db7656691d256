#include "lib/flags.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace perfscale {
namespace {

constexpr size_t kMaxListValues = 4096;

struct FlagTable {
  std::map<std::string, std::unique_ptr<Flag>> flags;
  std::map<std::string, std::string> defaults;
};

FlagTable& Table() {
  static FlagTable* table = new FlagTable;
  return *table;
}

bool IsInteger(absl::string_view text) {
  if (text.empty()) return false;
  size_t start = text[0] == '-' ? 1 : 0;
  return start < text.size() && std::all_of(text.begin() + static_cast<std::ptrdiff_t>(start),
                                            text.end(), absl::ascii_isdigit);
}

}  // namespace

absl::StatusOr<int64_t> ParseInt(absl::string_view text, int64_t min, int64_t max) {
  absl::string_view body = absl::StripAsciiWhitespace(text);
  int64_t value = 0;
  if (!IsInteger(body) || !absl::SimpleAtoi(body, &value)) {
    return absl::InvalidArgumentError(absl::StrCat("'", body.substr(0, 40), "' is not an integer"));
  }
  if (value < min || value > max) {
    return absl::OutOfRangeError(absl::StrCat(value, " is out of range [", min, ", ", max, "]"));
  }
  return value;
}

absl::StatusOr<std::vector<int64_t>> ParseIntList(absl::string_view text, int64_t min,
                                                  int64_t max) {
  absl::string_view body = absl::StripAsciiWhitespace(text);
  if (body.empty()) return absl::InvalidArgumentError("empty list");
  std::vector<int64_t> values;
  for (absl::string_view item : absl::StrSplit(body, ',')) {
    item = absl::StripAsciiWhitespace(item);
    // A '-' after the first character separates a range ("2-8"); a leading one is a sign.
    size_t dash = item.find('-', 1);
    int64_t first = 0;
    int64_t last = 0;
    if (dash == absl::string_view::npos) {
      absl::StatusOr<int64_t> value = ParseInt(item, min, max);
      if (!value.ok()) return value.status();
      first = last = *value;
    } else {
      absl::StatusOr<int64_t> lo = ParseInt(item.substr(0, dash), min, max);
      if (!lo.ok()) return lo.status();
      absl::StatusOr<int64_t> hi = ParseInt(item.substr(dash + 1), min, max);
      if (!hi.ok()) return hi.status();
      if (*hi < *lo) {
        return absl::InvalidArgumentError(absl::StrCat("descending range '", item, "'"));
      }
      first = *lo;
      last = *hi;
    }
    // Unsigned: last - first overflows int64 for ranges spanning most of it.
    if (static_cast<uint64_t>(last) - static_cast<uint64_t>(first) >= kMaxListValues) {
      return absl::InvalidArgumentError(
          absl::StrCat("range '", item, "' has more than ", kMaxListValues, " values"));
    }
    // Stops at `last` before incrementing, so a range ending at INT64_MAX cannot overflow.
    for (int64_t v = first;; ++v) {
      if (std::find(values.begin(), values.end(), v) == values.end()) {
        if (values.size() == kMaxListValues) {
          return absl::InvalidArgumentError(absl::StrCat("more than ", kMaxListValues, " values"));
        }
        values.push_back(v);
      }
      if (v == last) break;
    }
  }
  return values;
}

absl::StatusOr<bool> ParseBool(absl::string_view text) {
  absl::string_view body = absl::StripAsciiWhitespace(text);
  if (body == "true" || body == "1" || body == "yes") return true;
  if (body == "false" || body == "0" || body == "no") return false;
  return absl::InvalidArgumentError(
      absl::StrCat("'", body.substr(0, 40), "' is not a boolean (true or false)"));
}

absl::StatusOr<std::vector<std::string>> ParseChoiceList(absl::string_view text,
                                                         const std::vector<std::string>& allowed) {
  absl::string_view body = absl::StripAsciiWhitespace(text);
  if (body.empty()) return absl::InvalidArgumentError("empty list");
  std::vector<std::string> chosen;
  for (absl::string_view item : absl::StrSplit(body, ',')) {
    std::string choice(absl::StripAsciiWhitespace(item));
    if (std::find(allowed.begin(), allowed.end(), choice) == allowed.end()) {
      return absl::InvalidArgumentError(absl::StrCat("unknown value '", choice.substr(0, 40),
                                                     "' (one of: ", absl::StrJoin(allowed, ", "),
                                                     ")"));
    }
    if (std::find(chosen.begin(), chosen.end(), choice) == chosen.end()) {
      chosen.push_back(choice);
    }
  }
  return chosen;
}

absl::Status Flag::Annotate(const absl::Status& status) const {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat("--", name_, ": ", status.message()));
}

namespace {

Flag& AddFlag(std::string name, std::string default_value, std::string help, bool is_bool) {
  FlagTable& table = Table();
  if (table.flags.count(name) != 0) {
    std::fprintf(stderr, "perfscale: flag --%s is defined twice\n", name.c_str());
    std::abort();
  }
  table.defaults[name] = default_value;
  auto flag = std::make_unique<Flag>(name, std::move(default_value), std::move(help), is_bool);
  Flag& ref = *flag;
  table.flags[name] = std::move(flag);
  return ref;
}

}  // namespace

Flag& DefineFlag(std::string name, std::string default_value, std::string help) {
  return AddFlag(std::move(name), std::move(default_value), std::move(help), false);
}

Flag& DefineBoolFlag(std::string name, bool default_value, std::string help) {
  return AddFlag(std::move(name), default_value ? "true" : "false", std::move(help), true);
}

absl::Status ParseFlags(int argc, char** argv) {
  FlagTable& table = Table();
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (!absl::StartsWith(arg, "--") || arg.size() == 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument '", arg, "' (flags look like --name=value)"));
    }
    absl::string_view body = arg.substr(2);
    size_t eq = body.find('=');
    std::string name(body.substr(0, eq));
    auto it = table.flags.find(name);
    if (it == table.flags.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown flag --", name, " (--help lists perfscale's and Google Benchmark's flags)"));
    }
    Flag& flag = *it->second;
    std::string value;
    if (eq != absl::string_view::npos) {
      value = std::string(body.substr(eq + 1));
    } else if (flag.is_bool()) {
      value = "true";
    } else if (i + 1 < argc && !absl::StartsWith(argv[i + 1], "--")) {
      value = argv[++i];
    } else {
      return absl::InvalidArgumentError(absl::StrCat("flag --", name, " needs a value"));
    }
    if (absl::StripAsciiWhitespace(value).empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, "=: empty value (leave the flag out for its default)"));
    }
    if (flag.is_bool()) {
      if (absl::Status valid = ParseBool(value).status(); !valid.ok()) return flag.Annotate(valid);
    }
    flag.Set(std::move(value));
  }
  return absl::OkStatus();
}

std::string FlagsHelp() {
  std::string help;
  for (const auto& [name, flag] : Table().flags) {
    absl::StrAppend(&help, "  --", name, "=", flag->value().empty() ? "..." : flag->value(),
                    "\n      ", flag->help(), "\n");
  }
  return help;
}

void ResetFlagsForTest() {
  FlagTable& table = Table();
  for (auto& [name, flag] : table.flags) {
    *flag = Flag(name, table.defaults[name], flag->help(), flag->is_bool());
  }
}

}  // namespace perfscale
