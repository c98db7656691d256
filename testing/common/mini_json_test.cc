// The test-only JSON reader: what Google Benchmark writes parses, and malformed text is
// an error rather than a half-read document that would make checks pass vacuously.
#include "testing/common/mini_json.h"

#include <cmath>
#include <string>

#include "gtest/gtest.h"

namespace perfscale {
namespace testing {
namespace {

TEST(MiniJsonTest, BenchmarkShapedDocument) {
  absl::StatusOr<Json> doc = ParseJson(R"({
  "context": {"date": "2024-01-01T00:00:00+00:00", "num_cpus": 2, "kernel_release": "6.1.0"},
  "benchmarks": [
    {"name": "BM_X/a:1/real_time", "iterations": 10, "real_time": 1.5e+01,
     "usecs/op": 2.25, "error_occurred": false, "label": "q\"uote\\d\n\u0041"},
    {"name": "BM_Y", "nan": NaN, "neg": -3, "nothing": null, "list": [1, [2], {}]}
  ]
})");
  ASSERT_TRUE(doc.ok()) << doc.status();
  const Json* context = doc->Find("context");
  ASSERT_NE(context, nullptr);
  EXPECT_EQ(context->Find("kernel_release")->string, "6.1.0");
  EXPECT_EQ(context->Find("num_cpus")->number, 2);
  const Json* benchmarks = doc->Find("benchmarks");
  ASSERT_EQ(benchmarks->array.size(), 2u);
  const Json& x = benchmarks->array[0];
  EXPECT_EQ(x.Find("name")->string, "BM_X/a:1/real_time");
  EXPECT_EQ(x.Find("real_time")->number, 15);
  EXPECT_EQ(x.Find("usecs/op")->number, 2.25);
  EXPECT_EQ(x.Find("error_occurred")->type, Json::kBool);
  EXPECT_FALSE(x.Find("error_occurred")->boolean);
  EXPECT_EQ(x.Find("label")->string, "q\"uote\\d\nA");
  const Json& y = benchmarks->array[1];
  EXPECT_TRUE(std::isnan(y.Find("nan")->number));
  EXPECT_EQ(y.Find("neg")->number, -3);
  EXPECT_EQ(y.Find("nothing")->type, Json::kNull);
  EXPECT_EQ(y.Find("list")->array.size(), 3u);
  EXPECT_EQ(y.Find("missing"), nullptr);
}

TEST(MiniJsonTest, MalformedIsAnError) {
  for (const char* bad :
       {"", "{", "}", "[1,]", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{a:1}", "\"unterminated",
        "[1 2]", "{} extra", "tru", "1.2.3", "\"bad \\q escape\"", "[\"\\u12\"]"}) {
    EXPECT_FALSE(ParseJson(bad).ok()) << "'" << bad << "' parsed";
  }
}

TEST(MiniJsonTest, DeepNestingIsRefusedNotAStackOverflow) {
  std::string deep(100000, '[');
  EXPECT_FALSE(ParseJson(deep).ok());
}

}  // namespace
}  // namespace testing
}  // namespace perfscale
