#include "benchmarks/synthesize/proc_maps.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "gtest/gtest.h"
#include "lib/file_reader.h"

namespace perfscale {
namespace {

TEST(ParseMapsLine, FileMapping) {
  absl::StatusOr<MapsEntry> entry = ParseMapsLine(
      "7f3c1a200000-7f3c1a228000 r-xp 00028000 fd:01 1312372                    "
      "/usr/lib/x86_64-linux-gnu/libc.so.6\n");
  ASSERT_TRUE(entry.ok()) << entry.status();
  EXPECT_EQ(entry->start, 0x7f3c1a200000u);
  EXPECT_EQ(entry->end, 0x7f3c1a228000u);
  EXPECT_EQ(entry->offset, 0x28000u);
  EXPECT_EQ(entry->dev_major, 0xfdu);
  EXPECT_EQ(entry->dev_minor, 1u);
  EXPECT_EQ(entry->inode, 1312372u);
  EXPECT_TRUE(entry->readable);
  EXPECT_FALSE(entry->writable);
  EXPECT_TRUE(entry->executable);
  EXPECT_FALSE(entry->shared);
  EXPECT_EQ(entry->path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
}

TEST(ParseMapsLine, AnonymousAndSpecial) {
  absl::StatusOr<MapsEntry> anon = ParseMapsLine("7ffd0000-7ffd1000 rw-p 00000000 00:00 0 ");
  ASSERT_TRUE(anon.ok()) << anon.status();
  EXPECT_EQ(anon->path, "");
  EXPECT_TRUE(anon->writable);
  absl::StatusOr<MapsEntry> bare = ParseMapsLine("1000-2000 ---p 00000000 00:00 0");
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_EQ(bare->path, "");
  EXPECT_FALSE(bare->readable);
  absl::StatusOr<MapsEntry> vdso =
      ParseMapsLine("7ffd5b7e4000-7ffd5b7e6000 r-xp 00000000 00:00 0     [vdso]");
  ASSERT_TRUE(vdso.ok()) << vdso.status();
  EXPECT_EQ(vdso->path, "[vdso]");
  absl::StatusOr<MapsEntry> vsyscall =
      ParseMapsLine("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]");
  ASSERT_TRUE(vsyscall.ok()) << vsyscall.status();
  EXPECT_EQ(vsyscall->start, 0xffffffffff600000u);
  EXPECT_TRUE(vsyscall->executable);
  EXPECT_FALSE(vsyscall->readable);
}

TEST(ParseMapsLine, PathsWithSpacesDeletedAndShared) {
  absl::StatusOr<MapsEntry> entry =
      ParseMapsLine("1000-3000 rw-s 00001000 00:05 77  /memfd:my buffer (deleted)");
  ASSERT_TRUE(entry.ok()) << entry.status();
  EXPECT_TRUE(entry->shared);
  EXPECT_EQ(entry->path, "/memfd:my buffer (deleted)");
  EXPECT_EQ(entry->offset, 0x1000u);
  // The kernel escapes a newline in a path as \012; we keep the escape as perf does.
  entry = ParseMapsLine("1000-2000 r-xp 00000000 08:02 9 /tmp/a\\012b");
  ASSERT_TRUE(entry.ok()) << entry.status();
  EXPECT_EQ(entry->path, "/tmp/a\\012b");
}

TEST(ParseMapsLine, UpperCaseHexAndEmptyRange) {
  absl::StatusOr<MapsEntry> entry = ParseMapsLine("ABC000-ABC000 r--p 0000000A 0A:0B 1 x");
  ASSERT_TRUE(entry.ok()) << entry.status();
  EXPECT_EQ(entry->start, entry->end);
  EXPECT_EQ(entry->offset, 10u);
  EXPECT_EQ(entry->dev_major, 10u);
  EXPECT_EQ(entry->dev_minor, 11u);
}

TEST(ParseMapsLine, MalformedInput) {
  const char* bad[] = {
      "",
      "\n",
      "garbage",
      "1000 r-xp 00000000 00:00 0",                          // no range dash
      "1000- r-xp 00000000 00:00 0",                         // no end
      "-2000 r-xp 00000000 00:00 0",                         // no start
      "1000-2000",                                           // nothing after the range
      "1000-2000 r-x 00000000 00:00 0",                      // 3 permission letters
      "1000-2000 r-xq 00000000 00:00 0",                     // neither p nor s
      "1000-2000 x-rp 00000000 00:00 0",                     // letters out of place
      "1000-2000 r-xp",                                      // no offset
      "1000-2000 r-xp 0000zz00 00:00 0",                     // bad hex offset
      "1000-2000 r-xp 00000000 0000 0",                      // device without colon
      "1000-2000 r-xp 00000000 00: 0",                       // empty minor
      "1000-2000 r-xp 00000000 00:00",                       // no inode
      "1000-2000 r-xp 00000000 00:00 12a",                   // inode not decimal
      "1000-2000 r-xp 00000000 00:00 -1",                    // negative inode
      "2000-1000 r-xp 00000000 00:00 0",                     // start above end
      "10000000000000000-10000000000000001 r-xp 0 0:0 0",    // 17 hex digits
      "1000-2000 r-xp 00000000 100000000:00 0",              // major beyond 32 bits
      "1000-2000 r-xp 00000000 00:00 99999999999999999999",  // inode beyond 64 bits
      "1000-2000  r-xp 00000000 00:00 0",                    // two spaces
  };
  for (const char* line : bad) {
    absl::StatusOr<MapsEntry> entry = ParseMapsLine(line);
    EXPECT_FALSE(entry.ok()) << "accepted: '" << line << "'";
    if (!entry.ok()) {
      EXPECT_EQ(entry.status().code(), absl::StatusCode::kInvalidArgument);
    }
  }
}

TEST(ParseMaps, LinesAndLineNumbers) {
  absl::StatusOr<std::vector<MapsEntry>> entries =
      ParseMaps("1000-2000 r-xp 00000000 00:00 0 a\n3000-4000 rw-p 00000000 00:00 0");
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[1].start, 0x3000u);
  EXPECT_TRUE(ParseMaps("").ok());
  absl::StatusOr<std::vector<MapsEntry>> bad =
      ParseMaps("1000-2000 r-xp 00000000 00:00 0 a\nbroken\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 2"), absl::string_view::npos) << bad.status();
}

TEST(ParseMaps, ThisProcessFindsItsOwnMapping) {
  long page = sysconf(_SC_PAGESIZE);
  void* mapping = mmap(nullptr, static_cast<size_t>(page), PROT_READ | PROT_EXEC,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapping, MAP_FAILED);
  absl::StatusOr<std::string> text = ReadTextFile("/proc/self/maps");
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<std::vector<MapsEntry>> entries = ParseMaps(*text);
  munmap(mapping, static_cast<size_t>(page));
  ASSERT_TRUE(entries.ok()) << entries.status();
  int found = 0;
  for (const MapsEntry& entry : *entries) {
    if (entry.start <= reinterpret_cast<uintptr_t>(mapping) &&
        reinterpret_cast<uintptr_t>(mapping) < entry.end && entry.executable) {
      ++found;
    }
  }
  EXPECT_EQ(found, 1);
}

}  // namespace
}  // namespace perfscale
