// The BPF recorder against the kernel: it counts every event of a workload whose events
// are known exactly (N getppid calls; N contentions of one pipe's mutex, made with a
// userfaultfd stall), leaves no BPF program, map or fd behind, and says why when it
// cannot load (no privilege). As root it must run; elsewhere the kernel tests skip with
// the reason.
#include "benchmarks/trace_overhead/bpf_recorder.h"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "lib/file_reader.h"
#include "testing/common/process_state.h"

namespace perfscale {
namespace {

// Opens the recorder or says why the test cannot run here.
std::unique_ptr<BpfRecorder> OpenOrSkipReason(const BpfRecorderOptions& options,
                                              std::string* skip) {
  absl::StatusOr<std::unique_ptr<BpfRecorder>> recorder = BpfRecorder::Open(options);
  if (recorder.ok()) return *std::move(recorder);
  if (geteuid() == 0 && !absl::IsFailedPrecondition(recorder.status())) {
    ADD_FAILURE() << "root could not load the BPF recorder: " << recorder.status();
  }
  *skip = std::string(recorder.status().message());
  return nullptr;
}

TEST(BpfStatsTest, QuantilesAreBucketUpperBounds) {
  BpfStats stats;
  EXPECT_EQ(stats.QuantileNs(0.5), 0u);
  stats.buckets[3] = 9;   // [8, 16) ns
  stats.buckets[10] = 1;  // [1024, 2048) ns
  EXPECT_EQ(stats.QuantileNs(0.5), 16u);
  EXPECT_EQ(stats.QuantileNs(0.9), 16u);
  EXPECT_EQ(stats.QuantileNs(0.99), 2048u);
}

TEST(VerifierRefusalTest, NamesTheProgramAndTheVerifiersLastWords) {
  // As libbpf 1.1 prints a refused load (abridged).
  EXPECT_EQ(VerifierRefusal("libbpf: prog 'on_sched_switch': -- BEGIN PROG LOAD LOG --\n"
                            "0: R1=ctx(off=0,imm=0) R10=fp0\n"
                            "; int BPF_PROG(on_sched_switch, bool preempt)\n"
                            "invalid bpf_context access off=24 size=8\n"
                            "processed 12 insns (limit 1000000) max_states_per_insn 0\n"
                            "-- END PROG LOAD LOG --\n"),
            "the verifier refused program 'on_sched_switch': invalid bpf_context access "
            "off=24 size=8");
  EXPECT_EQ(VerifierRefusal("libbpf: prog 'x': -- BEGIN PROG LOAD LOG --\n-- END PROG LOAD LOG --"),
            "the verifier refused program 'x': (an empty log)");
  EXPECT_EQ(VerifierRefusal("libbpf: failed to load BPF skeleton 'perfscale_bpf_recorder': -13"),
            "");
  EXPECT_EQ(VerifierRefusal(""), "");
}

TEST(NeedTracepointTest, NamesWhatTheKernelLacksAndSinceWhen) {
  if (!BpfRecorderAvailable().ok()) GTEST_SKIP() << BpfRecorderAvailable().message();
  // This kernel's sched_switch has prev_state (Linux 5.18), so 4 arguments are there.
  EXPECT_TRUE(NeedTracepoint("sched_switch", 4, "prev_state", "5.18").ok());
  absl::Status more = NeedTracepoint("sched_switch", 9, "a ninth argument", "9.9");
  EXPECT_TRUE(absl::IsFailedPrecondition(more)) << more;
  EXPECT_TRUE(absl::StrContains(more.message(), "needs a ninth argument (Linux 9.9 and later)"))
      << more;
  EXPECT_TRUE(absl::StrContains(more.message(), "passes sched_switch 4 arguments")) << more;
  absl::Status none = NeedTracepoint("perfscale_no_such_tracepoint", 1, "it", "9.9");
  EXPECT_TRUE(absl::IsFailedPrecondition(none)) << none;
  EXPECT_TRUE(absl::StrContains(none.message(), "has no tracepoint perfscale_no_such_tracepoint"))
      << none;
}

TEST(BpfRecorderTest, UnknownSetIsRejected) {
  BpfRecorderOptions options;
  options.set = "custom";
  absl::StatusOr<std::unique_ptr<BpfRecorder>> recorder = BpfRecorder::Open(options);
  ASSERT_FALSE(recorder.ok());
  if (!absl::IsInvalidArgument(recorder.status())) GTEST_SKIP() << recorder.status();
  EXPECT_NE(recorder.status().message().find("custom"), std::string::npos);
}

TEST(BpfRecorderTest, CountsEverySyscallOfThisProcessExactly) {
  BpfRecorderOptions options;
  options.set = "syscalls";
  options.task_scope = true;
  std::string skip;
  std::unique_ptr<BpfRecorder> recorder = OpenOrSkipReason(options, &skip);
  if (recorder == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(recorder->Enable().ok());
  constexpr int kCalls = 1000;
  for (int i = 0; i < kCalls; ++i) syscall(SYS_getppid);
  absl::StatusOr<BpfStats> stats = recorder->Stop();
  ASSERT_TRUE(stats.ok()) << stats.status();
  uint64_t getppid = 0;
  for (const BpfKeyStats& key : stats->keys) {
    if (key.object == SYS_getppid) getppid += key.count;
  }
  EXPECT_EQ(getppid, static_cast<uint64_t>(kCalls));
  EXPECT_EQ(stats->dropped, 0u);
  EXPECT_GE(stats->pairs, static_cast<uint64_t>(kCalls));
  EXPECT_GE(stats->events, 2u * kCalls);
  EXPECT_GT(stats->map_bytes, 0u);
}

TEST(BpfRecorderTest, SchedSetSeesThisProcessSwitchAndWake) {
  BpfRecorderOptions options;
  options.set = "sched";
  std::string skip;
  std::unique_ptr<BpfRecorder> recorder = OpenOrSkipReason(options, &skip);
  if (recorder == nullptr) GTEST_SKIP() << skip;
  ASSERT_TRUE(recorder->Enable().ok());
  // A short sleep whose timer fires before schedule() returns without a switch, so the
  // kernel's own count of this thread's switches is the truth to hold the recorder to.
  struct rusage before, after;
  ASSERT_EQ(getrusage(RUSAGE_THREAD, &before), 0);
  for (int i = 0; i < 20; ++i) usleep(100);
  ASSERT_EQ(getrusage(RUSAGE_THREAD, &after), 0);
  absl::StatusOr<BpfStats> stats = recorder->Stop();
  ASSERT_TRUE(stats.ok()) << stats.status();
  uint64_t mine = 0;
  for (const BpfKeyStats& key : stats->keys) {
    if (key.object == static_cast<uint64_t>(getpid())) mine += key.count;
  }
  const uint64_t switched =
      (after.ru_nvcsw - before.ru_nvcsw) + (after.ru_nivcsw - before.ru_nivcsw);
  ASSERT_GT(switched, 0u) << "20 sleeps of 100 us and not one context switch";
  EXPECT_GE(mine, switched);
  EXPECT_GT(stats->wakeups, 0u);
}

char TaskState(pid_t tid) {
  absl::StatusOr<std::string> stat = ReadTextFile(absl::StrCat("/proc/self/task/", tid, "/stat"));
  if (!stat.ok()) return '?';
  size_t paren = stat->rfind(')');
  return paren == std::string::npos || paren + 2 >= stat->size() ? '?' : (*stat)[paren + 2];
}

// N contentions of one pipe's mutex, each exactly one: thread A writes to the pipe from a
// page that userfaultfd has not filled, so it stalls in the copy while holding the pipe's
// mutex; thread B then writes to the same pipe and blocks on that mutex (state D); the
// page is filled, A finishes and unlocks, B gets the mutex.
TEST(BpfRecorderTest, SeesEveryContentionOfAControlledWorkload) {
  BpfRecorderOptions options;
  options.set = "lock";
  options.task_scope = true;
  std::string skip;
  std::unique_ptr<BpfRecorder> recorder = OpenOrSkipReason(options, &skip);
  if (recorder == nullptr) GTEST_SKIP() << skip;

  int uffd = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC));
  if (uffd < 0) GTEST_SKIP() << "userfaultfd: " << strerror(errno);
  uffdio_api api{};
  api.api = UFFD_API;
  ASSERT_EQ(ioctl(uffd, UFFDIO_API, &api), 0) << strerror(errno);
  constexpr int kContentions = 20;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  char* pages = static_cast<char*>(
      mmap(nullptr, page * kContentions, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(pages, MAP_FAILED);
  uffdio_register range{};
  range.range.start = reinterpret_cast<uintptr_t>(pages);
  range.range.len = page * kContentions;
  range.mode = UFFDIO_REGISTER_MODE_MISSING;
  ASSERT_EQ(ioctl(uffd, UFFDIO_REGISTER, &range), 0) << strerror(errno);
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);

  ASSERT_TRUE(recorder->Enable().ok());
  for (int i = 0; i < kContentions; ++i) {
    char* source = pages + page * static_cast<size_t>(i);
    std::thread holder([&] { ASSERT_EQ(write(pipe_fds[1], source, 1), 1); });
    pollfd fault{uffd, POLLIN, 0};
    ASSERT_EQ(poll(&fault, 1, 5000), 1) << "the holder never faulted";
    uffd_msg message{};
    ASSERT_EQ(read(uffd, &message, sizeof(message)), static_cast<ssize_t>(sizeof(message)));
    ASSERT_EQ(message.event, UFFD_EVENT_PAGEFAULT);
    std::atomic<pid_t> waiter_tid{0};
    std::thread waiter([&] {
      waiter_tid = static_cast<pid_t>(syscall(SYS_gettid));
      char byte = 'x';
      ASSERT_EQ(write(pipe_fds[1], &byte, 1), 1);
    });
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (waiter_tid == 0 || TaskState(waiter_tid) != 'D') {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the waiter never blocked";
      usleep(100);
    }
    uffdio_zeropage fill{};
    fill.range.start = reinterpret_cast<uintptr_t>(source);
    fill.range.len = page;
    ASSERT_EQ(ioctl(uffd, UFFDIO_ZEROPAGE, &fill), 0) << strerror(errno);
    holder.join();
    waiter.join();
    char drained[2];
    ASSERT_EQ(read(pipe_fds[0], drained, 2), 2);
  }
  absl::StatusOr<BpfStats> stats = recorder->Stop();
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  munmap(pages, page * kContentions);
  close(uffd);
  ASSERT_TRUE(stats.ok()) << stats.status();

  // Per lock: its contentions and where they came from.
  std::map<uint64_t, uint64_t> by_lock;
  std::map<uint64_t, std::string> callers;
  for (const BpfKeyStats& key : stats->keys) {
    by_lock[key.object] += key.count;
    if (!key.caller.empty()) callers[key.object] = key.caller;
  }
  int exact = 0;
  std::string seen;
  for (const auto& [lock, count] : by_lock) {
    absl::StrAppend(&seen, " ", count, "x", callers[lock]);
    // pipe_write, or anon_pipe_write since Linux 6.16.
    if (count == kContentions && absl::EndsWith(callers[lock], "pipe_write")) ++exact;
  }
  EXPECT_EQ(exact, 1) << "locks seen:" << seen;
  EXPECT_EQ(stats->dropped, 0u);
}

bool ProgramExists(uint32_t id) {
  int fd = bpf_prog_get_fd_by_id(id);
  if (fd >= 0) close(fd);
  return fd >= 0 || errno != ENOENT;
}

bool MapExists(uint32_t id) {
  int fd = bpf_map_get_fd_by_id(id);
  if (fd >= 0) close(fd);
  return fd >= 0 || errno != ENOENT;
}

TEST(BpfRecorderTest, LeavesNoProgramMapOrFdBehind) {
  absl::StatusOr<testing::ProcessState> before = testing::CaptureProcessState();
  ASSERT_TRUE(before.ok());
  for (const char* set : {"lock", "sched", "syscalls"}) {
    BpfRecorderOptions options;
    options.set = set;
    options.task_scope = true;
    std::string skip;
    std::unique_ptr<BpfRecorder> recorder = OpenOrSkipReason(options, &skip);
    if (recorder == nullptr) GTEST_SKIP() << skip;
    std::vector<uint32_t> programs = recorder->program_ids();
    std::vector<uint32_t> maps = recorder->map_ids();
    EXPECT_EQ(programs.size(), 3u) << set << ": the set's two and the fork follower";
    ASSERT_TRUE(recorder->Enable().ok());
    ASSERT_TRUE(recorder->Stop().ok());
    // The kernel frees them after an RCU grace period: give it a moment.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    auto any_left = [&] {
      for (uint32_t id : programs) {
        if (id == 0 || ProgramExists(id)) return true;
      }
      for (uint32_t id : maps) {
        if (id == 0 || MapExists(id)) return true;
      }
      return false;
    };
    while (any_left() && std::chrono::steady_clock::now() < deadline) usleep(10000);
    EXPECT_FALSE(any_left()) << set << ": a program or map is still loaded";
  }
  absl::StatusOr<testing::ProcessState> after = testing::CaptureProcessStateSettled(*before);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, *before);
}

// What an unprivileged user sees: a reason, not a crash or a half-loaded object.
TEST(BpfRecorderTest, WithoutPrivilegeSaysWhat) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to drop to uid 65534";
  if (absl::Status available = BpfRecorderAvailable(); !available.ok()) {
    GTEST_SKIP() << available.message();
  }
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) _exit(3);
    BpfRecorderOptions options;
    options.set = "lock";
    absl::StatusOr<std::unique_ptr<BpfRecorder>> recorder = BpfRecorder::Open(options);
    if (recorder.ok()) _exit(4);
    if (!absl::IsPermissionDenied(recorder.status())) _exit(5);
    if (recorder.status().message().find("CAP_BPF") == absl::string_view::npos) _exit(6);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: setresuid failed, 4: loaded without privilege, "
                                       "5: not PermissionDenied, 6: message lacks CAP_BPF";
}

}  // namespace
}  // namespace perfscale
