#include "benchmarks/trace_overhead/pipe_pingpong.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "lib/cpu_set.h"
#include "lib/errno_status.h"
#include "lib/interrupt_cleanup.h"

namespace perfscale {
namespace {

// How a process peer reports what went wrong: its exit status.
enum PeerExit : int {
  kPeerClean = 0,
  kPeerOrphaned = 10,
  kPeerAffinity = 11,
  kPeerRead = 12,
  kPeerWrite = 13,
};

const char* DescribePeerExit(int code) {
  switch (code) {
    case kPeerOrphaned:
      return "its parent died before it started";
    case kPeerAffinity:
      return "sched_setaffinity failed";
    case kPeerRead:
      return "a pipe read failed";
    case kPeerWrite:
      return "a pipe write failed";
    default:
      return "unexpected exit status";
  }
}

// Closes every fd of a freshly forked child but `keep_a` and `keep_b` (and stdio), so it
// holds no copy of the caller's other pipe ends (which would hide EOF) or perf fds.
// Async-signal-safe: raw syscalls only.
void CloseOtherFds(int keep_a, int keep_b) {
#ifdef SYS_close_range
  int low = std::min(keep_a, keep_b);
  int high = std::max(keep_a, keep_b);
  if (low > 3) syscall(SYS_close_range, 3u, static_cast<unsigned>(low - 1), 0u);
  if (high > low + 1) {
    syscall(SYS_close_range, static_cast<unsigned>(low + 1), static_cast<unsigned>(high - 1), 0u);
  }
  syscall(SYS_close_range, static_cast<unsigned>(high + 1), ~0u, 0u);
#else
  (void)keep_a;
  (void)keep_b;
#endif
}

// The echo loop; returns 0 on EOF, else the errno of what failed (negated for writes,
// so the caller can tell them apart).
int Echo(int in, int out) {
  for (;;) {
    int token;
    ssize_t n = read(in, &token, sizeof(token));
    if (n == 0) return 0;
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof(token))) return n < 0 ? errno : EIO;
    ssize_t w;
    do {
      w = write(out, &token, sizeof(token));
    } while (w < 0 && errno == EINTR);
    if (w != static_cast<ssize_t>(sizeof(token))) return -(w < 0 ? errno : EIO);
  }
}

void CloseFd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PipePingPong>> PipePingPong::Start(
    Peer peer, const std::vector<int>& peer_cpus) {
  std::unique_ptr<PipePingPong> pingpong(new PipePingPong());
  pingpong->kind_ = peer;
  if (pipe2(pingpong->to_peer_, O_CLOEXEC) != 0 || pipe2(pingpong->from_peer_, O_CLOEXEC) != 0) {
    return ErrnoStatus(errno, "pipe2");  // the destructor closes whatever was created
  }
  absl::Status started =
      peer == Peer::kProcess ? pingpong->StartProcess(peer_cpus) : pingpong->StartThread(peer_cpus);
  if (!started.ok()) return started;
  return pingpong;
}

absl::Status PipePingPong::StartProcess(const std::vector<int>& peer_cpus) {
  // Everything the child needs is prepared here: after fork it may not allocate.
  std::optional<CpuMask> mask;
  if (!peer_cpus.empty()) {
    int max_cpu = *std::max_element(peer_cpus.begin(), peer_cpus.end());
    if (max_cpu < 0 || max_cpu > kMaxCpuNumber) {
      return absl::InvalidArgumentError(absl::StrCat("peer CPU ", max_cpu, " out of range"));
    }
    mask.emplace(max_cpu);
    for (int cpu : peer_cpus) mask->Set(cpu);
  }
  const pid_t parent = getpid();
  const int in = to_peer_[0];
  const int out = from_peer_[1];
  pid_t pid = fork();
  if (pid < 0) return ErrnoStatus(errno, "fork (ping-pong peer)");
  if (pid == 0) {
    // Dies with the thread that forked it, so no run can leave it behind; the check
    // after closes the race with a parent that died before the prctl.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(kPeerOrphaned);
    CloseOtherFds(in, out);
    if (mask && sched_setaffinity(0, mask->size_bytes(), mask->raw()) != 0) {
      _exit(kPeerAffinity);
    }
    int result = Echo(in, out);
    _exit(result == 0 ? kPeerClean : result > 0 ? kPeerRead : kPeerWrite);
  }
  child_ = pid;
  peer_id_ = pid;
  // Ctrl-C in the middle of a run kills and reaps it too.
  RegisterChild(pid);
  // The child's ends. to_peer_[0] stays open here on purpose (see the header).
  CloseFd(from_peer_[1]);
  return absl::OkStatus();
}

