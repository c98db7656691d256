// A forked child process that cannot outlive its owner: the one way perfscale's
// workloads (the ping-pong peer, the synthesis tree) start processes.
//
// Start forks with the raw clone system call (no atfork handlers, nothing a sanitizer
// runtime adds to a child), and before it runs `main` the child
//   - asks the kernel to SIGKILL it when the thread that started it dies
//     (PR_SET_PDEATHSIG), and exits at once if the parent died before that took effect;
//   - closes every fd but 0, 1, 2 and the ones it is told to keep (a copy of a pipe end
//     someone waits to see closed, or of a perf event, would outlive the owner's);
//   - optionally puts /dev/null on 0, 1 and 2.
// While the child is alive it is registered with lib/interrupt_cleanup.h, so SIGINT or
// SIGTERM kills and reaps it; the destructor kills and reaps it otherwise. Start and
// destroy it on the same thread (PR_SET_PDEATHSIG follows the thread).
//
// The child may have been forked from a process with threads whose locks it copied
// held: `main` runs only raw system calls (syscall(2)) and is marked
// PERFSCALE_CHILD_CODE; it must not allocate. Its return value is the exit status.
//
// Example:
//   PERFSCALE_CHILD_CODE int Echo(void* arg) { ... syscall(SYS_read, ...) ... return 0; }
//   absl::StatusOr<perfscale::ChildProcess> child =
//       perfscale::ChildProcess::Start("echo", &Echo, &args, {in_fd, out_fd});
//   ...
//   absl::StatusOr<perfscale::ChildExit> exit = child->WaitWithin(std::chrono::seconds(5));
#ifndef PERFSCALE_LIB_CHILD_PROCESS_H_
#define PERFSCALE_LIB_CHILD_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <initializer_list>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

// Code that runs in a child after fork (and in any bare clone threads it makes): no
// sanitizer instrumentation, which assumes a runtime the child does not have.
#define PERFSCALE_CHILD_CODE \
  __attribute__((no_sanitize("address"), no_sanitize("thread"), no_sanitize("undefined")))

namespace perfscale {

// Exit statuses of a child that never reached its `main`.
inline constexpr int kChildOrphaned = 120;     // the parent died before PR_SET_PDEATHSIG
inline constexpr int kChildSetupFailed = 121;  // prctl(PR_SET_PDEATHSIG) failed

struct ChildExit {
  int status = 0;       // as waitpid(2) reports it
  bool killed = false;  // WaitWithin's grace ran out and it was killed
};

// "exited with status 3" / "killed by signal 9", naming the statuses above.
std::string DescribeWaitStatus(int status);

class ChildProcess {
 public:
  using Main = int (*)(void* arg);
  enum class Stdio { kInherit, kDevNull };

  // At most this many fds may be kept.
  static constexpr int kMaxKeptFds = 4;

  // `what` names the child in errors: "fork (<what>): ...".
  static absl::StatusOr<ChildProcess> Start(absl::string_view what, Main main, void* arg,
                                            std::initializer_list<int> keep_fds = {},
                                            Stdio stdio = Stdio::kInherit);

  ChildProcess() = default;
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // Kills and reaps a child not reaped yet.
  ~ChildProcess();

  // The pid; -1 once reaped (or for a default-constructed one).
  pid_t pid() const { return pid_; }

  // SIGKILL, without waiting (Wait reaps): killing many and then reaping them lets them
  // die in parallel.
  void Kill();
  // Blocks until the child ends and reaps it; returns its wait status.
  absl::StatusOr<int> Wait();
  // Reaps the child if it has ended and returns its wait status; nullopt while it runs.
  std::optional<int> TryWait();
  // Waits up to `grace` for the child to end by itself, then kills it; reaps it.
  absl::StatusOr<ChildExit> WaitWithin(std::chrono::milliseconds grace);

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  void Reaped();

  pid_t pid_ = -1;
};

}  // namespace perfscale

#endif  // PERFSCALE_LIB_CHILD_PROCESS_H_
