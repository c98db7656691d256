// A small JSON reader for tests that check a benchmark binary's --benchmark_format=json
// output: objects, arrays, strings (with escapes), numbers, true/false/null. Enough to
// find a benchmark by name and read its counters; not a general-purpose parser.
//
// Example:
//   absl::StatusOr<perfscale::testing::Json> doc = perfscale::testing::ParseJson(text);
//   const perfscale::testing::Json* context = doc->Find("context");
#ifndef PERFSCALE_TESTING_COMMON_MINI_JSON_H_
#define PERFSCALE_TESTING_COMMON_MINI_JSON_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace perfscale {
namespace testing {

struct Json {
  enum Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Json> array;
  std::vector<std::pair<std::string, Json>> object;  // in document order

  // The member named `key` of an object, or nullptr.
  const Json* Find(absl::string_view key) const;
};

// The whole text must be one JSON value (surrounding whitespace allowed).
absl::StatusOr<Json> ParseJson(absl::string_view text);

}  // namespace testing
}  // namespace perfscale

#endif  // PERFSCALE_TESTING_COMMON_MINI_JSON_H_
