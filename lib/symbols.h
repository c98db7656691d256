// Turns sampled instruction addresses into function names, the way `perf report` shows
// them: kernel addresses through /proc/kallsyms, user addresses through the ELF symbol
// tables (.symtab, else .dynsym) of the program and of every shared object loaded in
// this process (dl_iterate_phdr gives each one's load bias).
//
// The parsers are pure (text or bytes in, a table out) so tests and fuzzers can feed them
// anything; ProcessSymbolizer is the one part that reads files.
//
// Kernel symbols are missing in two cases, which KernelStatus() explains: /proc/kallsyms
// is unreadable, or it shows every address as 0 (without CAP_SYSLOG, kernel.kptr_restrict=1
// hides them, and so does 0 with perf_event_paranoid > 1; kptr_restrict=2 hides them from
// everyone).
//
// Example:
//   perfscale::ProcessSymbolizer& symbols = perfscale::ProcessSymbolizer::Get();
//   perfscale::ResolvedFrame frame = symbols.Resolve(ip, /*kernel=*/true);
//   // frame.symbol == "osq_lock", frame.dso == "[kernel.kallsyms]"
#ifndef PERFSCALE_LIB_SYMBOLS_H_
#define PERFSCALE_LIB_SYMBOLS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace perfscale {

struct Symbol {
  uint64_t address = 0;
  uint64_t size = 0;  // 0: unknown, the symbol runs to the next one
  std::string name;
  std::string dso;  // kallsyms: "[kernel.kallsyms]" or the module, "[ext4]"
};

// Symbols sorted by address; Find returns the one covering an address.
class SymbolTable {
 public:
  SymbolTable() = default;
  explicit SymbolTable(std::vector<Symbol> symbols);
  // The last symbol at or below `address` whose size (if known) covers it; nullptr when
  // none does.
  const Symbol* Find(uint64_t address) const;
  size_t size() const { return symbols_.size(); }

 private:
  std::vector<Symbol> symbols_;
};

// /proc/kallsyms: "ffffffff81000000 T _stext" with an optional "\t[module]". Only text
// symbols (t, T, w, W) are kept. FailedPrecondition when every address is 0 (hidden by
// kptr_restrict: the message says so); InvalidArgument for a malformed line.
absl::StatusOr<SymbolTable> ParseKallsyms(absl::string_view text);

// The function symbols (STT_FUNC, STT_GNU_IFUNC, defined, non-zero) of a 64-bit
// little-endian ELF file, from .symtab or, when it is stripped, .dynsym; addresses as
// linked (add the load bias for run-time addresses). Every offset is bounds-checked:
// InvalidArgument for anything that is not a well-formed ELF64 file.
absl::StatusOr<std::vector<Symbol>> ParseElfFunctions(absl::Span<const uint8_t> elf);

// "_ZN9perfscale3FooEv" -> "perfscale::Foo()"; anything else unchanged.
std::string Demangle(const std::string& name);

// What Resolve returns for an address no symbol, or no loaded object, covers.
inline constexpr char kUnknownSymbol[] = "[unknown]";
inline constexpr char kUnknownDso[] = "[unknown]";

struct ResolvedFrame {
  std::string symbol;  // kUnknownSymbol when no symbol covers the address
  std::string dso;     // "[kernel.kallsyms]", a module "[ext4]", a file's base name, or
                       // kUnknownDso outside every loaded object
};

// This process's kernel and user symbols, loaded once on first use and kept for the
// life of the process (shared objects dlopen'ed later are not seen).
class ProcessSymbolizer {
 public:
  static ProcessSymbolizer& Get();
  ResolvedFrame Resolve(uint64_t address, bool kernel) const;
  // Ok, or why kernel addresses resolve to "[unknown]".
  const absl::Status& KernelStatus() const { return kernel_status_; }

 private:
  ProcessSymbolizer();
  struct Object {
    uint64_t start = 0;  // run-time range of its executable segments
    uint64_t end = 0;
    uint64_t bias = 0;
    std::string dso;
    SymbolTable symbols;
  };
  SymbolTable kernel_;
  absl::Status kernel_status_;
  std::vector<Object> objects_;
};

}  // namespace perfscale

#endif  // PERFSCALE_LIB_SYMBOLS_H_
