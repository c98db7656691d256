#include "lib/interrupt_cleanup.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace perfscale {
namespace {

constexpr int kMaxChildren = 4096;
constexpr int kMaxPaths = 256;
constexpr size_t kMaxPathLength = 4096;

std::atomic<pid_t> children[kMaxChildren];

struct PathSlot {
  std::atomic<bool> used{false};
  std::atomic<bool> ready{false};
  char path[kMaxPathLength];
};
PathSlot paths[kMaxPaths];

void Write(const char* text) {
  ssize_t ignored = write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

void CleanUp() {
  for (std::atomic<pid_t>& slot : children) {
    pid_t pid = slot.exchange(0);
    if (pid <= 0) continue;
    kill(pid, SIGKILL);
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  // Files first, then directories, whatever order they were registered in.
  for (PathSlot& slot : paths) {
    if (slot.ready.load()) unlink(slot.path);
  }
  for (PathSlot& slot : paths) {
    if (slot.ready.exchange(false)) {
      rmdir(slot.path);
      slot.used.store(false);
    }
  }
}

void OnSignal(int signal_number) {
  Write("\nperfscale: interrupted; reaping children and removing temporary files\n");
  CleanUp();
  _exit(128 + signal_number);
}

}  // namespace

void InstallInterruptCleanup() {
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  // Block the others while one runs, so the cleanup runs once.
  sigaddset(&action.sa_mask, SIGINT);
  sigaddset(&action.sa_mask, SIGTERM);
  sigaddset(&action.sa_mask, SIGHUP);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGHUP, &action, nullptr);
}

bool RegisterChild(pid_t pid) {
  for (std::atomic<pid_t>& slot : children) {
    pid_t empty = 0;
    if (slot.compare_exchange_strong(empty, pid)) return true;
  }
  return false;
}

void UnregisterChild(pid_t pid) {
  for (std::atomic<pid_t>& slot : children) {
    pid_t expected = pid;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

bool RegisterTempPath(const std::string& path) {
  if (path.size() >= kMaxPathLength) return false;
  for (PathSlot& slot : paths) {
    bool expected = false;
    if (!slot.used.compare_exchange_strong(expected, true)) continue;
    std::memcpy(slot.path, path.c_str(), path.size() + 1);
    slot.ready.store(true);
    return true;
  }
  return false;
}

void UnregisterTempPath(const std::string& path) {
  for (PathSlot& slot : paths) {
    if (slot.ready.load() && path == slot.path) {
      slot.ready.store(false);
      slot.used.store(false);
      return;
    }
  }
}

void RunInterruptCleanupForTest() { CleanUp(); }

}  // namespace perfscale
