// The binaries' JSON read with nlohmann::json: what Google Benchmark writes parses, its
// bare NaN/Infinity included (and only outside strings), and malformed text is an error
// rather than a half-read document that would make checks pass vacuously.
#include "testing/common/benchmark_json.h"

#include <cmath>
#include <string>

#include "gtest/gtest.h"

namespace perfscale {
namespace testing {
namespace {

TEST(BenchmarkJsonTest, BenchmarkShapedDocument) {
  absl::StatusOr<nlohmann::json> doc = ParseBenchmarkJson(R"({
  "context": {"date": "2024-01-01T00:00:00+00:00", "num_cpus": 2, "kernel_release": "6.1.0"},
  "benchmarks": [
    {"name": "BM_X/a:1/real_time", "iterations": 10, "real_time": 1.5e+01,
     "usecs/op": 2.25, "error_occurred": false, "label": "q\"uote\\d\n\u0041 NaN"},
    {"name": "BM_Y", "nan": NaN, "minus_nan": -NaN, "inf": Infinity, "minus_inf": -Infinity,
     "neg": -3, "nothing": null, "list": [1, [2], {}, NaN]}
  ]
})");
  ASSERT_TRUE(doc.ok()) << doc.status();
  const nlohmann::json& context = doc->at("context");
  EXPECT_EQ(context.at("kernel_release"), "6.1.0");
  EXPECT_EQ(context.at("num_cpus"), 2);
  const nlohmann::json& benchmarks = doc->at("benchmarks");
  ASSERT_EQ(benchmarks.size(), 2u);
  const nlohmann::json& x = benchmarks[0];
  EXPECT_EQ(x.at("name"), "BM_X/a:1/real_time");
  EXPECT_EQ(x.at("real_time"), 15.0);
  EXPECT_EQ(x.at("usecs/op"), 2.25);
  EXPECT_TRUE(x.at("error_occurred").is_boolean());
  EXPECT_FALSE(x.at("error_occurred").get<bool>());
  EXPECT_EQ(x.at("label"), "q\"uote\\d\nA NaN");
  const nlohmann::json& y = benchmarks[1];
  for (const char* key : {"nan", "minus_nan"}) {
    ASSERT_TRUE(y.at(key).is_number_float()) << key;
    EXPECT_TRUE(std::isnan(y.at(key).get<double>())) << key;
  }
  EXPECT_EQ(y.at("inf").get<double>(), INFINITY);
  EXPECT_EQ(y.at("minus_inf").get<double>(), -INFINITY);
  EXPECT_TRUE(std::isnan(y.at("list")[3].get<double>()));
  EXPECT_EQ(y.at("neg"), -3);
  EXPECT_TRUE(y.at("nothing").is_null());
  EXPECT_EQ(y.at("list").size(), 4u);
  EXPECT_FALSE(y.contains("missing"));
}

TEST(BenchmarkJsonTest, MalformedIsAnError) {
  for (const char* bad : {"", "{", "}", "[1,]", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{a:1}",
                          "\"unterminated", "[1 2]", "{} extra", "tru", "1.2.3",
                          "\"bad \\q escape\"", "[\"\\u12\"]", "[NaNa]", "[Inf]", "[\"NaN]"}) {
    EXPECT_FALSE(ParseBenchmarkJson(bad).ok()) << "'" << bad << "' parsed";
  }
}

TEST(BenchmarkJsonTest, DeepNestingIsRefusedNotAStackOverflow) {
  std::string deep(100000, '[');
  EXPECT_FALSE(ParseBenchmarkJson(deep).ok());
}

}  // namespace
}  // namespace testing
}  // namespace perfscale
