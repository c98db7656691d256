#include "lib/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>

#include "absl/strings/str_cat.h"
#include "lib/errno_status.h"
#include "lib/interrupt_cleanup.h"

namespace perfscale {
namespace {

// What the child needs, prepared by the parent: after the fork nothing is allocated.
struct ChildSetup {
  ChildProcess::Main main;
  void* arg;
  int keep[ChildProcess::kMaxKeptFds];  // sorted
  int keep_count;
  bool null_stdio;
  pid_t parent;
};

PERFSCALE_CHILD_CODE bool Kept(const ChildSetup& setup, int fd) {
  for (int i = 0; i < setup.keep_count; ++i) {
    if (setup.keep[i] == fd) return true;
  }
  return false;
}

// Closes every fd from `low` up but the kept ones (sorted).
PERFSCALE_CHILD_CODE void CloseAllBut(const ChildSetup& setup, unsigned low) {
#ifdef SYS_close_range
  for (int i = 0; i < setup.keep_count; ++i) {
    unsigned kept = static_cast<unsigned>(setup.keep[i]);
    if (kept < low) continue;
    if (kept > low) syscall(SYS_close_range, low, kept - 1, 0u);
    low = kept + 1;
  }
  syscall(SYS_close_range, low, ~0u, 0u);
#else
  (void)setup;
  (void)low;
#endif
}

[[noreturn]] PERFSCALE_CHILD_CODE void RunChild(const ChildSetup& setup) {
  if (syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
    syscall(SYS_exit_group, kChildSetupFailed);
  }
  // The parent died before the request took effect: nobody would kill us.
  if (syscall(SYS_getppid) != setup.parent) syscall(SYS_exit_group, kChildOrphaned);
  CloseAllBut(setup, 3);
  if (setup.null_stdio) {
    long null_fd = syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDWR);
    if (null_fd >= 0) {
      for (int fd = 0; fd < 3; ++fd) {
        if (fd != null_fd && !Kept(setup, fd)) syscall(SYS_dup3, null_fd, fd, 0);
      }
      if (null_fd > 2 && !Kept(setup, static_cast<int>(null_fd))) syscall(SYS_close, null_fd);
    }
  }
  syscall(SYS_exit_group, setup.main(setup.arg));
  __builtin_unreachable();
}

}  // namespace

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) {
    std::string text = absl::StrCat("exited with status ", WEXITSTATUS(status));
    if (WEXITSTATUS(status) == kChildOrphaned) {
      absl::StrAppend(&text, " (its parent died before it started)");
    } else if (WEXITSTATUS(status) == kChildSetupFailed) {
      absl::StrAppend(&text, " (prctl(PR_SET_PDEATHSIG) failed)");
    }
    return text;
  }
  if (WIFSIGNALED(status)) return absl::StrCat("killed by signal ", WTERMSIG(status));
  return "stopped";
}

absl::StatusOr<ChildProcess> ChildProcess::Start(absl::string_view what, Main main, void* arg,
                                                 std::initializer_list<int> keep_fds, Stdio stdio) {
  if (keep_fds.size() > static_cast<size_t>(kMaxKeptFds)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a child keeps at most ", kMaxKeptFds, " fds, not ", keep_fds.size()));
  }
  ChildSetup setup{};
  setup.main = main;
  setup.arg = arg;
  std::copy(keep_fds.begin(), keep_fds.end(), setup.keep);
  setup.keep_count = static_cast<int>(keep_fds.size());
  std::sort(setup.keep, setup.keep + setup.keep_count);
  setup.null_stdio = stdio == Stdio::kDevNull;
  setup.parent = getpid();
  // fork(2) itself, not glibc's fork(): no atfork handlers (the child needs none of
  // them: it only makes system calls), nothing a sanitizer runtime adds to a child.
  pid_t pid = static_cast<pid_t>(syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0));
  if (pid == 0) RunChild(setup);
  if (pid < 0) {
    int err = errno;
    return ErrnoStatus(err, absl::StrCat("fork (", what, ")"));
  }
  // Until reaped: an interrupted benchmark's handler kills and reaps it.
  RegisterChild(pid);
  return ChildProcess(pid);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept : pid_(other.pid_) { other.pid_ = -1; }

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0) {
      Kill();
      Wait().IgnoreError();
    }
    pid_ = other.pid_;
    other.pid_ = -1;
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  if (pid_ <= 0) return;
  Kill();
  Wait().IgnoreError();
}

void ChildProcess::Reaped() {
  UnregisterChild(pid_);
  pid_ = -1;
}

void ChildProcess::Kill() {
  if (pid_ > 0) kill(pid_, SIGKILL);
}

absl::StatusOr<int> ChildProcess::Wait() {
  if (pid_ <= 0) return absl::FailedPreconditionError("no child to wait for");
  int status = 0;
  pid_t got;
  do {
    got = waitpid(pid_, &status, 0);
  } while (got < 0 && errno == EINTR);
  int err = errno;
  // Reaped, or not ours to reap any more (the interrupt handler's test hook reaped it).
  Reaped();
  if (got < 0) return ErrnoStatus(err, "waitpid");
  return status;
}

std::optional<int> ChildProcess::TryWait() {
  if (pid_ <= 0) return std::nullopt;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) != pid_) return std::nullopt;
  Reaped();
  return status;
}

absl::StatusOr<ChildExit> ChildProcess::WaitWithin(std::chrono::milliseconds grace) {
  const auto deadline = std::chrono::steady_clock::now() + grace;
  ChildExit ended;
  for (;;) {
    if (pid_ <= 0) return absl::FailedPreconditionError("no child to wait for");
    int status = 0;
    pid_t got = waitpid(pid_, &status, WNOHANG);
    if (got == pid_) {
      Reaped();
      ended.status = status;
      return ended;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      int err = errno;
      Reaped();
      return ErrnoStatus(err, "waitpid");
    }
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  Kill();
  ended.killed = true;
  absl::StatusOr<int> status = Wait();
  if (!status.ok()) return status.status();
  ended.status = *status;
  return ended;
}

}  // namespace perfscale
