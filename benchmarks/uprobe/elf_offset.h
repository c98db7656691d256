// Where a function of this program lies in its file: what the `uprobe` PMU asks for (a
// path and a file offset), not the address the function runs at.
//
// A uprobe names an instruction by (inode, offset in the file). The run-time address of
// a function is its link-time virtual address plus the program's load bias (PIE); the
// PT_LOAD program header that holds that virtual address maps it to a file offset
// (p_offset + vaddr - p_vaddr). A wrong offset is not refused by the kernel: it probes
// some other instruction, or one never executed, and the event counts 0.
//
// ElfFileOffset is pure (the file's bytes in, an offset out) so tests and fuzzers can
// feed it anything; SelfCodeLocation asks the loader which object (the program or a
// shared object: tests link the family's library as one) holds the code, then reads
// that file's headers.
//
// Example:
//   absl::StatusOr<perfscale::CodeLocation> at = perfscale::SelfCodeLocation(&Target);
//   // at->path == "/proc/self/exe"'s target, at->offset == 0x1234
#ifndef PERFSCALE_BENCHMARKS_UPROBE_ELF_OFFSET_H_
#define PERFSCALE_BENCHMARKS_UPROBE_ELF_OFFSET_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace perfscale {

// The file offset of link-time virtual address `vaddr` in a 64-bit little-endian ELF
// file whose first bytes are `elf` (the ELF header and the program header table must
// be among them). NotFound when no PT_LOAD segment's file-backed part holds `vaddr`;
// InvalidArgument for anything that is not a well-formed ELF64 header and table.
absl::StatusOr<uint64_t> ElfFileOffset(absl::Span<const uint8_t> elf, uint64_t vaddr);

struct CodeLocation {
  std::string path;     // the object's file (the program's as /proc/self/exe resolves)
  uint64_t offset = 0;  // file offset of the instruction
};

// Where `code` (a function of the program or of a shared object loaded in this process)
// lies in its file. FailedPrecondition when no loaded object holds the address.
absl::StatusOr<CodeLocation> SelfCodeLocation(const void* code);

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_UPROBE_ELF_OFFSET_H_
