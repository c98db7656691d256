#include "benchmarks/uprobe/elf_offset.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "lib/errno_status.h"

namespace perfscale {
namespace {

// Enough of any program's start for its ELF header and program header table (the
// linker puts the table right after the header).
constexpr size_t kHeadBytes = 64 * 1024;

template <class T>
bool ReadAt(absl::Span<const uint8_t> bytes, uint64_t offset, T* out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(out, bytes.data() + offset, sizeof(T));
  return true;
}

// The loaded object (main program or shared object) whose segments hold an address.
struct Holder {
  uintptr_t address = 0;
  bool found = false;
  bool main_program = false;
  std::string name;
  uintptr_t bias = 0;
};

int FindHolder(dl_phdr_info* info, size_t, void* data) {
  auto* holder = static_cast<Holder*>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD) continue;
    const uintptr_t start = info->dlpi_addr + segment.p_vaddr;
    if (holder->address < start || holder->address - start >= segment.p_memsz) continue;
    holder->found = true;
    // The loader lists the main program first, with an empty name.
    holder->main_program = info->dlpi_name == nullptr || info->dlpi_name[0] == '\0';
    holder->name = holder->main_program ? "" : info->dlpi_name;
    holder->bias = info->dlpi_addr;
    return 1;
  }
  return 0;
}

}  // namespace

absl::StatusOr<uint64_t> ElfFileOffset(absl::Span<const uint8_t> elf, uint64_t vaddr) {
  Elf64_Ehdr header;
  if (!ReadAt(elf, 0, &header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) {
    return absl::InvalidArgumentError("not an ELF file");
  }
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB) {
    return absl::InvalidArgumentError("not a 64-bit little-endian ELF file");
  }
  if (header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum == 0) {
    return absl::InvalidArgumentError("no program header table of Elf64_Phdr entries");
  }
  for (uint64_t i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment;
    if (header.e_phoff > UINT64_MAX - i * sizeof(Elf64_Phdr) ||
        !ReadAt(elf, header.e_phoff + i * sizeof(Elf64_Phdr), &segment)) {
      return absl::InvalidArgumentError(
          absl::StrCat("program header ", i, " lies beyond the bytes read (", elf.size(), ")"));
    }
    if (segment.p_type != PT_LOAD) continue;
    // Only the file-backed part (p_filesz) has an offset; the rest is zero-filled memory.
    if (vaddr < segment.p_vaddr || vaddr - segment.p_vaddr >= segment.p_filesz) continue;
    if (segment.p_offset > UINT64_MAX - (vaddr - segment.p_vaddr)) {
      return absl::InvalidArgumentError(absl::StrCat("program header ", i, " overflows"));
    }
    return segment.p_offset + (vaddr - segment.p_vaddr);
  }
  return absl::NotFoundError(
      absl::StrCat("no loadable segment holds virtual address 0x", absl::Hex(vaddr)));
}

absl::StatusOr<CodeLocation> SelfCodeLocation(const void* code) {
  Holder holder;
  holder.address = reinterpret_cast<uintptr_t>(code);
  dl_iterate_phdr(&FindHolder, &holder);
  if (!holder.found) {
    return absl::FailedPreconditionError(
        absl::StrCat("0x", absl::Hex(holder.address), " is in no loaded object of this process"));
  }
  std::string path = holder.name;
  if (holder.main_program) {
    char exe[PATH_MAX];
    ssize_t length = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (length < 0) return ErrnoStatus(errno, "readlink /proc/self/exe");
    path.assign(exe, static_cast<size_t>(length));
  }

  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("open ", path));
  std::vector<uint8_t> head(kHeadBytes);
  ssize_t got = pread(fd, head.data(), head.size(), 0);
  int read_errno = errno;
  close(fd);
  if (got < 0) return ErrnoStatus(read_errno, absl::StrCat("read ", path));
  head.resize(static_cast<size_t>(got));

  absl::StatusOr<uint64_t> offset = ElfFileOffset(head, holder.address - holder.bias);
  if (!offset.ok()) {
    return absl::Status(offset.status().code(),
                        absl::StrCat(path, ": ", offset.status().message()));
  }
  return CodeLocation{path, *offset};
}

}  // namespace perfscale