void* PipePingPong::ThreadPeer(void* self) {
  auto* pingpong = static_cast<PipePingPong*>(self);
  pingpong->thread_tid_.store(static_cast<pid_t>(syscall(SYS_gettid)));
  int result = Echo(pingpong->to_peer_[0], pingpong->from_peer_[1]);
  if (result != 0) pingpong->thread_error_.store(result < 0 ? -result : result);
  // The caller blocked on the echo must see EOF, whatever ended the loop.
  close(pingpong->from_peer_[1]);
  return nullptr;
}

absl::Status PipePingPong::StartThread(const std::vector<int>& peer_cpus) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  std::optional<CpuMask> mask;
  if (!peer_cpus.empty()) {
    int max_cpu = *std::max_element(peer_cpus.begin(), peer_cpus.end());
    if (max_cpu < 0 || max_cpu > kMaxCpuNumber) {
      pthread_attr_destroy(&attr);
      return absl::InvalidArgumentError(absl::StrCat("peer CPU ", max_cpu, " out of range"));
    }
    mask.emplace(max_cpu);
    for (int cpu : peer_cpus) mask->Set(cpu);
    pthread_attr_setaffinity_np(&attr, mask->size_bytes(), mask->raw());
  }
  int err = pthread_create(&thread_, &attr, &PipePingPong::ThreadPeer, this);
  pthread_attr_destroy(&attr);
  if (err != 0) {
    return ErrnoStatus(
        err, mask ? "pthread_create (ping-pong peer, pinned)" : "pthread_create (ping-pong peer)");
  }
  thread_started_ = true;
  // The thread owns from_peer_[1] from now on and closes it when it ends.
  while (thread_tid_.load() == 0) std::this_thread::yield();
  peer_id_ = thread_tid_.load();
  return absl::OkStatus();
}

absl::Status PipePingPong::RoundTrip() {
  if (stopped_) return absl::FailedPreconditionError("ping-pong already stopped");
  const int token = ++token_;
  ssize_t n;
  do {
    n = write(to_peer_[1], &token, sizeof(token));
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof(token))) {
    return n < 0 ? ErrnoStatus(errno, "write to ping-pong peer")
                 : absl::InternalError("short write to ping-pong peer");
  }
  int echo = 0;
  do {
    n = read(from_peer_[0], &echo, sizeof(echo));
  } while (n < 0 && errno == EINTR);
  if (n == 0) {
    return absl::FailedPreconditionError("ping-pong peer is gone (EOF on its pipe)");
  }
  if (n != static_cast<ssize_t>(sizeof(echo))) {
    return n < 0 ? ErrnoStatus(errno, "read from ping-pong peer")
                 : absl::InternalError("short read from ping-pong peer");
  }
  if (echo != token) {
    return absl::InternalError(absl::StrCat("ping-pong peer echoed ", echo, " instead of ", token));
  }
  return absl::OkStatus();
}

absl::Status PipePingPong::ReapProcess() {
  using Clock = std::chrono::steady_clock;
  // EOF normally ends the peer within microseconds; a stuck one is killed.
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  int status = 0;
  bool killed = false;
  for (;;) {
    pid_t got = waitpid(child_, &status, killed ? 0 : WNOHANG);
    if (got == child_) {
      UnregisterChild(child_);
      break;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      UnregisterChild(child_);
      child_ = -1;
      return ErrnoStatus(errno, "waitpid (ping-pong peer)");
    }
    if (!killed && Clock::now() > deadline) {
      kill(child_, SIGKILL);
      killed = true;
      continue;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  child_ = -1;
  if (killed) return absl::DeadlineExceededError("ping-pong peer did not exit on EOF; killed");
  if (WIFSIGNALED(status)) {
    return absl::InternalError(absl::StrCat("ping-pong peer killed by signal ", WTERMSIG(status)));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != kPeerClean) {
    return absl::InternalError(absl::StrCat("ping-pong peer exited with status ",
                                            WEXITSTATUS(status), ": ",
                                            DescribePeerExit(WEXITSTATUS(status))));
  }
  return absl::OkStatus();
}

absl::Status PipePingPong::Stop() {
  if (stopped_) return absl::OkStatus();
  stopped_ = true;
  CloseFd(to_peer_[1]);  // the peer's read returns 0
  absl::Status result;
  if (child_ > 0) {
    result = ReapProcess();
  } else if (thread_started_) {
    pthread_join(thread_, nullptr);
    thread_started_ = false;
    from_peer_[1] = -1;  // closed by the thread
    if (int err = thread_error_.load(); err != 0) {
      result = ErrnoStatus(err, "ping-pong peer thread");
    }
  }
  CloseFds();
  return result;
}

void PipePingPong::CloseFds() {
  CloseFd(to_peer_[0]);
  CloseFd(to_peer_[1]);
  CloseFd(from_peer_[0]);
  CloseFd(from_peer_[1]);
}

PipePingPong::~PipePingPong() {
  Stop().IgnoreError();
  CloseFds();
}

}  // namespace perfscale
