// Reads a benchmark binary's --benchmark_format=json output with nlohmann::json (Debian's
// nlohmann-json3-dev). Google Benchmark writes a counter it could not compute as a bare
// NaN, -NaN, Infinity or -Infinity, which JSON has no word for and a strict reader
// rejects; ParseBenchmarkJson reads those as the doubles they stand for. JSON that our
// own code writes (the --profile file, counter_sources) is strict: read it with
// nlohmann::json::parse directly.
//
// Example:
//   absl::StatusOr<nlohmann::json> doc = ParseBenchmarkJson(run.out);
//   ASSERT_TRUE(doc.ok()) << doc.status();
//   for (const nlohmann::json& b : doc->at("benchmarks")) std::cout << b.at("name");
#ifndef PERFSCALE_TESTING_COMMON_BENCHMARK_JSON_H_
#define PERFSCALE_TESTING_COMMON_BENCHMARK_JSON_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace perfscale {
namespace testing {

// The whole text as one JSON value; the parser's message when it is not one.
absl::StatusOr<nlohmann::json> ParseBenchmarkJson(absl::string_view text);

}  // namespace testing
}  // namespace perfscale

#endif  // PERFSCALE_TESTING_COMMON_BENCHMARK_JSON_H_
