// A workload of child processes whose /proc entries are known in advance: P processes,
// each with T tasks (its main thread included) and E executable plus D data file
// mappings of its own (on top of what it inherits from us), all idle. The synthesis
// benchmark reads their /proc entries, so its record counts are the same on every run
// and machine; tests know exactly which tasks and mappings must appear.
//
// Every child process is a lib/child_process.h ChildProcess: killed and reaped by Stop()
// and the destructor (also on every error path of Start), by the interrupt handler when
// a benchmark is interrupted by SIGINT or SIGTERM, and by the kernel when the thread that
// created it dies (PR_SET_PDEATHSIG), which covers SIGKILL and programs without that
// handler. Create and destroy a tree on the same thread. Children keep none of the
// parent's fds.
//
// Children run only raw system calls after fork (the creating process may have threads,
// and glibc's locks may be held), and their extra threads are bare clone(2) threads
// that name themselves and sleep on a futex.
//
// Example:
//   perfscale::ProcessTreeSpec spec;
//   spec.processes = 100;
//   spec.threads = 10;
//   absl::StatusOr<std::unique_ptr<perfscale::ProcessTree>> tree =
//       perfscale::ProcessTree::Start(spec);
//   for (pid_t pid : (*tree)->pids()) { ... /proc/pid ... }
//   // ~ProcessTree kills and reaps them.
#ifndef PERFSCALE_BENCHMARKS_SYNTHESIZE_PROCESS_TREE_H_
#define PERFSCALE_BENCHMARKS_SYNTHESIZE_PROCESS_TREE_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lib/child_process.h"

namespace perfscale {

struct ProcessTreeSpec {
  int processes = 1;
  int threads = 1;        // tasks per process, the main thread included
  int exec_mappings = 0;  // r-xp mappings of a memfd, one VMA each
  int data_mappings = 0;  // rw-p mappings of the same memfd, one VMA each
};

inline constexpr int kMaxTreeProcesses = 100000;
inline constexpr int kMaxTreeThreads = 10000;
inline constexpr int kMaxTreeMappings = 10000;

class ProcessTree {
 public:
  // InvalidArgument when a count is out of range or the mappings would not fit
  // vm.max_map_count. Does not check thread limits (Capabilities::RequireThreads does).
  static absl::Status Validate(const ProcessTreeSpec& spec);

  // Forks the processes and returns once every one has all its threads and mappings.
  // A child that fails says which step failed and why; all are then reaped.
  static absl::StatusOr<std::unique_ptr<ProcessTree>> Start(const ProcessTreeSpec& spec);

  ProcessTree(const ProcessTree&) = delete;
  ProcessTree& operator=(const ProcessTree&) = delete;
  ~ProcessTree();

  // The processes' pids, in creation order (process i is pids()[i]).
  const std::vector<pid_t>& pids() const { return pids_; }
  const ProcessTreeSpec& spec() const { return spec_; }

  // SIGKILL and reap every process; idempotent.
  void Stop();

  // False once a process of the tree has ended (it is reaped): a tree kept for the next
  // benchmark (synthesize.cc) would no longer give the records it gave before.
  bool Intact();

  // The comm of process `process`'s task `thread` (0: its main thread): "psyn<p>" and
  // "psyn<p>.<t>".
  static std::string TaskName(int process, int thread);
  // The memfd name its mappings show in maps ("/memfd:<name> (deleted)").
  static constexpr const char* kMemfdName = "perfscale-synth";

 private:
  explicit ProcessTree(const ProcessTreeSpec& spec) : spec_(spec) {}
  ProcessTreeSpec spec_;
  std::vector<ChildProcess> children_;  // children_[i] is process i until reaped
  std::vector<pid_t> pids_;
};

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_SYNTHESIZE_PROCESS_TREE_H_
