// ElfFileOffset on hand-made ELF headers (segments, the zero-filled tail, malformed
// tables), and SelfCodeLocation on this test's own function: the file holds the
// function's bytes at the offset it gives, and the symbol table agrees.
#include "benchmarks/uprobe/elf_offset.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "lib/symbols.h"

extern "C" __attribute__((noinline, used)) int perfscale_elf_offset_test_target(int x) {
  asm volatile("" : "+r"(x));
  return x * 3 + 7;
}

namespace perfscale {
namespace {

struct Segment {
  uint32_t type;
  uint64_t offset, vaddr, filesz, memsz;
};

std::vector<uint8_t> MakeElf(const std::vector<Segment>& segments) {
  Elf64_Ehdr header{};
  std::memcpy(header.e_ident, ELFMAG, SELFMAG);
  header.e_ident[EI_CLASS] = ELFCLASS64;
  header.e_ident[EI_DATA] = ELFDATA2LSB;
  header.e_phoff = sizeof(Elf64_Ehdr);
  header.e_phentsize = sizeof(Elf64_Phdr);
  header.e_phnum = static_cast<Elf64_Half>(segments.size());
  std::vector<uint8_t> bytes(sizeof(header) + segments.size() * sizeof(Elf64_Phdr));
  std::memcpy(bytes.data(), &header, sizeof(header));
  for (size_t i = 0; i < segments.size(); ++i) {
    Elf64_Phdr phdr{};
    phdr.p_type = segments[i].type;
    phdr.p_offset = segments[i].offset;
    phdr.p_vaddr = segments[i].vaddr;
    phdr.p_filesz = segments[i].filesz;
    phdr.p_memsz = segments[i].memsz;
    std::memcpy(bytes.data() + sizeof(header) + i * sizeof(phdr), &phdr, sizeof(phdr));
  }
  return bytes;
}

TEST(ElfFileOffset, MapsThroughTheSegmentHoldingTheAddress) {
  std::vector<uint8_t> elf = MakeElf({{PT_PHDR, 0x40, 0x40, 0x100, 0x100},
                                      {PT_LOAD, 0, 0, 0x1000, 0x1000},
                                      {PT_LOAD, 0x1000, 0x401000, 0x2000, 0x2000},
                                      {PT_LOAD, 0x3000, 0x604000, 0x100, 0x900}});
  EXPECT_EQ(*ElfFileOffset(elf, 0x10), 0x10u);
  EXPECT_EQ(*ElfFileOffset(elf, 0x401000), 0x1000u);
  EXPECT_EQ(*ElfFileOffset(elf, 0x402abc), 0x1000u + 0x1abc);
  EXPECT_EQ(*ElfFileOffset(elf, 0x6040ff), 0x30ffu);
  // The zero-filled tail (bss) has no bytes in the file; nor has a gap between segments.
  EXPECT_EQ(ElfFileOffset(elf, 0x604100).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ElfFileOffset(elf, 0x403000).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ElfFileOffset(elf, 0x5000).status().code(), absl::StatusCode::kNotFound);
}

TEST(ElfFileOffset, RefusesWhatIsNotAWellFormedElf64) {
  std::vector<uint8_t> elf = MakeElf({{PT_LOAD, 0, 0, 0x1000, 0x1000}});
  EXPECT_EQ(ElfFileOffset({}, 0).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<uint8_t> text = {'#', '!', '/', 'b', 'i', 'n'};
  text.resize(sizeof(Elf64_Ehdr));
  EXPECT_EQ(ElfFileOffset(text, 0).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<uint8_t> elf32 = elf;
  elf32[EI_CLASS] = ELFCLASS32;
  EXPECT_EQ(ElfFileOffset(elf32, 0).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<uint8_t> truncated(elf.begin(), elf.end() - 1);
  EXPECT_EQ(ElfFileOffset(truncated, 0).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<uint8_t> far = elf;
  Elf64_Ehdr header;
  std::memcpy(&header, far.data(), sizeof(header));
  header.e_phoff = ~uint64_t{0} - 8;  // the table "beyond" every byte, and overflowing
  std::memcpy(far.data(), &header, sizeof(header));
  EXPECT_EQ(ElfFileOffset(far, 0).status().code(), absl::StatusCode::kInvalidArgument);
}

std::vector<uint8_t> ReadWholeFile(const std::string& path) {
  std::vector<uint8_t> bytes;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return bytes;
  uint8_t chunk[65536];
  ssize_t got;
  while ((got = read(fd, chunk, sizeof(chunk))) > 0) bytes.insert(bytes.end(), chunk, chunk + got);
  close(fd);
  return bytes;
}

TEST(SelfCodeLocation, TheFileHoldsTheFunctionAtTheOffset) {
  const void* code = reinterpret_cast<const void*>(&perfscale_elf_offset_test_target);
  absl::StatusOr<CodeLocation> at = SelfCodeLocation(code);
  ASSERT_TRUE(at.ok()) << at.status();
  std::vector<uint8_t> file = ReadWholeFile(at->path);
  ASSERT_GT(file.size(), at->offset + 16) << at->path;
  EXPECT_EQ(std::memcmp(file.data() + at->offset, code, 16), 0)
      << "the bytes at " << at->path << "+" << at->offset << " are not the function's";

  // The symbol table's address of the function maps to the same offset.
  absl::StatusOr<std::vector<Symbol>> functions = ParseElfFunctions(file);
  ASSERT_TRUE(functions.ok()) << functions.status();
  bool found = false;
  for (const Symbol& symbol : *functions) {
    if (symbol.name != "perfscale_elf_offset_test_target") continue;
    found = true;
    EXPECT_EQ(*ElfFileOffset(file, symbol.address), at->offset);
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(perfscale_elf_offset_test_target(1), 10);
}

TEST(SelfCodeLocation, FindsSharedObjectsToo) {
  // getppid(2)'s wrapper lives in libc (and no sanitizer intercepts it): its file, not the
  // program's, holds the bytes.
  const void* code = reinterpret_cast<const void*>(&::getppid);
  absl::StatusOr<CodeLocation> at = SelfCodeLocation(code);
  ASSERT_TRUE(at.ok()) << at.status();
  EXPECT_NE(at->path.find("libc"), std::string::npos) << at->path;
  std::vector<uint8_t> file = ReadWholeFile(at->path);
  ASSERT_GT(file.size(), at->offset + 16) << at->path;
  EXPECT_EQ(std::memcmp(file.data() + at->offset, code, 16), 0);
}

TEST(SelfCodeLocation, RefusesAnAddressNoObjectHolds) {
  int on_the_stack = 0;
  EXPECT_EQ(SelfCodeLocation(&on_the_stack).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace perfscale
