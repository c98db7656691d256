#include "lib/symbols.h"

#include <cxxabi.h>
#include <elf.h>
#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "lib/file_reader.h"

namespace perfscale {
namespace {

constexpr char kKernelDso[] = "[kernel.kallsyms]";

// Reads a T at `offset` when all of it lies inside `bytes`.
template <typename T>
bool ReadAt(absl::Span<const uint8_t> bytes, uint64_t offset, T* out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(out, bytes.data() + offset, sizeof(T));
  return true;
}

// The NUL-terminated string at `offset` of a string table, or nullopt-like false.
bool StringAt(absl::Span<const uint8_t> table, uint64_t offset, std::string* out) {
  if (offset >= table.size()) return false;
  const uint8_t* begin = table.data() + offset;
  const void* nul = std::memchr(begin, 0, table.size() - offset);
  if (nul == nullptr) return false;
  out->assign(reinterpret_cast<const char*>(begin), static_cast<const uint8_t*>(nul) - begin);
  return true;
}

absl::Status NotElf(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("not a well-formed ELF64 file: ", why));
}

// The symbols of one SHT_SYMTAB/SHT_DYNSYM section and its linked string table.
absl::Status ReadSymbolSection(absl::Span<const uint8_t> elf, const Elf64_Shdr& section,
                               const Elf64_Shdr& strings, std::vector<Symbol>* out) {
  if (section.sh_offset > elf.size() || elf.size() - section.sh_offset < section.sh_size ||
      strings.sh_offset > elf.size() || elf.size() - strings.sh_offset < strings.sh_size) {
    return NotElf("symbol table outside the file");
  }
  if (section.sh_entsize != sizeof(Elf64_Sym)) return NotElf("odd symbol entry size");
  absl::Span<const uint8_t> table = elf.subspan(section.sh_offset, section.sh_size);
  absl::Span<const uint8_t> names = elf.subspan(strings.sh_offset, strings.sh_size);
  for (uint64_t offset = 0; offset + sizeof(Elf64_Sym) <= table.size();
       offset += sizeof(Elf64_Sym)) {
    Elf64_Sym sym;
    ReadAt(table, offset, &sym);
    const int type = ELF64_ST_TYPE(sym.st_info);
    if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
        sym.st_value == 0) {
      continue;
    }
    Symbol symbol;
    symbol.address = sym.st_value;
    symbol.size = sym.st_size;
    if (!StringAt(names, sym.st_name, &symbol.name) || symbol.name.empty()) continue;
    out->push_back(std::move(symbol));
  }
  return absl::OkStatus();
}

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

absl::StatusOr<std::vector<uint8_t>> ReadBinaryFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

SymbolTable::SymbolTable(std::vector<Symbol> symbols) : symbols_(std::move(symbols)) {
  std::stable_sort(symbols_.begin(), symbols_.end(),
                   [](const Symbol& a, const Symbol& b) { return a.address < b.address; });
}

const Symbol* SymbolTable::Find(uint64_t address) const {
  auto above = std::upper_bound(symbols_.begin(), symbols_.end(), address,
                                [](uint64_t a, const Symbol& s) { return a < s.address; });
  if (above == symbols_.begin()) return nullptr;
  // Aliases share an address; prefer one that knows its size and covers the address.
  const auto last = std::prev(above);
  for (auto it = last; it->address == last->address; --it) {
    if (it->size == 0 || address - it->address < it->size) return &*it;
    if (it == symbols_.begin()) break;
  }
  return nullptr;
}

absl::StatusOr<SymbolTable> ParseKallsyms(absl::string_view text) {
  std::vector<Symbol> symbols;
  bool any_address = false;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    uint64_t address = 0;
    if (fields.size() < 3 || fields[1].size() != 1 || !absl::SimpleHexAtoi(fields[0], &address)) {
      return absl::InvalidArgumentError(absl::StrCat("kallsyms line ", line_number,
                                                     " is not 'address type name': '",
                                                     line.substr(0, 80), "'"));
    }
    any_address |= address != 0;
    const char type = fields[1][0];
    if (type != 't' && type != 'T' && type != 'w' && type != 'W') continue;
    Symbol symbol;
    symbol.address = address;
    symbol.name = std::string(fields[2]);
    symbol.dso =
        fields.size() > 3 && absl::StartsWith(fields[3], "[") ? std::string(fields[3]) : kKernelDso;
    symbols.push_back(std::move(symbol));
  }
  if (!symbols.empty() && !any_address) {
    return absl::FailedPreconditionError(
        "/proc/kallsyms shows every address as 0: the kernel hides them from processes "
        "without CAP_SYSLOG (kernel.kptr_restrict=1, or 0 with perf_event_paranoid > 1; "
        "kptr_restrict=2 hides them from everyone); run as root, or 'sysctl "
        "kernel.kptr_restrict=0 kernel.perf_event_paranoid=1'");
  }
  return SymbolTable(std::move(symbols));
}

