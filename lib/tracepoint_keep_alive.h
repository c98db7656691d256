// Keeps tracepoints registered with perf for as long as it lives, so that opening and
// closing counters on them (a TaskCounters per counting pass) neither enables their static
// key (text patching, IPIs to every CPU) nor waits for RCU grace periods on the last close
// (tracepoint_synchronize_unregister): 10-45 ms per event, docs/counters-pass.md.
//
// It holds one counting event per tracepoint bound to a process of its own that does
// nothing but wait (pid = that process, cpu = -1, no inherit). perf adds a task-bound
// tracepoint event to a CPU's list only while its task runs (perf_trace_add at sched in),
// so while it waits every CPU's list stays empty and another task's hit takes the early
// return in perf_trace_<event> (include/trace/perf.h): what remains for the tasks being
// timed is the enabled static key and that return, per hit. Not for
// raw_syscalls:sys_enter: registered, it routes every syscall of every thread through
// the syscall tracing path.
//
// Example:
//   absl::StatusOr<std::unique_ptr<TracepointKeepAlive>> kept =
//       TracepointKeepAlive::Open(CountingTracepoints());  // lib/task_counters.h
//   ... open and close TaskCounters as often as needed ...
//   kept->reset();  // closes the events, then ends and reaps the process
#ifndef PERFSCALE_LIB_TRACEPOINT_KEEP_ALIVE_H_
#define PERFSCALE_LIB_TRACEPOINT_KEEP_ALIVE_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lib/perf_event.h"

namespace perfscale {

class TracepointKeepAlive {
 public:
  // The waiting process's name (its comm, in ps and /proc), so that no one takes it for a
  // second copy of the benchmark, and tests can tell it from a workload's processes.
  static constexpr char kProcessName[] = "perfscale-keep";

  // Starts the process and opens what it can: a tracepoint that does not exist or is
  // refused is left out (held() says which are kept). An error only when the process
  // cannot be started.
  static absl::StatusOr<std::unique_ptr<TracepointKeepAlive>> Open(
      const std::vector<std::string>& tracepoints);
  TracepointKeepAlive(const TracepointKeepAlive&) = delete;
  TracepointKeepAlive& operator=(const TracepointKeepAlive&) = delete;
  ~TracepointKeepAlive();

  pid_t pid() const { return pid_; }  // the waiting process's
  const std::vector<std::string>& held() const { return held_; }
  std::vector<int> fds() const;  // the events' file descriptors
  // What the events counted (the waiting process's hits: 0 while it waits), by held().
  absl::StatusOr<std::vector<uint64_t>> Counts() const;

 private:
  TracepointKeepAlive() = default;
  pid_t pid_ = 0;
  int wake_fd_ = -1;  // the pipe end whose close ends the process
  void* stack_ = nullptr;
  std::vector<std::string> held_;
  std::vector<PerfEvent> events_;
};

}  // namespace perfscale

#endif  // PERFSCALE_LIB_TRACEPOINT_KEEP_ALIVE_H_
