#include "testing/common/process_state.h"

#include <dirent.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "lib/capabilities.h"
#include "lib/cpu_set.h"
#include "lib/errno_status.h"
#include "lib/file_reader.h"
#include "lib/thread_exit.h"

namespace perfscale {
namespace testing {

std::string ProcessState::ToString() const {
  return absl::StrCat("{fds=", open_fds, " threads=", threads,
                      " children=", has_children ? "yes" : "none",
                      " affinity=", FormatCpuList(affinity), " fd_soft_limit=", fd_soft_limit, "}");
}

absl::StatusOr<std::vector<pid_t>> ListTasks() {
  // A thread joined a moment ago is still listed until its exit is done.
  if (absl::Status settled = WaitForExitingThreads(absl::Seconds(5)); !settled.ok()) {
    return settled;
  }
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return ErrnoStatus(errno, "opendir /proc/self/task");
  std::vector<pid_t> tids;
  while (dirent* entry = readdir(dir)) {
    int tid = 0;
    if (absl::SimpleAtoi(entry->d_name, &tid)) tids.push_back(tid);
  }
  closedir(dir);
  std::sort(tids.begin(), tids.end());
  return tids;
}

bool HasChildren() {
  siginfo_t info{};
  // WNOWAIT leaves a zombie in place: this only looks. ECHILD is the one answer that
  // means "no children at all".
  int rc = waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT);
  return !(rc < 0 && errno == ECHILD);
}

#if defined(__SANITIZE_THREAD__)
#define PERFSCALE_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PERFSCALE_UNDER_TSAN 1
#endif
#endif

// ThreadSanitizer starts a background thread of its own the first time the program creates
// a thread. Have it start before the first snapshot, so that every snapshot counts it and
// only the code under test can change the count.
void StartSanitizerThreads() {
#ifdef PERFSCALE_UNDER_TSAN
  static const bool started = [] {
    std::thread([] {}).join();
    return true;
  }();
  (void)started;
#endif
}

int CountPerfMappings() {
  absl::StatusOr<std::string> maps = ReadTextFile("/proc/self/maps");
  if (!maps.ok()) return -1;
  int count = 0;
  for (absl::string_view line : absl::StrSplit(*maps, '\n')) {
    if (absl::StrContains(line, "perf_event")) ++count;
  }
  return count;
}

namespace {

// Calls `each` with every fd of this process that is a perf event; false when
// /proc/self/fd cannot be read.
template <typename Each>
bool ForEachPerfEventFd(Each each) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return false;
  while (dirent* entry = readdir(dir)) {
    char target[64] = {};
    std::string path = absl::StrCat("/proc/self/fd/", entry->d_name);
    ssize_t length = readlink(path.c_str(), target, sizeof(target) - 1);
    if (length > 0 &&
        absl::string_view(target, static_cast<size_t>(length)) == "anon_inode:[perf_event]") {
      each(std::atoi(entry->d_name));
    }
  }
  closedir(dir);
  return true;
}

}  // namespace

int CountPerfEventFds() {
  int count = 0;
  return ForEachPerfEventFd([&count](int) { ++count; }) ? count : -1;
}

std::vector<int> PerfEventFds() {
  std::vector<int> fds;
  ForEachPerfEventFd([&fds](int fd) { fds.push_back(fd); });
  std::sort(fds.begin(), fds.end());
  return fds;
}

std::string MakeTestDir(const std::string& name) {
  std::string tmpl = ::testing::TempDir() + "/" + name + "-XXXXXX";
  return mkdtemp(&tmpl[0]) != nullptr ? tmpl : "";
}

int CountDirEntries(const std::string& dir) {
  DIR* stream = opendir(dir.c_str());
  if (stream == nullptr) return -1;
  int count = 0;
  while (dirent* entry = readdir(stream)) {
    if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0) ++count;
  }
  closedir(stream);
  return count;
}

absl::StatusOr<ProcessState> CaptureProcessState() {
  StartSanitizerThreads();
  ProcessState state;
  absl::StatusOr<int> fds = CountOpenFds();
  if (!fds.ok()) return fds.status();
  state.open_fds = *fds;
  absl::StatusOr<std::vector<pid_t>> tasks = ListTasks();
  if (!tasks.ok()) return tasks.status();
  state.threads = static_cast<int>(tasks->size());
  state.has_children = HasChildren();
  absl::StatusOr<CpuMask> mask = GetAffinity();
  if (!mask.ok()) return mask.status();
  state.affinity = mask->Cpus();
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) != 0) return ErrnoStatus(errno, "getrlimit(RLIMIT_NOFILE)");
  state.fd_soft_limit = files.rlim_cur;
  return state;
}

absl::StatusOr<ProcessState> CaptureProcessStateSettled(const ProcessState& expected,
                                                        int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    absl::StatusOr<ProcessState> state = CaptureProcessState();
    if (!state.ok() || *state == expected || std::chrono::steady_clock::now() >= deadline) {
      return state;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace testing
}  // namespace perfscale
