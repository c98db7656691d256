// Two tasks bouncing a 4-byte token through two pipes, the workload of
// `perf bench sched pipe`: the caller writes the token into one pipe and waits for the
// echo on the other; its peer, a forked process (perf bench's default) or a thread
// (perf bench -T), reads and writes it back. One RoundTrip is two writes, two reads and,
// unless the peer is spinning on another CPU, two wakeups and two context switches:
// a workload made of exactly what scheduler, syscall and lock tracepoints see.
//
// The peer lives as long as the object, so a timed loop measures round trips only (perf
// bench times fork and exit too). Stop (or destruction) closes the caller's end, the
// peer reads EOF and exits, and a process peer is always reaped: killed after a grace
// period if it does not exit, and killed by the kernel (PR_SET_PDEATHSIG) if the
// thread that started it dies first (lib/child_process.h).
//
// Example:
//   absl::StatusOr<std::unique_ptr<perfscale::PipePingPong>> pingpong =
//       perfscale::PipePingPong::Start(perfscale::PipePingPong::Peer::kProcess);
//   for (auto _ : state) if (!(*pingpong)->RoundTrip().ok()) break;
//   absl::Status clean = (*pingpong)->Stop();
#ifndef PERFSCALE_BENCHMARKS_TRACE_OVERHEAD_PIPE_PINGPONG_H_
#define PERFSCALE_BENCHMARKS_TRACE_OVERHEAD_PIPE_PINGPONG_H_

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lib/child_process.h"

namespace perfscale {

class PipePingPong {
 public:
  enum class Peer { kProcess, kThread };

  // `peer_cpus`: where the peer may run; empty: wherever the caller may (it inherits
  // the caller's mask).
  static absl::StatusOr<std::unique_ptr<PipePingPong>> Start(
      Peer peer, const std::vector<int>& peer_cpus = {});

  PipePingPong(const PipePingPong&) = delete;
  PipePingPong& operator=(const PipePingPong&) = delete;
  ~PipePingPong();

  // Sends the token and waits for it to come back. FailedPrecondition once the peer is
  // gone.
  absl::Status RoundTrip();

  // Ends the peer and reaps or joins it; an error says how the peer ended if it did not
  // exit cleanly. Only the first call does work.
  absl::Status Stop();

  // The peer's pid (process) or tid (thread), for tests.
  pid_t peer_id() const { return peer_id_; }

 private:
  PipePingPong() = default;
  static void* ThreadPeer(void* self);
  absl::Status StartProcess(const std::vector<int>& peer_cpus);
  absl::Status StartThread(const std::vector<int>& peer_cpus);
  absl::Status ReapProcess();
  void CloseFds();

  Peer kind_ = Peer::kProcess;
  // to_peer_[1] and from_peer_[0] are the caller's ends. The caller also keeps
  // to_peer_[0] open until Stop: a dead peer then shows up as EOF on the read rather
  // than as a SIGPIPE that would kill the whole benchmark.
  int to_peer_[2] = {-1, -1};
  int from_peer_[2] = {-1, -1};
  pid_t peer_id_ = 0;
  ChildProcess child_;  // the process peer
  pthread_t thread_{};
  bool thread_started_ = false;
  std::atomic<pid_t> thread_tid_{0};
  std::atomic<int> thread_error_{0};  // errno of a failed read/write/affinity in the peer
  int token_ = 0;
  bool stopped_ = false;
};

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_TRACE_OVERHEAD_PIPE_PINGPONG_H_
