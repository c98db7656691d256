// Reads small kernel-provided text files (/proc, /sys, tracefs) whole.
//
// Parsers in lib/ take the text, never a path; this is the one place that touches the
// filesystem for them, so tests can hand parsers any string they like.
//
// Example:
//   absl::StatusOr<std::string> text = perfscale::ReadTextFile("/proc/interrupts");
#ifndef PERFSCALE_LIB_FILE_READER_H_
#define PERFSCALE_LIB_FILE_READER_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"

namespace perfscale {

// Reads until EOF (procfs files report size 0, so st_size is useless), retrying EINTR.
absl::StatusOr<std::string> ReadTextFile(const std::string& path);

// Lets components that read several files be handed a fake filesystem in tests.
using TextFileReader = std::function<absl::StatusOr<std::string>(const std::string& path)>;

}  // namespace perfscale

#endif  // PERFSCALE_LIB_FILE_READER_H_
