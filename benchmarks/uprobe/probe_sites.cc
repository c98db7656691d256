#include "benchmarks/uprobe/probe_sites.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

// Each site's bytes, written once: the assembly below emits them (.byte) and the table
// holds them (ProbeSite::bytes), so the two cannot disagree.
#define PERFSCALE_SITE_MOV 0x89, 0xf8  // mov %edi,%eax
#define PERFSCALE_SITE_PUSH 0x55       // push %rbp
#define PERFSCALE_SITE_NOP1 0x90
#define PERFSCALE_SITE_NOP5 0x0f, 0x1f, 0x44, 0x00, 0x00
#define PERFSCALE_SITE_NOP9 0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00
#define PERFSCALE_SITE_NOP10 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00

#define PERFSCALE_SITE_TEXT(...) #__VA_ARGS__
#define PERFSCALE_SITE_BYTES(...) ".byte " PERFSCALE_SITE_TEXT(__VA_ARGS__) "\n"

#if defined(__x86_64__)
// 16-byte aligned, so no site crosses a page (the kernel optimizes only a site whose
// bytes lie in one page); hidden, so calls and addresses bind here, not through a PLT.
// clang-format off
#define PERFSCALE_SITE_FUNCTION(name, site, body)       \
  asm(".pushsection .text\n"                            \
      ".p2align 4\n"                                    \
      ".globl " #name "\n"                              \
      ".hidden " #name "\n"                             \
      ".type " #name ", @function\n"                    \
      #name ":\n"                                       \
      site body                                         \
      ".size " #name ", .-" #name "\n"                  \
      ".popsection\n")
// clang-format on

// The instruction after each site makes the result x + 1 (the mov site's own mov is the
// first half of it).
#define PERFSCALE_PLUS_ONE "lea 1(%rdi), %eax\n ret\n"

extern "C" {
int perfscale_uprobe_site_mov(int);
int perfscale_uprobe_site_push(int);
int perfscale_uprobe_site_nop1(int);
int perfscale_uprobe_site_nop5(int);
int perfscale_uprobe_site_nop9(int);
int perfscale_uprobe_site_nop10(int);
}

PERFSCALE_SITE_FUNCTION(perfscale_uprobe_site_mov, PERFSCALE_SITE_BYTES(PERFSCALE_SITE_MOV),
                        "add $1, %eax\n ret\n");
PERFSCALE_SITE_FUNCTION(perfscale_uprobe_site_push, PERFSCALE_SITE_BYTES(PERFSCALE_SITE_PUSH),
                        "lea 1(%rdi), %eax\n pop %rbp\n ret\n");
PERFSCALE_SITE_FUNCTION(perfscale_uprobe_site_nop1, PERFSCALE_SITE_BYTES(PERFSCALE_SITE_NOP1),
                        PERFSCALE_PLUS_ONE);
PERFSCALE_SITE_FUNCTION(perfscale_uprobe_site_nop5, PERFSCALE_SITE_BYTES(PERFSCALE_SITE_NOP5),
                        PERFSCALE_PLUS_ONE);
PERFSCALE_SITE_FUNCTION(perfscale_uprobe_site_nop9, PERFSCALE_SITE_BYTES(PERFSCALE_SITE_NOP9),
                        PERFSCALE_PLUS_ONE);
PERFSCALE_SITE_FUNCTION(perfscale_uprobe_site_nop10, PERFSCALE_SITE_BYTES(PERFSCALE_SITE_NOP10),
                        PERFSCALE_PLUS_ONE);
#endif

namespace perfscale {
namespace {

#if defined(__x86_64__)
constexpr uint8_t kMov[] = {PERFSCALE_SITE_MOV};
constexpr uint8_t kPush[] = {PERFSCALE_SITE_PUSH};
constexpr uint8_t kNop1[] = {PERFSCALE_SITE_NOP1};
constexpr uint8_t kNop5[] = {PERFSCALE_SITE_NOP5};
constexpr uint8_t kNop9[] = {PERFSCALE_SITE_NOP9};
constexpr uint8_t kNop10[] = {PERFSCALE_SITE_NOP10};
#define PERFSCALE_SITE(name, bytes) &perfscale_uprobe_site_##name, bytes
#else
// Named on every architecture (the flag's values are the same everywhere); no function.
// clang-format off
#define PERFSCALE_SITE(name, bytes) nullptr, {}
// clang-format on
#endif

const ProbeSite kSites[] = {
    {"mov", PERFSCALE_SITE(mov, kMov)},
    {"push", PERFSCALE_SITE(push, kPush)},
    {"nop1", PERFSCALE_SITE(nop1, kNop1)},
    {"nop5", PERFSCALE_SITE(nop5, kNop5)},
    {"nop9", PERFSCALE_SITE(nop9, kNop9)},
    {"nop10", PERFSCALE_SITE(nop10, kNop10)},
    {"return", PERFSCALE_SITE(nop1, kNop1), /*retprobe=*/true},
};

}  // namespace

absl::Span<const ProbeSite> ProbeSites() { return kSites; }

const char* SitePatchName(SitePatch patch) {
  switch (patch) {
    case SitePatch::kOriginal:
      return "original";
    case SitePatch::kBreakpoint:
      return "int3";
    case SitePatch::kRewritten:
      return "rewritten";
  }
  return "?";
}

SitePatch ClassifySitePatch(absl::Span<const uint8_t> original, absl::Span<const uint8_t> now) {
  if (now == original) return SitePatch::kOriginal;
  constexpr uint8_t kInt3 = 0xcc;
  if (!now.empty() && now.size() == original.size() && now[0] == kInt3 &&
      now.subspan(1) == original.subspan(1)) {
    return SitePatch::kBreakpoint;
  }
  return SitePatch::kRewritten;
}

std::vector<uint8_t> SiteBytesNow(const ProbeSite& site) {
  std::vector<uint8_t> bytes(site.bytes.size());
  if (bytes.empty()) return bytes;
  std::memcpy(bytes.data(), reinterpret_cast<const void*>(site.function), bytes.size());
  return bytes;
}

std::string HexBytes(absl::Span<const uint8_t> bytes) {
  return absl::StrJoin(bytes, " ", [](std::string* out, uint8_t byte) {
    absl::StrAppend(out, absl::Hex(byte, absl::kZeroPad2));
  });
}

}  // namespace perfscale
