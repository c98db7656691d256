#include "benchmarks/harness/flags.h"

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

using FlagTable = std::map<std::string, std::unique_ptr<Flag>>;

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

absl::Status NotABoolean(absl::string_view text) {
  return absl::InvalidArgumentError(
      absl::StrCat("'", absl::StripAsciiWhitespace(text).substr(0, 40), "' is not a boolean"));
}

absl::Status Flag::Annotate(const absl::Status& status) const {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat("--", name(), ": ", status.message()));
}

absl::Status Flag::Reject(absl::string_view value, const absl::Status& status) const {
  return absl::InvalidArgumentError(absl::StrCat("--", name(), "=", value.substr(0, 64), ": ",
                                                 status.message(), " (allowed: ", info_.values,
                                                 ")"));
}

namespace {

void Abort(const std::string& message) {
  std::fprintf(stderr, "perfscale: %s\n", message.c_str());
  std::abort();
}

}  // namespace

Flag& DefineFlag(FlagInfo info, std::string default_value) {
  FlagTable& table = Table();
  std::string name = info.name;
  if (table.count(name) != 0) Abort(absl::StrCat("flag --", name, " is defined twice"));
  auto flag = std::make_unique<Flag>(std::move(info), std::move(default_value));
  Flag& ref = *flag;
  table[name] = std::move(flag);
  return ref;
}

Flag& DefineSuiteFlag(std::string name, std::string default_value, std::string values,
                      std::string help, std::string default_text) {
  FlagInfo info;
  info.name = std::move(name);
  info.group = "suite";
  info.help = std::move(help);
  info.values = std::move(values);
  info.default_text = default_text.empty() ? default_value : std::move(default_text);
  return DefineFlag(std::move(info), std::move(default_value));
}

Flag& DefineSuiteBoolFlag(std::string name, bool default_value, std::string help) {
  FlagInfo info;
  info.name = std::move(name);
  info.group = "suite";
  info.help = std::move(help);
  info.values = "true or false";
  std::string text = default_value ? "true" : "false";
  info.default_text = text;
  info.is_bool = true;
  return DefineFlag(std::move(info), std::move(text));
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
    auto it = table.find(name);
    if (it == table.end()) {
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
    const std::vector<std::string>& also = flag.info().also;
    if (flag.is_bool() && !ParseBool(value).ok() &&
        std::find(also.begin(), also.end(), value) == also.end()) {
      return flag.Reject(value, NotABoolean(value));
    }
    flag.Set(std::move(value));
  }
  return absl::OkStatus();
}

std::string FlagsHelp() {
  // "suite" first, then the families in name order.
  std::map<std::pair<bool, std::string>, std::vector<const Flag*>> groups;
  for (const auto& [name, flag] : Table()) {
    const std::string& group = flag->info().group;
    groups[{group != "suite", group}].push_back(flag.get());
  }
  std::string help;
  for (const auto& [key, flags] : groups) {
    absl::StrAppend(&help, key.second, " flags:\n");
    for (const Flag* flag : flags) {
      const FlagInfo& info = flag->info();
      absl::StrAppend(
          &help, "  --", info.name, "\n      ", info.help, "\n      values: ", info.values,
          "\n      default: ", info.default_text.empty() ? "(none)" : info.default_text, "\n");
      if (!info.quick_text.empty()) {
        absl::StrAppend(&help, "      --quick: ", info.quick_text, "\n");
      }
    }
  }
  return help;
}

std::vector<const Flag*> AllFlags() {
  std::vector<const Flag*> flags;
  for (const auto& [name, flag] : Table()) flags.push_back(flag.get());
  return flags;
}

void ResetFlagsForTest() {
  for (auto& [name, flag] : Table()) flag->Reset();
}

ChoiceTable<std::string> ChoicesOf(const std::vector<std::string>& names) {
  ChoiceTable<std::string> table;
  for (const std::string& name : names) table.push_back(Choice<std::string>{name, name});
  return table;
}

namespace flags_internal {

std::string IntValues(int64_t min, int64_t max) {
  return absl::StrCat("an integer ", min, "..", max);
}

std::string IntListValues(int64_t min, int64_t max,
                          const std::vector<std::pair<std::string, int64_t>>& words) {
  std::string values = absl::StrCat("integers ", min, "..", max);
  for (const auto& [word, value] : words) absl::StrAppend(&values, " or ", word);
  return absl::StrCat(values, ", as a list (0,4 or 1-8)");
}

absl::StatusOr<std::vector<int64_t>> ParseIntListWithWords(
    absl::string_view text, int64_t min, int64_t max,
    const std::vector<std::pair<std::string, int64_t>>& words) {
  if (words.empty()) return ParseIntList(text, min, max);
  // Each word stands for its value; the numbers around it are parsed as usual.
  std::vector<int64_t> values;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    absl::string_view stripped = absl::StripAsciiWhitespace(item);
    auto word = std::find_if(words.begin(), words.end(),
                             [stripped](const auto& entry) { return entry.first == stripped; });
    if (word == words.end()) {
      absl::StatusOr<std::vector<int64_t>> parsed = ParseIntList(item, min, max);
      if (!parsed.ok()) return parsed.status();
      for (int64_t v : *parsed) {
        if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
      }
    } else if (std::find(values.begin(), values.end(), word->second) == values.end()) {
      values.push_back(word->second);
    }
  }
  return values;
}

absl::Status UnknownChoice(absl::string_view item) {
  return absl::InvalidArgumentError(absl::StrCat("unknown value '", item.substr(0, 40), "'"));
}

// Items stripped of whitespace; an empty text or item is one empty item, which no table has.
std::vector<absl::string_view> SplitList(absl::string_view text) {
  std::vector<absl::string_view> items;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    items.push_back(absl::StripAsciiWhitespace(item));
  }
  return items;
}

std::string ChoiceValues(const std::vector<std::string>& names, bool list) {
  return absl::StrCat(list ? "one or more of " : "one of ", absl::StrJoin(names, ", "));
}

std::vector<Flag*> RegisterFamily(const std::string& family, std::vector<FlagInfo> infos) {
  std::vector<Flag*> flags;
  for (FlagInfo& info : infos) {
    if (!absl::StartsWith(info.name, family + "_")) {
      Abort(absl::StrCat("flag --", info.name, " of family ", family, " lacks the prefix ", family,
                         "_"));
    }
    info.group = family;
    flags.push_back(&DefineFlag(std::move(info), ""));
  }
  return flags;
}

}  // namespace flags_internal

}  // namespace perfscale
