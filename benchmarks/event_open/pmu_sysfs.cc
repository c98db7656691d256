#include "benchmarks/event_open/pmu_sysfs.h"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "lib/errno_status.h"

namespace perfscale {
namespace {

bool IsNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

bool IsName(absl::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), IsNameChar);
}

bool AllDigits(absl::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return absl::ascii_isdigit(static_cast<unsigned char>(c)); });
}

bool AllHexDigits(absl::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return absl::ascii_isxdigit(static_cast<unsigned char>(c)); });
}

// Decimal, or hex with 0x; the whole of `text`.
absl::StatusOr<uint64_t> ParseNumber(absl::string_view text) {
  uint64_t value = 0;
  if (absl::StartsWithIgnoreCase(text, "0x")) {
    absl::string_view digits = text.substr(2);
    if (!digits.empty() && digits.size() <= 16 && AllHexDigits(digits) &&
        absl::SimpleHexAtoi(digits, &value)) {
      return value;
    }
  } else if (!text.empty() && AllDigits(text) && absl::SimpleAtoi(text, &value)) {
    return value;
  }
  return absl::InvalidArgumentError(absl::StrCat("bad number '", text.substr(0, 32), "'"));
}

absl::StatusOr<int> ParseBit(absl::string_view text, absl::string_view whole) {
  int bit = 0;
  if (text.empty() || text.size() > 2 || !AllDigits(text) || !absl::SimpleAtoi(text, &bit) ||
      bit > 63) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad bit '", text, "' in format '", whole, "' (expected 0..63)"));
  }
  return bit;
}

__u64* Word(ConfigWord word, perf_event_attr* attr) {
  switch (word) {
    case ConfigWord::kConfig:
      return &attr->config;
    case ConfigWord::kConfig1:
      return &attr->config1;
    case ConfigWord::kConfig2:
      return &attr->config2;
    case ConfigWord::kConfig3:
#ifdef PERF_ATTR_SIZE_VER8
      return &attr->config3;
#else
      return nullptr;
#endif
  }
  return nullptr;
}

std::optional<ConfigWord> RawWord(absl::string_view name) {
  if (name == "config") return ConfigWord::kConfig;
  if (name == "config1") return ConfigWord::kConfig1;
  if (name == "config2") return ConfigWord::kConfig2;
  if (name == "config3") return ConfigWord::kConfig3;
  return std::nullopt;
}

std::string Join(const std::string& a, absl::string_view b) { return absl::StrCat(a, "/", b); }

bool IsAliasCompanion(absl::string_view file) {
  for (absl::string_view suffix : {".scale", ".unit", ".per-pkg", ".snapshot"}) {
    if (absl::EndsWith(file, suffix)) return true;
  }
  return false;
}

absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& path) {
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return ErrnoStatus(errno, absl::StrCat("opendir ", path));
  std::vector<std::string> names;
  while (dirent* entry = readdir(dir)) {
    if (std::strcmp(entry->d_name, ".") == 0 || std::strcmp(entry->d_name, "..") == 0) continue;
    names.emplace_back(entry->d_name);
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

// Missing directories are normal (most PMUs have no events/), anything else is not.
absl::StatusOr<std::vector<std::string>> ListOptional(const SysfsAccess& fs,
                                                      const std::string& path) {
  absl::StatusOr<std::vector<std::string>> names = fs.list_dir(path);
  if (!names.ok() && absl::IsNotFound(names.status())) return std::vector<std::string>{};
  return names;
}

}  // namespace

int PmuFormat::width() const {
  int bits = 0;
  for (const auto& [low, high] : ranges) bits += high - low + 1;
  return bits;
}

absl::StatusOr<uint32_t> ParsePmuType(absl::string_view text) {
  absl::string_view body = absl::StripAsciiWhitespace(text);
  absl::StatusOr<uint64_t> value = ParseNumber(body);
  if (!value.ok() || absl::StartsWithIgnoreCase(body, "0x") || *value > UINT32_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad PMU type '", body.substr(0, 32), "' (expected a decimal number)"));
  }
  return static_cast<uint32_t>(*value);
}

absl::StatusOr<PmuFormat> ParsePmuFormat(absl::string_view text) {
  absl::string_view body = absl::StripAsciiWhitespace(text);
  std::vector<absl::string_view> parts = absl::StrSplit(body, absl::MaxSplits(':', 1));
  if (parts.size() != 2 || parts[1].empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad format '", body.substr(0, 64), "' (expected e.g. config:0-7,21)"));
  }
  std::optional<ConfigWord> word = RawWord(parts[0]);
  if (!word) {
    return absl::InvalidArgumentError(absl::StrCat("bad format '", body.substr(0, 64), "': '",
                                                   parts[0].substr(0, 16),
                                                   "' is not config, config1, config2 or config3"));
  }
  PmuFormat format;
  format.word = *word;
  for (absl::string_view range : absl::StrSplit(parts[1], ',')) {
    std::vector<absl::string_view> ends = absl::StrSplit(range, absl::MaxSplits('-', 1));
    absl::StatusOr<int> low = ParseBit(ends[0], body);
    if (!low.ok()) return low.status();
    int high = *low;
    if (ends.size() == 2) {
      absl::StatusOr<int> parsed_high = ParseBit(ends[1], body);
      if (!parsed_high.ok()) return parsed_high.status();
      high = *parsed_high;
    }
    if (high < *low) {
      return absl::InvalidArgumentError(
          absl::StrCat("descending bit range '", range, "' in format '", body, "'"));
    }
    format.ranges.emplace_back(*low, high);
  }
  std::sort(format.ranges.begin(), format.ranges.end());
  for (size_t i = 1; i < format.ranges.size(); ++i) {
    if (format.ranges[i].first <= format.ranges[i - 1].second) {
      return absl::InvalidArgumentError(
          absl::StrCat("overlapping bit ranges in format '", body, "'"));
    }
  }
  return format;
}

absl::StatusOr<std::vector<EventTerm>> ParseEventTerms(absl::string_view text) {
  absl::string_view body = absl::StripAsciiWhitespace(text);
  if (body.empty()) return absl::InvalidArgumentError("empty event terms");
  std::vector<EventTerm> terms;
  for (absl::string_view item : absl::StrSplit(body, ',')) {
    item = absl::StripAsciiWhitespace(item);
    std::vector<absl::string_view> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    EventTerm term;
    if (!IsName(kv[0])) {
      return absl::InvalidArgumentError(absl::StrCat("bad term '", item.substr(0, 32), "' in '",
                                                     body.substr(0, 64),
                                                     "' (expected name or name=value)"));
    }
    term.name = std::string(kv[0]);
    if (kv.size() == 2) {
      absl::string_view value = absl::StripAsciiWhitespace(kv[1]);
      if (value == "?") {
        term.is_parameter = true;
      } else {
        absl::StatusOr<uint64_t> number = ParseNumber(value);
        if (!number.ok()) {
          return absl::InvalidArgumentError(absl::StrCat("bad value in term '", item.substr(0, 32),
                                                         "': ", number.status().message()));
        }
        term.value = *number;
      }
    }
    terms.push_back(std::move(term));
  }
  return terms;
}

absl::StatusOr<PmuEventName> ParsePmuEventName(absl::string_view text) {
  absl::string_view body = absl::StripAsciiWhitespace(text);
  size_t first = body.find('/');
  if (first == absl::string_view::npos || body.size() < first + 2 || body.back() != '/' ||
      body.find('/', first + 1) != body.size() - 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad event name '", body.substr(0, 64),
                     "' (expected pmu/terms/, e.g. msr/tsc/ or cpu/event=0x3c/; modifiers are not "
                     "supported)"));
  }
  PmuEventName name;
  name.pmu = std::string(body.substr(0, first));
  if (!IsName(name.pmu)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad PMU name '", name.pmu.substr(0, 32), "' in '", body, "'"));
  }
  absl::StatusOr<std::vector<EventTerm>> terms =
      ParseEventTerms(body.substr(first + 1, body.size() - first - 2));
  if (!terms.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("event '", body.substr(0, 64), "': ", terms.status().message()));
  }
  name.terms = *std::move(terms);
  return name;
}

