#include "testing/common/benchmark_json.h"

#include <cmath>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace perfscale {
namespace testing {
namespace {

// Google Benchmark's words for doubles JSON cannot spell, and their values.
struct NonFinite {
  absl::string_view word;
  double value;
};
const NonFinite kNonFinite[] = {
    {"-Infinity", -std::numeric_limits<double>::infinity()},
    {"Infinity", std::numeric_limits<double>::infinity()},
    {"-NaN", -std::numeric_limits<double>::quiet_NaN()},
    {"NaN", std::numeric_limits<double>::quiet_NaN()},
};

// A bare word becomes a string no output can hold (it starts with a NUL), which the
// parser's callback turns into the double.
constexpr char kMark[] = "\\u0000perfscale:";

std::string QuoteNonFinite(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    bool quoted = false;
    for (const NonFinite& n : kNonFinite) {
      if (absl::StartsWith(text.substr(i), n.word)) {
        absl::StrAppend(&out, "\"", kMark, n.word, "\"");
        i += n.word.size() - 1;
        quoted = true;
        break;
      }
    }
    if (!quoted) out += c;
  }
  return out;
}

}  // namespace

absl::StatusOr<nlohmann::json> ParseBenchmarkJson(absl::string_view text) {
  const std::string mark = std::string(1, '\0') + "perfscale:";
  auto restore = [&mark](int, nlohmann::json::parse_event_t event, nlohmann::json& value) {
    if (event == nlohmann::json::parse_event_t::value && value.is_string() &&
        absl::StartsWith(value.get_ref<const std::string&>(), mark)) {
      absl::string_view word =
          absl::string_view(value.get_ref<const std::string&>()).substr(mark.size());
      for (const NonFinite& n : kNonFinite) {
        if (word == n.word) value = n.value;
      }
    }
    return true;
  };
  try {
    return nlohmann::json::parse(QuoteNonFinite(text), restore);
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(e.what());
  }
}

}  // namespace testing
}  // namespace perfscale
