#include "benchmarks/synthesize/text_lines.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace perfscale {
namespace {

std::vector<std::string> Split(absl::string_view text) {
  std::vector<std::string> lines;
  for (absl::string_view line : TextLines(text)) lines.emplace_back(line);
  return lines;
}

TEST(TextLines, AFinalNewlineEndsTheLastLine) {
  EXPECT_EQ(Split("a\nb\n"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Split("a\nb"), (std::vector<std::string>{"a", "b"}));
}

TEST(TextLines, EmptyTextHasNoLinesButEmptyLinesAreKept) {
  EXPECT_TRUE(Split("").empty());
  EXPECT_EQ(Split("\n"), (std::vector<std::string>{""}));
  EXPECT_EQ(Split("a\n\nb"), (std::vector<std::string>{"a", "", "b"}));
}

TEST(TextLines, LinesPointIntoTheText) {
  std::string text = "one\ntwo";
  auto it = TextLines(text).begin();
  EXPECT_EQ((*it).data(), text.data());
  ++it;
  EXPECT_EQ((*it).data(), text.data() + 4);
}

}  // namespace
}  // namespace perfscale