absl::StatusOr<std::vector<std::string>> SplitEventList(absl::string_view text) {
  std::vector<std::string> events;
  std::string current;
  bool inside = false;  // between a PMU's slashes
  auto finish = [&]() -> absl::Status {
    absl::string_view event = absl::StripAsciiWhitespace(current);
    if (event.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("empty event in list '", text.substr(0, 64), "'"));
    }
    events.emplace_back(event);
    current.clear();
    return absl::OkStatus();
  };
  for (char c : text) {
    if (c == '/') inside = !inside;
    if (c == ',' && !inside) {
      if (absl::Status done = finish(); !done.ok()) return done;
      continue;
    }
    current.push_back(c);
  }
  if (inside) {
    return absl::InvalidArgumentError(
        absl::StrCat("unbalanced '/' in event list '", text.substr(0, 64), "'"));
  }
  if (absl::Status done = finish(); !done.ok()) return done;
  return events;
}

absl::Status ApplyPmuFormat(const PmuFormat& format, uint64_t value, perf_event_attr* attr) {
  __u64* word = Word(format.word, attr);
  if (word == nullptr) {
    return absl::UnimplementedError("config3 is not in this build's perf_event_attr");
  }
  int width = format.width();
  if (width < 64 && (value >> width) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("value ", value, " does not fit the format's ", width, " bits"));
  }
  int next = 0;  // the value bit to place next
  for (const auto& [low, high] : format.ranges) {
    for (int bit = low; bit <= high; ++bit, ++next) {
      uint64_t mask = uint64_t{1} << bit;
      *word = ((value >> next) & 1) ? (*word | mask) : (*word & ~mask);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<perf_event_attr> EncodePmuEvent(const PmuDescription& pmu,
                                               const std::vector<EventTerm>& terms) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = pmu.type;
  auto apply = [&](const EventTerm& term, bool from_alias) -> absl::Status {
    if (term.is_parameter) {
      return absl::InvalidArgumentError(absl::StrCat("term '", term.name, "' of PMU ", pmu.name,
                                                     " needs a value (", term.name, "=N)"));
    }
    uint64_t value = term.value.value_or(1);
    auto format = pmu.formats.find(term.name);
    if (format != pmu.formats.end()) {
      absl::Status applied = ApplyPmuFormat(format->second, value, &attr);
      if (!applied.ok()) {
        return absl::Status(applied.code(), absl::StrCat(pmu.name, "/", term.name, "=", value,
                                                         "/: ", applied.message()));
      }
      return absl::OkStatus();
    }
    if (std::optional<ConfigWord> raw = RawWord(term.name)) {
      __u64* word = Word(*raw, &attr);
      if (word == nullptr) {
        return absl::UnimplementedError("config3 is not in this build's perf_event_attr");
      }
      *word = value;
      return absl::OkStatus();
    }
    std::vector<std::string> known;
    for (const auto& entry : pmu.formats) known.push_back(entry.first);
    if (!from_alias) {
      for (const auto& entry : pmu.aliases) known.push_back(entry.first);
    }
    return absl::NotFoundError(
        absl::StrCat("PMU ", pmu.name, " has no term or event '", term.name, "'",
                     known.empty() ? std::string(" (it has none; use config=N)")
                                   : absl::StrCat(" (known: ", absl::StrJoin(known, ", "), ")")));
  };
  for (const EventTerm& term : terms) {
    auto alias = pmu.aliases.find(term.name);
    if (!term.value && !term.is_parameter && alias != pmu.aliases.end() &&
        pmu.formats.count(term.name) == 0) {
      for (const EventTerm& expanded : alias->second) {
        if (absl::Status status = apply(expanded, true); !status.ok()) return status;
      }
      continue;
    }
    if (absl::Status status = apply(term, false); !status.ok()) return status;
  }
  return attr;
}

SysfsAccess RealSysfs() { return SysfsAccess{ReadTextFile, ListDirectory}; }

absl::StatusOr<PmuDescription> LoadPmu(absl::string_view pmu, const SysfsAccess& fs,
                                       const std::string& root) {
  if (!IsName(pmu)) {
    return absl::InvalidArgumentError(absl::StrCat("bad PMU name '", pmu.substr(0, 32), "'"));
  }
  std::string dir = Join(root, pmu);
  PmuDescription description;
  description.name = std::string(pmu);
  absl::StatusOr<std::string> type_text = fs.read_file(Join(dir, "type"));
  if (!type_text.ok()) {
    if (!absl::IsNotFound(type_text.status())) return type_text.status();
    absl::StatusOr<std::vector<std::string>> pmus = ListOptional(fs, root);
    return absl::NotFoundError(absl::StrCat(
        "no PMU '", pmu, "' in ", root,
        pmus.ok() ? absl::StrCat(" (there are: ", absl::StrJoin(*pmus, ", "), ")") : ""));
  }
  absl::StatusOr<uint32_t> type = ParsePmuType(*type_text);
  if (!type.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Join(dir, "type"), ": ", type.status().message()));
  }
  description.type = *type;

  absl::StatusOr<std::vector<std::string>> formats = ListOptional(fs, Join(dir, "format"));
  if (!formats.ok()) return formats.status();
  for (const std::string& name : *formats) {
    std::string path = Join(Join(dir, "format"), name);
    absl::StatusOr<std::string> text = fs.read_file(path);
    if (!text.ok()) return text.status();
    absl::StatusOr<PmuFormat> format = ParsePmuFormat(*text);
    if (!format.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", format.status().message()));
    }
    description.formats.emplace(name, *std::move(format));
  }

  absl::StatusOr<std::vector<std::string>> aliases = ListOptional(fs, Join(dir, "events"));
  if (!aliases.ok()) return aliases.status();
  for (const std::string& name : *aliases) {
    if (IsAliasCompanion(name)) continue;
    std::string path = Join(Join(dir, "events"), name);
    absl::StatusOr<std::string> text = fs.read_file(path);
    if (!text.ok()) return text.status();
    absl::StatusOr<std::vector<EventTerm>> terms = ParseEventTerms(*text);
    if (!terms.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", terms.status().message()));
    }
    description.aliases.emplace(name, *std::move(terms));
  }
  return description;
}

