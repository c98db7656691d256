// perf-bench-style parameters that sit beside Google Benchmark's own flags, e.g.
// `--breakpoint_breakpoints=0,4 --breakpoint_parallelism=2`.
//
// Each family declares its parameters as one table, the way perf bench declares its
// options (`OPT_UINTEGER('t', "threads", &params.nthreads, ...)`): every entry is typed
// (an integer, a list of integers, a boolean, a choice or a list of choices from a
// string<->value table, or a value with its own parser), binds one field of the family's
// parameter struct, and carries its range, its default and its `--quick` default. The
// table registers the flags at static initialization; the shared main parses what
// Google Benchmark left over (ParseFlags) and the family resolves its table into its
// struct when it registers its benchmarks. Every bad value is rejected the same way:
// `--name=value: what is wrong (allowed: what is allowed)`, and the binary exits 2.
//
// A family's flags are named `<family>_<parameter>`, so that in the combined binary a
// flag's family is obvious; flags without a family prefix belong to the whole suite.
// `--help` (FlagsHelp) prints every flag's help, values, default and `--quick` default
// from the same table; docs/flags.md is checked against it.
//
// Example:
//   struct Params {
//     std::vector<int64_t> breakpoints;
//     int threads = 0;
//   };
//   const FlagList<Params> flags("breakpoint", {
//       IntListFlag(&Params::breakpoints, "breakpoint_breakpoints", 0, 64,
//                   "breakpoints held during thread churn")
//           .Default("0,1,2,4").Quick("0,4"),
//       IntFlag(&Params::threads, "breakpoint_threads", 1, 100000, "threads per batch")
//           .Default("20"),
//   });
//   absl::StatusOr<Params> params = flags.Resolve(FlagEnv{quick, cpus});
#ifndef PERFSCALE_BENCHMARKS_HARNESS_FLAGS_H_
#define PERFSCALE_BENCHMARKS_HARNESS_FLAGS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace perfscale {

// --- Pure value parsers (tests and fuzzers feed them anything) ---

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

// "'maybe' is not a boolean": the uniform rejection adds "(allowed: true or false)".
absl::Status NotABoolean(absl::string_view text);

// --- The process-wide table of flag texts ---

// What --help says about a flag, and what ParseFlags needs to know.
struct FlagInfo {
  std::string name;               // without the dashes
  std::string group;              // the family, or "suite" for the suite-wide flags
  std::string help;               // what it is for
  std::string values;             // what is allowed: "integers 0..64, as a list (0,4 or 1-8)"
  std::string default_text;       // the default as --help and docs/flags.md state it
  std::string quick_text;         // the default under --quick, when it differs
  bool is_bool = false;           // `--name` alone means true
  std::vector<std::string> also;  // words a boolean flag takes besides booleans
};

// One flag's text as the command line left it.
class Flag {
 public:
  Flag(FlagInfo info, std::string default_value)
      : info_(std::move(info)), default_(default_value), value_(std::move(default_value)) {}
  const std::string& name() const { return info_.name; }
  const FlagInfo& info() const { return info_; }
  const std::string& value() const { return value_; }
  bool is_set() const { return is_set_; }
  bool is_bool() const { return info_.is_bool; }
  // The value of a boolean flag (ParseFlags accepted only booleans).
  bool bool_value() const { return ParseBool(value_).value_or(false); }
  void Set(std::string value) {
    value_ = std::move(value);
    is_set_ = true;
  }
  void Reset() {
    value_ = default_;
    is_set_ = false;
  }
  // The uniform rejection: "--name=value: <status message> (allowed: <values>)".
  absl::Status Reject(absl::string_view value, const absl::Status& status) const;
  // Prefixes a message with "--name: " (for what concerns the flag, not one value).
  absl::Status Annotate(const absl::Status& status) const;

 private:
  FlagInfo info_;
  std::string default_;
  std::string value_;
  bool is_set_ = false;
};

// Registers a flag (call from a static initializer). The same name defined twice aborts at startup:
// two families must not disagree on a flag. `default_value` is the text used when the flag is not
// given ("" for none).
Flag& DefineFlag(FlagInfo info, std::string default_value);

// A suite-wide flag with a fixed default, e.g. DefineSuiteFlag("budget", "10m", ...).
Flag& DefineSuiteFlag(std::string name, std::string default_value, std::string values,
                      std::string help, std::string default_text = "");
