#include "lib/tracepoint_keep_alive.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <utility>

#include "lib/errno_status.h"
#include "lib/perf_attr.h"
#include "lib/tracefs.h"

namespace perfscale {

namespace {

constexpr size_t kKeeperStackBytes = 64 * 1024;

// The keeper's whole life, on a stack of its own in the caller's memory: wait for the
// caller to close the pipe's other end (or die), then exit. Raw syscalls only: it shares
// the caller's memory (and so its libc state) but not its file table.
__attribute__((no_sanitize("address", "thread", "undefined"))) int KeeperMain(void* arg) {
  const int read_fd = static_cast<int>(reinterpret_cast<intptr_t>(arg));
  syscall(SYS_prctl, PR_SET_NAME, TracepointKeepAlive::kProcessName, 0ul, 0ul, 0ul);
  // Its copy of the caller's file table: keep only the pipe's read end, so it holds no
  // file open for the caller (and the pipe sees EOF when the caller closes its end).
  if (read_fd > 0) syscall(SYS_close_range, 0u, static_cast<unsigned>(read_fd - 1), 0u);
  syscall(SYS_close_range, static_cast<unsigned>(read_fd + 1), ~0u, 0u);
  char byte;
  syscall(SYS_read, read_fd, &byte, 1);  // returns at EOF; every signal is blocked
  return 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TracepointKeepAlive>> TracepointKeepAlive::Open(
    const std::vector<std::string>& tracepoints) {
  std::unique_ptr<TracepointKeepAlive> kept(new TracepointKeepAlive());
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return ErrnoStatus(errno, "pipe for the tracepoint keep-alive");
  }
  void* stack = mmap(nullptr, kKeeperStackBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) {
    int err = errno;
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return ErrnoStatus(err, "stack for the tracepoint keep-alive");
  }
  kept->stack_ = stack;
  // A process of its own, not a thread: a second thread would share the file table, and
  // every fd syscall of the timed tasks would then take and drop a file reference
  // (fdget's single-threaded shortcut lost: +2% on a breakpoint toggle on the
  // instruction clock, docs/measurements/2026-12-02-counting-pass.md). CLONE_VM: no
  // copy-on-write of the caller's pages. It takes no signal (the mask is inherited at
  // creation and restored here), so only the pipe ends its wait.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  pid_t pid = clone(KeeperMain, static_cast<char*>(stack) + kKeeperStackBytes, CLONE_VM | SIGCHLD,
                    reinterpret_cast<void*>(static_cast<intptr_t>(pipe_fds[0])));
  int clone_errno = errno;
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  close(pipe_fds[0]);
  if (pid < 0) {
    close(pipe_fds[1]);
    return ErrnoStatus(clone_errno, "clone the tracepoint keep-alive");
  }
  kept->pid_ = pid;
  kept->wake_fd_ = pipe_fds[1];
  for (const std::string& name : tracepoints) {
    absl::StatusOr<uint64_t> id = TracepointId(name);
    if (!id.ok()) continue;
    perf_event_attr attr = TracepointAttr(*id);
    attr.inherit = 0;
    attr.exclude_kernel = 0;
    attr.exclude_hv = 1;
    absl::StatusOr<PerfEvent> event = PerfEvent::Open(attr, kept->pid_, -1);
    if (!event.ok()) continue;
    kept->events_.push_back(*std::move(event));
    kept->held_.push_back(name);
  }
  return kept;
}

TracepointKeepAlive::~TracepointKeepAlive() {
  events_.clear();  // the last close unregisters (and waits for the grace period)
  if (wake_fd_ >= 0) close(wake_fd_);  // EOF: the keeper exits
  if (pid_ > 0) {
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  if (stack_ != nullptr) munmap(stack_, kKeeperStackBytes);
}

std::vector<int> TracepointKeepAlive::fds() const {
  std::vector<int> fds;
  for (const PerfEvent& event : events_) fds.push_back(event.fd());
  return fds;
}

absl::StatusOr<std::vector<uint64_t>> TracepointKeepAlive::Counts() const {
  std::vector<uint64_t> counts;
  for (const PerfEvent& event : events_) {
    uint64_t value = 0;
    ssize_t n = read(event.fd(), &value, sizeof(value));
    if (n < 0) return ErrnoStatus(errno, "read a kept tracepoint event");
    if (n != sizeof(value)) return absl::InternalError("kept tracepoint event read was short");
    counts.push_back(value);
  }
  return counts;
}

}  // namespace perfscale
