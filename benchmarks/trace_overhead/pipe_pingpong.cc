#include "benchmarks/trace_overhead/pipe_pingpong.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "lib/child_process.h"
#include "lib/cpu_set.h"
#include "lib/errno_status.h"

namespace perfscale {
namespace {

// How a process peer reports what went wrong: its exit status.
enum PeerExit : int {
  kPeerClean = 0,
  kPeerAffinity = 11,
  kPeerRead = 12,
  kPeerWrite = 13,
};

// Null for a status the peer does not use.
const char* DescribePeerExit(int code) {
  switch (code) {
    case kPeerAffinity:
      return "sched_setaffinity failed";
    case kPeerRead:
      return "a pipe read failed";
    case kPeerWrite:
      return "a pipe write failed";
    default:
      return nullptr;
  }
}

// The echo loop; returns 0 on EOF, else the errno of what failed (negated for writes,
// so the caller can tell them apart). Raw system calls only: it also runs in the forked
// peer.
PERFSCALE_CHILD_CODE int Echo(int in, int out) {
  for (;;) {
    int token;
    long n = syscall(SYS_read, in, &token, sizeof(token));
    if (n == 0) return 0;
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<long>(sizeof(token))) return n < 0 ? errno : EIO;
    long w;
    do {
      w = syscall(SYS_write, out, &token, sizeof(token));
    } while (w < 0 && errno == EINTR);
    if (w != static_cast<long>(sizeof(token))) return -(w < 0 ? errno : EIO);
  }
}

// What the process peer needs, prepared before the fork.
struct PeerArgs {
  int in;
  int out;
  const void* mask;  // nullptr: not pinned
  size_t mask_bytes;
};

PERFSCALE_CHILD_CODE int ProcessPeer(void* arg) {
  const PeerArgs& args = *static_cast<const PeerArgs*>(arg);
  if (args.mask != nullptr && syscall(SYS_sched_setaffinity, 0, args.mask_bytes, args.mask) != 0) {
    return kPeerAffinity;
  }
  int result = Echo(args.in, args.out);
  return result == 0 ? kPeerClean : result > 0 ? kPeerRead : kPeerWrite;
}

// Where the peer may run; nullopt: wherever the caller may.
absl::StatusOr<std::optional<CpuMask>> PeerMask(const std::vector<int>& peer_cpus) {
  if (peer_cpus.empty()) return std::optional<CpuMask>();
  absl::StatusOr<CpuMask> mask = CpuMask::Of(peer_cpus);
  if (!mask.ok()) return WithMessage(mask.status(), absl::StrCat("peer ", mask.status().message()));
  return std::optional<CpuMask>(*std::move(mask));
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
  absl::StatusOr<std::optional<CpuMask>> mask = PeerMask(peer_cpus);
  if (!mask.ok()) return mask.status();
  PeerArgs args{to_peer_[0], from_peer_[1], *mask ? (*mask)->raw() : nullptr,
                *mask ? (*mask)->size_bytes() : 0};
  absl::StatusOr<ChildProcess> child =
      ChildProcess::Start("ping-pong peer", &ProcessPeer, &args, {args.in, args.out});
  if (!child.ok()) return child.status();
  child_ = *std::move(child);
  peer_id_ = child_.pid();
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
  absl::StatusOr<std::optional<CpuMask>> mask = PeerMask(peer_cpus);
  if (!mask.ok()) return mask.status();
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  if (*mask) pthread_attr_setaffinity_np(&attr, (*mask)->size_bytes(), (*mask)->raw());
  int err = pthread_create(&thread_, &attr, &PipePingPong::ThreadPeer, this);
  pthread_attr_destroy(&attr);
  if (err != 0) {
    return ErrnoStatus(
        err, *mask ? "pthread_create (ping-pong peer, pinned)" : "pthread_create (ping-pong peer)");
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
  // EOF normally ends the peer within microseconds; a stuck one is killed.
  absl::StatusOr<ChildExit> ended = child_.WaitWithin(std::chrono::seconds(5));
  if (!ended.ok()) {
    return WithMessage(ended.status(), absl::StrCat("ping-pong peer: ", ended.status().message()));
  }
  if (ended->killed)
    return absl::DeadlineExceededError("ping-pong peer did not exit on EOF; killed");
  const int status = ended->status;
  if (WIFEXITED(status) && WEXITSTATUS(status) == kPeerClean) return absl::OkStatus();
  if (const char* why = WIFEXITED(status) ? DescribePeerExit(WEXITSTATUS(status)) : nullptr) {
    return absl::InternalError(
        absl::StrCat("ping-pong peer exited with status ", WEXITSTATUS(status), ": ", why));
  }
  return absl::InternalError(absl::StrCat("ping-pong peer ", DescribeWaitStatus(status)));
}

absl::Status PipePingPong::Stop() {
  if (stopped_) return absl::OkStatus();
  stopped_ = true;
  CloseFd(to_peer_[1]);  // the peer's read returns 0
  absl::Status result;
  if (child_.pid() > 0) {
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
