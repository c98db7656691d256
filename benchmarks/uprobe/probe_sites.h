// Functions of this binary whose first instruction is one kind of probe site the kernel's
// x86-64 uprobe code (arch/x86/kernel/uprobes.c) treats its own way, written in assembly
// so the bytes at the probe address are known; and what the kernel made of a site once
// it was hit (a breakpoint, or the site rewritten into a call: an optimized uprobe).
//
// A uprobe writes int3 over the first byte of the instruction. When it fires the kernel
// either emulates the displaced instruction (branch_xol_ops: nops and jumps;
// push_xol_ops: push) or copies it into the per-process XOL page and single-steps it
// there (default_xol_ops: two traps per hit, the int3 and the single-step's debug trap).
// Kernels differ in which instructions they emulate and, from the "uprobe: optimized"
// series on, rewrite some nops into a call into a per-process [uprobes-trampoline] page
// that enters the kernel with the uprobe syscall instead of a trap. The sites, and why
// each is its own row:
//   mov     89 f8 (mov %edi,%eax): an ordinary instruction, single-stepped out of line by
//           every kernel: the dearest hit.
//   push    55 (push %rbp): emulated (push_xol_ops: the kernel writes the pushed value to
//           the user stack) since "uprobes/x86: Emulate push insns for uprobe on x86"
//           (e7ed9d9bd0375, 2018): the function-entry probe of frame-pointer code.
//   nop1    90: emulated by every kernel (the 0x90 case of branch_setup_xol_ops); the
//           classic USDT probe (systemtap's sdt.h).
//   nop5    0f 1f 44 00 00 (the kernel's own x86_nops[5]): single-stepped until Jiri
//           Olsa's "uprobes/x86: Add support to emulate NOP instructions" (2025: every
//           x86_nops[] encoding up to 8 bytes), then rewritten into a 5-byte call by the
//           optimized-uprobe series (6.18 here; libbpf's usdt.h emits nop1+nop5 for
//           it), and only emulated again once the optimization moved to nop10 (the
//           call pushed its return address over the probed function's red zone).
//   nop9    66 0f 1f 84 00 00 00 00 00: a nop longer than x86_nops[] holds: still
//           single-stepped where emulation compares against that table (6.18 here),
//           emulated where the decoder's insn_is_nop() decides.
//   nop10   66 2e 0f 1f 84 00 00 00 00 00 (cs nopw): refused outright (its CS prefix is
//           is_prefix_bad) until the nop10 optimization, which rewrites it into
//           lea -0x80(%rsp),%rsp + call; libbpf's usdt.h emits nop1+nop10 for it.
//   return  a uretprobe on the nop1 function: the entry's breakpoint is the cheap emulated
//           one, so the row is the return path (the int3 trampoline, or the uretprobe
//           syscall from Linux 6.11).
// Each function returns its argument plus one.
//
// Example:
//   for (const perfscale::ProbeSite& site : perfscale::ProbeSites()) {
//     ... OpenUprobe(pmu, SelfCodeLocation(site.function), site.retprobe, ...);
//     int y = site.function(1);  // a hit
//     perfscale::SitePatch patch =
//         perfscale::ClassifySitePatch(site.bytes, perfscale::SiteBytesNow(site));
//   }
#ifndef PERFSCALE_BENCHMARKS_UPROBE_PROBE_SITES_H_
#define PERFSCALE_BENCHMARKS_UPROBE_PROBE_SITES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"

namespace perfscale {

struct ProbeSite {
  const char* name;                 // the row's site: value ("nop5")
  int (*function)(int);             // probed at its first byte; returns x + 1; nullptr
                                    // where the sites are not written (not x86-64)
  absl::Span<const uint8_t> bytes;  // the instruction the probe replaces, as linked
  bool retprobe = false;            // a uretprobe (site "return") rather than a uprobe
};

// Every site, in the order the rows register.
absl::Span<const ProbeSite> ProbeSites();

// What the kernel left at a probed site, from the bytes as linked and as they are now.
enum class SitePatch {
  kOriginal,    // unchanged: no probe is installed
  kBreakpoint,  // int3 over the first byte: every hit traps
  kRewritten,   // anything else: the kernel rewrote the site (an optimized uprobe's call)
};
const char* SitePatchName(SitePatch patch);  // "original", "int3", "rewritten"
SitePatch ClassifySitePatch(absl::Span<const uint8_t> original, absl::Span<const uint8_t> now);

// The site's bytes as this process sees them now (site.bytes.size() of them): a uprobe's
// writes land in this process's copy of the page.
std::vector<uint8_t> SiteBytesNow(const ProbeSite& site);

// "e8 3b 0c 00 00"
std::string HexBytes(absl::Span<const uint8_t> bytes);

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_UPROBE_PROBE_SITES_H_
