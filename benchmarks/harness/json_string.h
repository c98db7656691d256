// A JSON string literal of any bytes, for the few JSON texts the harness writes by hand
// (the counter sources in the run's context, the --profile file). The output is always
// valid JSON, whatever the input: a symbol name, a kernel's message or a path may hold
// any bytes.
//
// - `"` and `\` are escaped; control characters (below 0x20, and DEL) become \u00XX.
// - Well-formed UTF-8 passes through as is, so "café" stays readable.
// - A byte that does not start a well-formed UTF-8 sequence (a stray continuation byte,
//   a truncated or overlong sequence, a surrogate, a code point past U+10FFFF) becomes
//   \ufffd, the replacement character, one per byte, as a strict reader would replace it.
//
// Example:
//   JsonString("a\"b\n")  // -> "\"a\\\"b\\u000a\""
//   JsonString("caf\xc3\xa9 \xff")  // -> "\"caf\xc3\xa9 \\ufffd\""
#ifndef PERFSCALE_BENCHMARKS_HARNESS_JSON_STRING_H_
#define PERFSCALE_BENCHMARKS_HARNESS_JSON_STRING_H_

#include <string>

#include "absl/strings/string_view.h"

namespace perfscale {

// `text` as a JSON string literal, quotes included.
std::string JsonString(absl::string_view text);

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_HARNESS_JSON_STRING_H_
