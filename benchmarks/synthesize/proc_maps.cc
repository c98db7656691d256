#include "benchmarks/synthesize/proc_maps.h"

#include "absl/strings/str_cat.h"
#include "benchmarks/synthesize/text_lines.h"

namespace perfscale {
namespace {

// Consumes hex digits from the front of `text` up to (not including) `stop` or the end.
// At most 16 digits, at least one.
bool TakeHex(absl::string_view& text, char stop, uint64_t* out) {
  uint64_t value = 0;
  size_t i = 0;
  for (; i < text.size() && text[i] != stop; ++i) {
    char c = text[i];
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      digit = c - 'A' + 10;
    } else {
      return false;
    }
    if (i >= 16) return false;
    value = (value << 4) | static_cast<uint64_t>(digit);
  }
  if (i == 0) return false;
  *out = value;
  text.remove_prefix(i);
  return true;
}

bool TakeDecimal(absl::string_view& text, char stop, uint64_t* out) {
  uint64_t value = 0;
  size_t i = 0;
  for (; i < text.size() && text[i] != stop; ++i) {
    char c = text[i];
    if (c < '0' || c > '9' || i >= 19) return false;  // 19 digits always fit 64 bits
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  if (i == 0) return false;
  *out = value;
  text.remove_prefix(i);
  return true;
}

bool TakeChar(absl::string_view& text, char c) {
  if (text.empty() || text[0] != c) return false;
  text.remove_prefix(1);
  return true;
}

absl::Status Bad(absl::string_view what, absl::string_view line) {
  return absl::InvalidArgumentError(
      absl::StrCat("maps: ", what, " in '", line.substr(0, 100), "'"));
}

}  // namespace

absl::StatusOr<MapsEntry> ParseMapsLine(absl::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  absl::string_view rest = line;
  MapsEntry entry;
  if (!TakeHex(rest, '-', &entry.start) || !TakeChar(rest, '-') ||
      !TakeHex(rest, ' ', &entry.end) || !TakeChar(rest, ' ')) {
    return Bad("bad address range", line);
  }
  if (entry.start > entry.end) return Bad("start above end", line);
  if (rest.size() < 5 || rest[4] != ' ') return Bad("bad permissions", line);
  const char r = rest[0], w = rest[1], x = rest[2], s = rest[3];
  if ((r != 'r' && r != '-') || (w != 'w' && w != '-') || (x != 'x' && x != '-') ||
      (s != 's' && s != 'p')) {
    return Bad("bad permissions", line);
  }
  entry.readable = r == 'r';
  entry.writable = w == 'w';
  entry.executable = x == 'x';
  entry.shared = s == 's';
  rest.remove_prefix(5);
  uint64_t major = 0, minor = 0;
  if (!TakeHex(rest, ' ', &entry.offset) || !TakeChar(rest, ' ')) {
    return Bad("bad offset", line);
  }
  if (!TakeHex(rest, ':', &major) || !TakeChar(rest, ':') || !TakeHex(rest, ' ', &minor) ||
      !TakeChar(rest, ' ') || major > UINT32_MAX || minor > UINT32_MAX) {
    return Bad("bad device", line);
  }
  entry.dev_major = static_cast<uint32_t>(major);
  entry.dev_minor = static_cast<uint32_t>(minor);
  if (!TakeDecimal(rest, ' ', &entry.inode)) return Bad("bad inode", line);
  // The kernel pads with spaces to a column before the path; an anonymous mapping may
  // end right after the inode or after the padding.
  size_t path_start = 0;
  while (path_start < rest.size() && rest[path_start] == ' ') ++path_start;
  entry.path = rest.substr(path_start);
  return entry;
}

absl::StatusOr<std::vector<MapsEntry>> ParseMaps(absl::string_view text) {
  std::vector<MapsEntry> entries;
  int line_number = 0;
  for (absl::string_view line : TextLines(text)) {
    ++line_number;
    absl::StatusOr<MapsEntry> entry = ParseMapsLine(line);
    if (!entry.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line_number, ": ", entry.status().message()));
    }
    entries.push_back(*entry);
  }
  return entries;
}

}  // namespace perfscale
