// What a benchmark or an RAII owner must leave as it found it: the process's open fds,
// its threads (/proc/self/task), its child processes, the calling thread's CPU affinity
// and the soft RLIMIT_NOFILE (a benchmark may raise it for its run). Tests capture it
// before and after and compare.
//
// Example:
//   perfscale::testing::ProcessState before = *perfscale::testing::CaptureProcessState();
//   ... run something ...
//   EXPECT_EQ(*perfscale::testing::CaptureProcessState(), before);
#ifndef PERFSCALE_TESTING_COMMON_PROCESS_STATE_H_
#define PERFSCALE_TESTING_COMMON_PROCESS_STATE_H_

#include <sys/types.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace perfscale {
namespace testing {

struct ProcessState {
  int open_fds = 0;
  int threads = 0;
  bool has_children = false;
  std::vector<int> affinity;  // the calling thread's allowed CPUs
  uint64_t fd_soft_limit = 0;

  bool operator==(const ProcessState& other) const {
    return open_fds == other.open_fds && threads == other.threads &&
           has_children == other.has_children && affinity == other.affinity &&
           fd_soft_limit == other.fd_soft_limit;
  }
  bool operator!=(const ProcessState& other) const { return !(*this == other); }
  std::string ToString() const;
};

// gtest prints this on a failed comparison.
inline std::ostream& operator<<(std::ostream& out, const ProcessState& state) {
  return out << state.ToString();
}

absl::StatusOr<ProcessState> CaptureProcessState();

// Captures until the state equals `expected` or `timeout_ms` passes, and returns the last
// capture. pthread_join returns when the kernel clears the thread's tid, a moment before
// the exiting thread leaves /proc/self/task; this waits out that window, not a leak.
absl::StatusOr<ProcessState> CaptureProcessStateSettled(const ProcessState& expected,
                                                        int timeout_ms = 2000);

// The thread ids in /proc/self/task, sorted, once no thread is exiting (up to 5 s; the
// error past that): a joined thread is listed until the kernel has finished its exit.
absl::StatusOr<std::vector<pid_t>> ListTasks();

// True when this process has a child, running or a zombie not yet reaped. Does not reap.
bool HasChildren();

// The perf ring buffers this process has mapped (the perf_event lines of /proc/self/maps);
// -1 when maps cannot be read.
int CountPerfMappings();

// The perf events this process holds open (fds whose link is anon_inode:[perf_event]);
// -1 when /proc/self/fd cannot be read.
int CountPerfEventFds();
// Their descriptors, sorted; empty also when /proc/self/fd cannot be read.
std::vector<int> PerfEventFds();

// What a component may leave in a directory: a fresh one under the test's temporary
// directory ("<TEST_TMPDIR>/<name>-XXXXXX"), and how many entries one holds (-1: cannot
// be read).
std::string MakeTestDir(const std::string& name);
int CountDirEntries(const std::string& dir);

}  // namespace testing
}  // namespace perfscale

#endif  // PERFSCALE_TESTING_COMMON_PROCESS_STATE_H_
