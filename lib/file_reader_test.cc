// ReadTextFile is the one door to /proc, /sys and tracefs: it must read procfs files whose
// size says 0, files larger than its buffer, and never leak its fd on any path.
#include "lib/file_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "lib/capabilities.h"

namespace perfscale {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/file_reader_test_" + name;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

TEST(FileReaderTest, ReadsSmallFileExactly) {
  std::string path = TempPath("small");
  WriteFile(path, "2\n");
  absl::StatusOr<std::string> text = ReadTextFile(path);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "2\n");
  unlink(path.c_str());
}

TEST(FileReaderTest, ReadsEmptyFile) {
  std::string path = TempPath("empty");
  WriteFile(path, "");
  absl::StatusOr<std::string> text = ReadTextFile(path);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "");
  unlink(path.c_str());
}

TEST(FileReaderTest, ReadsPastItsBufferAndKeepsBinaryBytes) {
  // Larger than the 8 KiB read buffer, with NULs, so a loop or length bug shows.
  std::string big;
  for (int i = 0; i < 100000; ++i) big.push_back(static_cast<char>(i % 251));
  std::string path = TempPath("big");
  WriteFile(path, big);
  absl::StatusOr<std::string> text = ReadTextFile(path);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(text->size(), big.size());
  EXPECT_EQ(*text, big);
  unlink(path.c_str());
}

TEST(FileReaderTest, ReadsProcfsFileThatReportsSizeZero) {
  absl::StatusOr<std::string> text = ReadTextFile("/proc/self/status");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_TRUE(absl::StartsWith(*text, "Name:"));
  EXPECT_TRUE(absl::StrContains(*text, "CapEff:"));
}

TEST(FileReaderTest, MissingFileIsNotFoundNamingThePath) {
  absl::StatusOr<std::string> text = ReadTextFile("/nonexistent/perfscale/file");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(text.status().message(), "/nonexistent/perfscale/file"));
}

TEST(FileReaderTest, EmptyPathFails) {
  absl::StatusOr<std::string> text = ReadTextFile("");
  EXPECT_FALSE(text.ok());
}

TEST(FileReaderTest, DirectoryFailsOnReadAndSaysSo) {
  absl::StatusOr<std::string> text = ReadTextFile("/proc/self");
  ASSERT_FALSE(text.ok());
  EXPECT_TRUE(absl::StrContains(text.status().message(), "read /proc/self")) << text.status();
}

TEST(FileReaderTest, NoFdLeftOpenOnSuccessOrFailure) {
  absl::StatusOr<int> before = CountOpenFds();
  ASSERT_TRUE(before.ok()) << before.status();
  for (int i = 0; i < 50; ++i) {
    EXPECT_TRUE(ReadTextFile("/proc/self/status").ok());
    EXPECT_FALSE(ReadTextFile("/proc/self").ok());  // open succeeds, read fails
    EXPECT_FALSE(ReadTextFile("/nonexistent").ok());
  }
  absl::StatusOr<int> after = CountOpenFds();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after, *before);
}

TEST(FileReaderTest, UsableAsTextFileReader) {
  TextFileReader reader = ReadTextFile;
  absl::StatusOr<std::string> text = reader("/proc/sys/kernel/ostype");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "Linux\n");
}

}  // namespace
}  // namespace perfscale
