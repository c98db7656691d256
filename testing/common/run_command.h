// Runs a program the way a user would and collects what it printed: how the tests that
// exercise the benchmark binaries end to end start them.
//
// Example:
//   perfscale::testing::CommandResult r = perfscale::testing::RunCommand(
//       {perfscale::testing::RunfilePath("benchmarks/breakpoint/breakpoint"),
//       "--breakpoint_threads=0"});
//   EXPECT_EQ(r.exit_code, 2);
#ifndef PERFSCALE_TESTING_COMMON_RUN_COMMAND_H_
#define PERFSCALE_TESTING_COMMON_RUN_COMMAND_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace perfscale {
namespace testing {

struct CommandResult {
  int exit_code = -1;  // -1: did not exit normally (signal, or could not start)
  std::string out;
  std::string err;
};

// argv[0] is looked up on PATH when it has no '/'. stdout and stderr are read
// concurrently, so neither can fill its pipe and stall the child.
CommandResult RunCommand(const std::vector<std::string>& argv);

// The path of a data dependency inside this test's runfiles, e.g. "benchmarks/suite".
std::string RunfilePath(absl::string_view relative);

// Runs that data dependency with `args`.
CommandResult RunRunfile(absl::string_view relative, const std::vector<std::string>& args);

}  // namespace testing
}  // namespace perfscale

#endif  // PERFSCALE_TESTING_COMMON_RUN_COMMAND_H_
