// JsonString against a strict JSON reader (nlohmann::json, which rejects invalid UTF-8
// and raw control characters): whatever the bytes, the literal parses, and it reads back
// as the input wherever the input was well-formed UTF-8.
#include "benchmarks/harness/json_string.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace perfscale {
namespace {

// The string the literal reads back as, or a failure naming the literal.
::testing::AssertionResult ReadsBackAs(const std::string& literal, const std::string& expected) {
  nlohmann::json parsed = nlohmann::json::parse(literal, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_string()) return ::testing::AssertionFailure() << "not a JSON string: " << literal;
  if (parsed.get<std::string>() != expected) {
    return ::testing::AssertionFailure() << literal << " reads back as " << parsed.dump();
  }
  return ::testing::AssertionSuccess();
}

TEST(JsonStringTest, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(JsonString(""), "\"\"");
  EXPECT_EQ(JsonString("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
  EXPECT_EQ(JsonString(std::string("\0\x1f\x7f", 3)), "\"\\u0000\\u001f\\u007f\"");
  EXPECT_EQ(JsonString("/ok: 100%"), "\"/ok: 100%\"");
}

TEST(JsonStringTest, WellFormedUtf8PassesThrough) {
  for (const std::string text : {"caf\xc3\xa9", "\xe2\x82\xac 5", "\xf0\x9f\x98\x80",
                                 "\xed\x9f\xbf", "\xee\x80\x80", "\xf4\x8f\xbf\xbf"}) {
    EXPECT_EQ(JsonString(text), "\"" + text + "\"");
    EXPECT_TRUE(ReadsBackAs(JsonString(text), text));
  }
}

TEST(JsonStringTest, MalformedBytesBecomeReplacementCharacters) {
  const std::string kReplacement = "\xef\xbf\xbd";
  struct Case {
    std::string bytes;
    std::string reads_as;
  };
  for (const Case& c : std::vector<Case>{
           {"\xff", kReplacement},                                        // never in UTF-8
           {"a\x80z", "a" + kReplacement + "z"},                          // a stray continuation
           {"\xc3", kReplacement},                                        // truncated at the end
           {"\xc3z", kReplacement + "z"},                                 // truncated mid-text
           {"\xc0\xaf", kReplacement + kReplacement},                     // overlong '/'
           {"\xe0\x80\xaf", kReplacement + kReplacement + kReplacement},  // overlong
           {"\xed\xa0\x80", kReplacement + kReplacement + kReplacement},  // a surrogate
           {"\xf4\x90\x80\x80",                                           // past U+10FFFF
            kReplacement + kReplacement + kReplacement + kReplacement},
       }) {
    std::string literal = JsonString(c.bytes);
    EXPECT_TRUE(ReadsBackAs(literal, c.reads_as)) << "bytes of length " << c.bytes.size();
  }
}

TEST(JsonStringTest, EveryOneAndTwoByteTextIsValidJson) {
  // Exhaustive over short texts: every lead byte against every following byte.
  for (int first = 0; first < 256; ++first) {
    std::string one(1, static_cast<char>(first));
    ASSERT_TRUE(nlohmann::json::accept(JsonString(one))) << "byte " << first;
    for (int second = 0; second < 256; ++second) {
      std::string two = one + static_cast<char>(second);
      ASSERT_TRUE(nlohmann::json::accept(JsonString(two))) << "bytes " << first << " " << second;
    }
  }
}

}  // namespace
}  // namespace perfscale