Flag& DefineSuiteBoolFlag(std::string name, bool default_value, std::string help);

// Parses argv[1..argc) as --name=value (or --name value) against the table, leaving
// argv untouched. Unknown flags, positional arguments, empty values (`--name=`: leave
// the flag out for its default) and non-booleans for boolean flags are errors naming
// the flag, the same for every flag.
absl::Status ParseFlags(int argc, char** argv);

// For --help: per group ("suite" first, then the families), each flag sorted by name:
//   "  --name\n      help\n      values: ...\n      default: ...\n"
//   "      --quick: ...\n" (when it differs).
std::string FlagsHelp();

// The flags of the table, sorted by name (for tests).
std::vector<const Flag*> AllFlags();

// Test hook: forget values set by ParseFlags.
void ResetFlagsForTest();

// --- Typed definitions: a family's table ---

// What a default may depend on: --quick and the CPUs the run is planned for.
struct FlagEnv {
  bool quick = false;
  int cpus = 1;
};

// One entry of a string<->value table.
template <typename E>
struct Choice {
  std::string name;
  E value;
  bool operator==(const Choice& other) const { return name == other.name; }
};
template <typename E>
using ChoiceTable = std::vector<Choice<E>>;

// The table of an enum whose names live beside it (`const char* GridOrderName(GridOrder)`).
template <typename E>
ChoiceTable<E> ChoicesOf(std::initializer_list<E> values, const char* (*name)(E)) {
  ChoiceTable<E> table;
  for (E value : values) table.push_back(Choice<E>{name(value), value});
  return table;
}
// Plain names, each its own value.
ChoiceTable<std::string> ChoicesOf(const std::vector<std::string>& names);

// One typed entry of a family's table, bound to a field of the parameter struct P.
template <typename P>
class FlagSpec {
 public:
  using Setter = std::function<absl::Status(absl::string_view text, P* params)>;
  using DefaultFn = std::function<std::string(const FlagEnv& env)>;

  FlagSpec(FlagInfo info, size_t offset, Setter set)
      : info_(std::move(info)), offset_(offset), set_(std::move(set)) {}

  // The default, as a value text: parsed and range-checked like a user's value.
  FlagSpec Default(std::string text) && {
    info_.default_text = text;
    default_ = [text](const FlagEnv&) { return text; };
    return std::move(*this);
  }
  // A default that follows the machine: `description` is what --help says.
  FlagSpec Default(std::string description, DefaultFn fn) && {
    info_.default_text = std::move(description);
    default_ = std::move(fn);
    return std::move(*this);
  }
  // The family fills in the default itself (e.g. "every online CPU"): the field gets the
  // parse of an empty text.
  FlagSpec DefaultMeans(std::string description) && {
    info_.default_text = std::move(description);
    default_ = nullptr;
    return std::move(*this);
  }
  // Under --quick, when the flag is not given.
  FlagSpec Quick(std::string text) && {
    info_.quick_text = text;
    quick_ = [text](const FlagEnv&) { return text; };
    return std::move(*this);
  }
  FlagSpec Quick(std::string description, DefaultFn fn) && {
    info_.quick_text = std::move(description);
    quick_ = std::move(fn);
    return std::move(*this);
  }
  // What --help and the rejections say is allowed, where the type's own wording would
  // not be the whole truth (a power of two; at most one per CPU).
  FlagSpec Values(std::string values) && {
    info_.values = std::move(values);
    return std::move(*this);
  }

  const FlagInfo& info() const { return info_; }
  size_t offset() const { return offset_; }
  // The text the field is parsed from: the user's, else the (--quick) default's.
  std::string Text(const Flag& flag, const FlagEnv& env) const {
    if (flag.is_set()) return flag.value();
    if (env.quick && quick_) return quick_(env);
    return default_ ? default_(env) : std::string();
  }
  absl::Status Set(absl::string_view text, P* params) const { return set_(text, params); }

 private:
  FlagInfo info_;
  size_t offset_;
  Setter set_;
  DefaultFn default_;
  DefaultFn quick_;
};

