#include "benchmarks/harness/json_string.h"

#include <cstddef>
#include <cstdint>

namespace perfscale {
namespace {

// The length of the well-formed UTF-8 sequence at the start of `text` (2 to 4), or 0 when
// its first byte does not start one. The ranges are the Unicode Standard's table of
// well-formed byte sequences (3-7): they exclude overlong forms, surrogates (ED A0..BF)
// and code points past U+10FFFF.
size_t Utf8SequenceLength(absl::string_view text) {
  auto byte = [text](size_t i) -> uint8_t { return static_cast<uint8_t>(text[i]); };
  auto in = [&](size_t i, uint8_t lo, uint8_t hi) {
    return i < text.size() && byte(i) >= lo && byte(i) <= hi;
  };
  uint8_t lead = byte(0);
  if (lead >= 0xc2 && lead <= 0xdf) return in(1, 0x80, 0xbf) ? 2 : 0;
  if (lead >= 0xe0 && lead <= 0xef) {
    uint8_t lo = lead == 0xe0 ? 0xa0 : 0x80;
    uint8_t hi = lead == 0xed ? 0x9f : 0xbf;
    return in(1, lo, hi) && in(2, 0x80, 0xbf) ? 3 : 0;
  }
  if (lead >= 0xf0 && lead <= 0xf4) {
    uint8_t lo = lead == 0xf0 ? 0x90 : 0x80;
    uint8_t hi = lead == 0xf4 ? 0x8f : 0xbf;
    return in(1, lo, hi) && in(2, 0x80, 0xbf) && in(3, 0x80, 0xbf) ? 4 : 0;
  }
  return 0;
}

}  // namespace

std::string JsonString(absl::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  out.reserve(text.size() + 2);
  size_t i = 0;
  while (i < text.size()) {
    uint8_t c = static_cast<uint8_t>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else if (size_t length = Utf8SequenceLength(text.substr(i)); length != 0) {
      out.append(text.data() + i, length);
      i += length;
    } else {
      out += "\\ufffd";
      ++i;
    }
  }
  out += '"';
  return out;
}

}  // namespace perfscale
