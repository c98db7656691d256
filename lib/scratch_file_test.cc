#include "lib/scratch_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "testing/common/process_state.h"

namespace perfscale {
namespace {

using ::perfscale::testing::CountDirEntries;

std::string MakeDir() { return testing::MakeTestDir("scratch"); }
int Entries(const std::string& dir) { return CountDirEntries(dir); }

TEST(ScratchFile, WrittenAndReadBackLeavingNothingInTheDirectory) {
  std::string dir = MakeDir();
  {
    absl::StatusOr<ScratchFile> file = ScratchFile::Create(dir);
    ASSERT_TRUE(file.ok()) << file.status();
    EXPECT_EQ(Entries(dir), 0);  // nameless from the start
    ASSERT_TRUE(WriteFully(file->fd(), "hello ", 6).ok());
    ASSERT_TRUE(WriteFully(file->fd(), "world", 5).ok());
    ASSERT_TRUE(PwriteFully(file->fd(), "W", 1, 6).ok());
    EXPECT_EQ(*file->ReadAll(), "hello World");
    ASSERT_TRUE(file->Truncate().ok());
    EXPECT_EQ(*file->ReadAll(), "");
    ASSERT_TRUE(WriteFully(file->fd(), "again", 5).ok());
    EXPECT_EQ(*file->ReadAll(), "again");  // written at offset 0 after Truncate
    ScratchFile moved = *std::move(file);
    EXPECT_EQ(*moved.ReadAll(), "again");
  }
  EXPECT_EQ(Entries(dir), 0);
  rmdir(dir.c_str());
}

TEST(ScratchFile, ClosesItsFd) {
  std::string dir = MakeDir();
  int fd;
  {
    absl::StatusOr<ScratchFile> file = ScratchFile::Create(dir);
    ASSERT_TRUE(file.ok());
    fd = file->fd();
    EXPECT_GE(fcntl(fd, F_GETFD), 0);
  }
  EXPECT_EQ(fcntl(fd, F_GETFD), -1);
  rmdir(dir.c_str());
}

TEST(ScratchFile, UnusableDirectoriesNameTheDirectory) {
  std::string dir = MakeDir();
  std::string file_path = dir + "/plain-file";
  std::ofstream(file_path) << "x";
  for (const std::string& bad : {dir + "/missing", file_path, std::string("/proc/self")}) {
    absl::StatusOr<ScratchFile> file = ScratchFile::Create(bad);
    ASSERT_FALSE(file.ok()) << bad;
    EXPECT_NE(file.status().message().find(bad), absl::string_view::npos) << file.status();
  }
  unlink(file_path.c_str());
  EXPECT_EQ(Entries(dir), 0);
  rmdir(dir.c_str());
}

TEST(ScratchFile, EmptyDirMeansTmpdirOrTmp) {
  const char* saved = std::getenv("TMPDIR");
  std::string restore = saved != nullptr ? saved : "";
  std::string dir = MakeDir();
  setenv("TMPDIR", dir.c_str(), 1);
  EXPECT_EQ(ScratchFile::DefaultDir(), dir);
  {
    absl::StatusOr<ScratchFile> file = ScratchFile::Create("");
    ASSERT_TRUE(file.ok()) << file.status();
  }
  setenv("TMPDIR", "", 1);
  EXPECT_EQ(ScratchFile::DefaultDir(), "/tmp");
  if (saved != nullptr) {
    setenv("TMPDIR", restore.c_str(), 1);
  } else {
    unsetenv("TMPDIR");
  }
  EXPECT_EQ(Entries(dir), 0);
  rmdir(dir.c_str());
}

TEST(WriteFully, ReportsErrors) {
  EXPECT_FALSE(WriteFully(-1, "x", 1).ok());
  EXPECT_FALSE(PwriteFully(-1, "x", 1, 0).ok());
  EXPECT_TRUE(WriteFully(-1, "", 0).ok());  // nothing to write
}

}  // namespace
}  // namespace perfscale