absl::StatusOr<std::vector<std::string>> ListPmuEventNames(const SysfsAccess& fs,
                                                           const std::string& root) {
  absl::StatusOr<std::vector<std::string>> pmus = fs.list_dir(root);
  if (!pmus.ok()) return pmus.status();
  std::vector<std::string> names;
  for (const std::string& pmu : *pmus) {
    absl::StatusOr<PmuDescription> description = LoadPmu(pmu, fs, root);
    if (!description.ok()) continue;  // not a PMU directory we can read: nothing to name
    if (description->aliases.empty()) {
      names.push_back(absl::StrCat(pmu, "/config=0/"));
      continue;
    }
    for (const auto& alias : description->aliases) {
      bool needs_parameter = std::any_of(alias.second.begin(), alias.second.end(),
                                         [](const EventTerm& t) { return t.is_parameter; });
      if (!needs_parameter) names.push_back(absl::StrCat(pmu, "/", alias.first, "/"));
    }
  }
  if (names.empty()) {
    return absl::NotFoundError(absl::StrCat("no PMU with a readable type file in ", root));
  }
  return names;
}

absl::StatusOr<PmuCaching> ParsePmuCaching(absl::string_view name) {
  if (name == "per_event") return PmuCaching::kPerEvent;
  if (name == "per_pmu") return PmuCaching::kPerPmu;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown lookup '", name, "' (expected per_event or per_pmu)"));
}

const char* PmuCachingName(PmuCaching caching) {
  return caching == PmuCaching::kPerEvent ? "per_event" : "per_pmu";
}

PmuResolver::PmuResolver(PmuCaching caching, SysfsAccess fs, std::string root)
    : caching_(caching), fs_(std::move(fs)), root_(std::move(root)) {}

absl::StatusOr<const PmuDescription*> PmuResolver::Find(const std::string& pmu) {
  if (caching_ == PmuCaching::kPerPmu) {
    auto cached = cache_.find(pmu);
    if (cached != cache_.end()) return &cached->second;
  }
  absl::StatusOr<PmuDescription> loaded = LoadPmu(pmu, fs_, root_);
  ++pmu_loads_;
  if (!loaded.ok()) return loaded.status();
  if (caching_ == PmuCaching::kPerEvent) {
    scratch_ = *std::move(loaded);
    return &scratch_;
  }
  return &cache_.emplace(pmu, *std::move(loaded)).first->second;
}

absl::StatusOr<perf_event_attr> PmuResolver::Resolve(absl::string_view event_name) {
  absl::StatusOr<PmuEventName> name = ParsePmuEventName(event_name);
  if (!name.ok()) return name.status();
  absl::StatusOr<const PmuDescription*> pmu = Find(name->pmu);
  if (!pmu.ok()) return pmu.status();
  return EncodePmuEvent(**pmu, name->terms);
}

}  // namespace perfscale