namespace flags_internal {

// Where a field sits in P: the key FlagList finds a field's flag by.
template <typename P, typename T>
size_t OffsetOf(T P::*field) {
  static const P probe{};
  return static_cast<size_t>(reinterpret_cast<const char*>(&(probe.*field)) -
                             reinterpret_cast<const char*>(&probe));
}

template <typename P, typename T>
FlagSpec<P> Spec(T P::*field, std::string name, std::string values, std::string help,
                 typename FlagSpec<P>::Setter set, bool is_bool = false) {
  FlagInfo info;
  info.name = std::move(name);
  info.help = std::move(help);
  info.values = std::move(values);
  info.is_bool = is_bool;
  return FlagSpec<P>(std::move(info), OffsetOf(field), std::move(set));
}

std::string IntValues(int64_t min, int64_t max);
std::string IntListValues(int64_t min, int64_t max,
                          const std::vector<std::pair<std::string, int64_t>>& words);
absl::StatusOr<std::vector<int64_t>> ParseIntListWithWords(
    absl::string_view text, int64_t min, int64_t max,
    const std::vector<std::pair<std::string, int64_t>>& words);
std::string ChoiceValues(const std::vector<std::string>& names, bool list);
// Registers the table's flags under `family` (aborts on a name without the prefix).
std::vector<Flag*> RegisterFamily(const std::string& family, std::vector<FlagInfo> infos);

template <typename E>
std::vector<std::string> NamesOf(const ChoiceTable<E>& table) {
  std::vector<std::string> names;
  for (const Choice<E>& choice : table) names.push_back(choice.name);
  return names;
}

// "a,b": entries of `table` in the order given, duplicates dropped; the error names the
// item (the caller adds what is allowed).
absl::Status UnknownChoice(absl::string_view item);
std::vector<absl::string_view> SplitList(absl::string_view text);

template <typename E>
absl::StatusOr<std::vector<Choice<E>>> ParseChoices(absl::string_view text,
                                                    const ChoiceTable<E>& table) {
  std::vector<Choice<E>> chosen;
  for (absl::string_view item : SplitList(text)) {
    auto match = std::find_if(table.begin(), table.end(),
                              [item](const Choice<E>& choice) { return choice.name == item; });
    if (match == table.end()) return UnknownChoice(item);
    if (std::find(chosen.begin(), chosen.end(), *match) == chosen.end()) chosen.push_back(*match);
  }
  return chosen;
}

}  // namespace flags_internal

// An integer within [min, max] (an int or int64_t field).
template <typename P, typename T>
FlagSpec<P> IntFlag(T P::*field, std::string name, int64_t min, int64_t max, std::string help) {
  return flags_internal::Spec<P>(
      field, std::move(name), flags_internal::IntValues(min, max), std::move(help),
      [field, min, max](absl::string_view text, P* params) -> absl::Status {
        absl::StatusOr<int64_t> value = ParseInt(text, min, max);
        if (!value.ok()) return value.status();
        params->*field = static_cast<T>(*value);
        return absl::OkStatus();
      });
}

// A list of integers within [min, max] ("0,4", "1-8"); `words` are names for values
// ({"all", kAll}: the family gives them their meaning).
template <typename P>
FlagSpec<P> IntListFlag(std::vector<int64_t> P::*field, std::string name, int64_t min, int64_t max,
                        std::string help, std::vector<std::pair<std::string, int64_t>> words = {}) {
  std::string values = flags_internal::IntListValues(min, max, words);
  return flags_internal::Spec<P>(
      field, std::move(name), std::move(values), std::move(help),
      [field, min, max, words](absl::string_view text, P* params) -> absl::Status {
        absl::StatusOr<std::vector<int64_t>> parsed =
            flags_internal::ParseIntListWithWords(text, min, max, words);
        if (!parsed.ok()) return parsed.status();
        params->*field = *std::move(parsed);
        return absl::OkStatus();
      });
}

// true or false; `--name` alone means true. The default is false unless Default("true").
template <typename P>
FlagSpec<P> BoolFlag(bool P::*field, std::string name, std::string help) {
  return flags_internal::Spec<P>(
             field, std::move(name), "true or false", std::move(help),
             [field](absl::string_view text, P* params) -> absl::Status {
               absl::StatusOr<bool> value = ParseBool(text);
               if (!value.ok()) return NotABoolean(text);
               params->*field = *value;
               return absl::OkStatus();
             },
             /*is_bool=*/true)
      .Default("false");
}