absl::StatusOr<std::vector<Symbol>> ParseElfFunctions(absl::Span<const uint8_t> elf) {
  Elf64_Ehdr header;
  if (!ReadAt(elf, 0, &header)) return NotElf("shorter than an ELF header");
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) return NotElf("no ELF magic");
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB) {
    return NotElf("not 64-bit little-endian");
  }
  if (header.e_shentsize != sizeof(Elf64_Shdr)) return NotElf("odd section header size");
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  for (size_t i = 0; i < sections.size(); ++i) {
    if (!ReadAt(elf, header.e_shoff + i * sizeof(Elf64_Shdr), &sections[i])) {
      return NotElf("section headers outside the file");
    }
  }
  // .symtab has every function; .dynsym only the exported ones, all a stripped file has.
  for (uint32_t wanted : {static_cast<uint32_t>(SHT_SYMTAB), static_cast<uint32_t>(SHT_DYNSYM)}) {
    std::vector<Symbol> symbols;
    bool found = false;
    for (const Elf64_Shdr& section : sections) {
      if (section.sh_type != wanted) continue;
      if (section.sh_link >= sections.size()) return NotElf("symbol table without strings");
      found = true;
      if (absl::Status read = ReadSymbolSection(elf, section, sections[section.sh_link], &symbols);
          !read.ok()) {
        return read;
      }
    }
    if (found) return symbols;
  }
  return std::vector<Symbol>();
}

std::string Demangle(const std::string& name) {
  if (!absl::StartsWith(name, "_Z")) return name;
  int status = 0;
  char* demangled = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) return name;
  std::string result(demangled);
  std::free(demangled);
  return result;
}

ProcessSymbolizer& ProcessSymbolizer::Get() {
  static auto* symbolizer = new ProcessSymbolizer();
  return *symbolizer;
}

ProcessSymbolizer::ProcessSymbolizer() {
  absl::StatusOr<std::string> kallsyms = ReadTextFile("/proc/kallsyms");
  if (!kallsyms.ok()) {
    kernel_status_ = kallsyms.status();
  } else if (absl::StatusOr<SymbolTable> table = ParseKallsyms(*kallsyms); !table.ok()) {
    kernel_status_ = table.status();
  } else {
    kernel_ = *std::move(table);
  }

  struct Loaded {
    std::string path;
    uint64_t bias, start, end;
  };
  std::vector<Loaded> loaded;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        Loaded object{info->dlpi_name != nullptr ? info->dlpi_name : "", info->dlpi_addr,
                      UINT64_MAX, 0};
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& segment = info->dlpi_phdr[i];
          if (segment.p_type != PT_LOAD || (segment.p_flags & PF_X) == 0) continue;
          object.start = std::min<uint64_t>(object.start, info->dlpi_addr + segment.p_vaddr);
          object.end =
              std::max<uint64_t>(object.end, info->dlpi_addr + segment.p_vaddr + segment.p_memsz);
        }
        if (object.start < object.end) static_cast<std::vector<Loaded>*>(data)->push_back(object);
        return 0;
      },
      &loaded);
  for (const Loaded& object : loaded) {
    // The program itself comes with an empty name; the vDSO has no file to read.
    std::string path = object.path.empty() ? "/proc/self/exe" : object.path;
    Object entry{object.start, object.end, object.bias, BaseName(path), SymbolTable()};
    if (object.path.empty()) {
      char target[4096];
      ssize_t n = readlink("/proc/self/exe", target, sizeof(target) - 1);
      if (n > 0) entry.dso = BaseName(std::string(target, static_cast<size_t>(n)));
    }
    if (absl::StartsWith(path, "/") && !absl::StrContains(path, "linux-vdso")) {
      if (absl::StatusOr<std::vector<uint8_t>> bytes = ReadBinaryFile(path); bytes.ok()) {
        if (absl::StatusOr<std::vector<Symbol>> symbols = ParseElfFunctions(*bytes); symbols.ok()) {
          entry.symbols = SymbolTable(*std::move(symbols));
        }
      }
    } else {
      entry.dso = "[vdso]";
    }
    objects_.push_back(std::move(entry));
  }
}

ResolvedFrame ProcessSymbolizer::Resolve(uint64_t address, bool kernel) const {
  if (kernel) {
    const Symbol* symbol = kernel_.Find(address);
    if (symbol == nullptr) return {kUnknownSymbol, kKernelDso};
    return {symbol->name, symbol->dso};
  }
  for (const Object& object : objects_) {
    if (address < object.start || address >= object.end) continue;
    const Symbol* symbol = object.symbols.Find(address - object.bias);
    return {symbol != nullptr ? Demangle(symbol->name) : kUnknownSymbol, object.dso};
  }
  return {kUnknownSymbol, kUnknownDso};
}

}  // namespace perfscale
