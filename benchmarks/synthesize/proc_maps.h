// Lines of /proc/PID/maps as the kernel writes them (show_map_vma):
//   "start-end perms offset major:minor inode   path"
// with hexadecimal addresses, offset and device numbers, a decimal inode, and a path that
// runs to the end of the line (it may contain spaces, or end in " (deleted)"; the kernel
// escapes a newline in it as "\012"). Anonymous mappings have no path.
//
// The parsers take text and return views into it, so synthesizing MMAP2 records from a
// maps file allocates nothing per line.
//
// Example:
//   absl::StatusOr<perfscale::MapsEntry> entry = perfscale::ParseMapsLine(
//       "7f00c0000000-7f00c0021000 r-xp 00000000 fd:01 1234  /usr/lib/libc.so.6");
//   if (entry.ok() && entry->executable) { ... an MMAP2 record for it ... }
#ifndef PERFSCALE_BENCHMARKS_SYNTHESIZE_PROC_MAPS_H_
#define PERFSCALE_BENCHMARKS_SYNTHESIZE_PROC_MAPS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace perfscale {

struct MapsEntry {
  uint64_t start = 0;
  uint64_t end = 0;  // exclusive
  uint64_t offset = 0;
  uint32_t dev_major = 0;
  uint32_t dev_minor = 0;
  uint64_t inode = 0;
  bool readable = false;
  bool writable = false;
  bool executable = false;
  bool shared = false;     // 's' rather than 'p'
  absl::string_view path;  // empty for an anonymous mapping; a view into the line
};

// One line, with or without its trailing newline. A missing field, a bad number, a
// start above the end, or permissions other than [r-][w-][x-][sp]: InvalidArgument.
absl::StatusOr<MapsEntry> ParseMapsLine(absl::string_view line);

// Every line of a whole maps file (a last line without newline included). The first bad
// line fails the whole text, with its line number.
absl::StatusOr<std::vector<MapsEntry>> ParseMaps(absl::string_view text);

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_SYNTHESIZE_PROC_MAPS_H_