// One entry of `table`.
template <typename P, typename E>
FlagSpec<P> ChoiceFlag(Choice<E> P::*field, std::string name, ChoiceTable<E> table,
                       std::string help) {
  std::string values = flags_internal::ChoiceValues(flags_internal::NamesOf(table), false);
  return flags_internal::Spec<P>(
      field, std::move(name), std::move(values), std::move(help),
      [field, table](absl::string_view text, P* params) -> absl::Status {
        absl::StatusOr<std::vector<Choice<E>>> chosen = flags_internal::ParseChoices(text, table);
        if (!chosen.ok()) return chosen.status();
        if (chosen->size() != 1) return absl::InvalidArgumentError("expected exactly one value");
        params->*field = chosen->front();
        return absl::OkStatus();
      });
}

// One or more entries of `table`, in the order given, duplicates dropped.
template <typename P, typename E>
FlagSpec<P> ChoiceListFlag(std::vector<Choice<E>> P::*field, std::string name, ChoiceTable<E> table,
                           std::string help) {
  std::string values = flags_internal::ChoiceValues(flags_internal::NamesOf(table), true);
  return flags_internal::Spec<P>(field, std::move(name), std::move(values), std::move(help),
                                 [field, table](absl::string_view text, P* params) -> absl::Status {
                                   absl::StatusOr<std::vector<Choice<E>>> chosen =
                                       flags_internal::ParseChoices(text, table);
                                   if (!chosen.ok()) return chosen.status();
                                   params->*field = *std::move(chosen);
                                   return absl::OkStatus();
                                 });
}

// A value with its own parser (a CPU list, tracepoint names, a directory); `values`
// says what is allowed. The parser sees "" for DefaultMeans.
template <typename P, typename T>
FlagSpec<P> ParsedFlag(T P::*field, std::string name, std::string values,
                       std::function<absl::StatusOr<T>(absl::string_view)> parse,
                       std::string help) {
  return flags_internal::Spec<P>(field, std::move(name), std::move(values), std::move(help),
                                 [field, parse](absl::string_view text, P* params) -> absl::Status {
                                   absl::StatusOr<T> value = parse(text);
                                   if (!value.ok()) return value.status();
                                   params->*field = *std::move(value);
                                   return absl::OkStatus();
                                 });
}

// A family's table: registers its flags (each named `<family>_...`) at construction.
template <typename P>
class FlagList {
 public:
  FlagList(std::string family, std::vector<FlagSpec<P>> specs) : specs_(std::move(specs)) {
    std::vector<FlagInfo> infos;
    for (const FlagSpec<P>& spec : specs_) infos.push_back(spec.info());
    flags_ = flags_internal::RegisterFamily(family, std::move(infos));
  }
  FlagList(const FlagList&) = delete;
  FlagList& operator=(const FlagList&) = delete;

  // Every field from the command line, or from its (--quick) default; the first bad
  // value is the uniform rejection naming the flag, the value and what is allowed.
  absl::StatusOr<P> Resolve(const FlagEnv& env) const {
    P params{};
    for (size_t i = 0; i < specs_.size(); ++i) {
      std::string text = specs_[i].Text(*flags_[i], env);
      if (absl::Status set = specs_[i].Set(text, &params); !set.ok()) {
        return flags_[i]->Reject(flags_[i]->is_set() ? text : "(default) " + text, set);
      }
    }
    return params;
  }
  // Whether the user gave the field's flag.
  template <typename T>
  bool Given(T P::*field) const {
    return flag(field).is_set();
  }
  // "--name" of the field's flag, for messages about several flags at once.
  template <typename T>
  std::string Name(T P::*field) const {
    return "--" + flag(field).name();
  }
  // The uniform rejection of one value of the field's flag, for checks that need the
  // machine (more breakpoints than its slots): "--name=value: problem (allowed: ...)".
  template <typename T>
  absl::Status Reject(T P::*field, absl::string_view value, absl::string_view problem) const {
    return flag(field).Reject(value, absl::InvalidArgumentError(problem));
  }

 private:
  template <typename T>
  const Flag& flag(T P::*field) const {
    size_t offset = flags_internal::OffsetOf(field);
    for (size_t i = 0; i < specs_.size(); ++i) {
      if (specs_[i].offset() == offset) return *flags_[i];
    }
    std::fprintf(stderr, "perfscale: a field without a flag in its family's table\n");
    std::abort();
  }

  std::vector<FlagSpec<P>> specs_;
  std::vector<Flag*> flags_;
};

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_HARNESS_FLAGS_H_
