#include "benchmarks/synthesize/process_tree.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>

#include "absl/functional/function_ref.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "lib/child_process.h"
#include "lib/errno_status.h"
#include "lib/file_reader.h"

// Children and their bare clone threads, which share the child's TLS, run
// PERFSCALE_CHILD_CODE (lib/child_process.h): only syscall() and glibc's __clone, which no
// sanitizer intercepts (TSan's `clone` interceptor treats every clone as a fork, and its
// fork interceptor starts a thread in the child).

// glibc's clone, under the name sanitizers leave alone.
extern "C" int __clone(int (*fn)(void*), void* stack, int flags, void* arg, ...);

namespace perfscale {
namespace {

constexpr size_t kThreadStack = 64 * 1024;
constexpr int kReadyTimeoutSeconds = 60;

// Which step a child was at when it failed.
enum Stage : int32_t {
  kStageNone = 0,
  kStageName,
  kStageMemfd,
  kStageReserve,
  kStageMap,
  kStageStacks,
  kStageClone,
};

const char* StageName(int32_t stage) {
  switch (stage) {
    case kStageName:
      return "prctl(PR_SET_NAME)";
    case kStageMemfd:
      return "memfd_create/ftruncate";
    case kStageReserve:
      return "mmap (address range for the mappings)";
    case kStageMap:
      return "mmap (a mapping)";
    case kStageStacks:
      return "mmap (thread stacks)";
    case kStageClone:
      return "clone (a thread)";
    default:
      return "setup";
  }
}

// What a child writes to the parent once: 16 bytes, well under PIPE_BUF, so reports
// from many children never interleave.
struct Report {
  int32_t index;
  int32_t pid;
  int32_t err;
  int32_t stage;
};

// A child's own state; each child has its private copy after fork.
struct ChildState {
  int process;
  int ready;  // threads that have named themselves; a futex word
};
ChildState child_state;

// Appends `value`'s digits at out[*n], never past 15 characters.
PERFSCALE_CHILD_CODE void PutDecimal(int value, char out[16], int* n) {
  char digits[12];
  int d = 0;
  do {
    digits[d++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value > 0 && d < 12);
  while (d > 0 && *n < 15) out[(*n)++] = digits[--d];
}

PERFSCALE_CHILD_CODE void FormatTaskName(int process, int thread, char out[16]) {
  const char prefix[] = "psyn";
  int n = 0;
  for (const char* p = prefix; *p != '\0'; ++p) out[n++] = *p;
  PutDecimal(process, out, &n);
  if (thread > 0 && n < 15) {
    out[n++] = '.';
    PutDecimal(thread, out, &n);
  }
  out[n] = '\0';
}

PERFSCALE_CHILD_CODE void SleepForever() {
  int never = 0;
  for (;;) syscall(SYS_futex, &never, FUTEX_WAIT, 0, nullptr, nullptr, 0);
}

PERFSCALE_CHILD_CODE void* MapRaw(void* at, size_t length, int prot, int flags, long fd,
                                  long offset) {
  long result = syscall(SYS_mmap, at, length, prot, flags, fd, offset);
  return result < 0 ? MAP_FAILED : reinterpret_cast<void*>(result);
}

PERFSCALE_CHILD_CODE int ThreadMain(void* arg) {
  char name[16];
  FormatTaskName(child_state.process, static_cast<int>(reinterpret_cast<intptr_t>(arg)), name);
  syscall(SYS_prctl, PR_SET_NAME, name, 0, 0, 0);
  __atomic_fetch_add(&child_state.ready, 1, __ATOMIC_SEQ_CST);
  syscall(SYS_futex, &child_state.ready, FUTEX_WAKE, 1, nullptr, nullptr, 0);
  SleepForever();
  return 0;
}

[[noreturn]] PERFSCALE_CHILD_CODE void ChildFail(Report& report, int write_fd, int32_t stage) {
  report.err = errno;
  report.stage = stage;
  syscall(SYS_write, write_fd, &report, sizeof(report));
  syscall(SYS_exit_group, 1);
  __builtin_unreachable();
}

// What every child is given, prepared before the forks.
struct ChildArgs {
  int index;
  const ProcessTreeSpec* spec;
  long page;
  int write_fd;
};

// A child of the tree: ChildProcess has already tied its life to ours and left it only
// the report pipe, with /dev/null as stdin, stdout and stderr.
PERFSCALE_CHILD_CODE int RunChild(void* arg) {
  const ChildArgs& args = *static_cast<const ChildArgs*>(arg);
  const int index = args.index, write_fd = args.write_fd;
  const ProcessTreeSpec& spec = *args.spec;
  const long page = args.page;
  Report report{index, static_cast<int32_t>(syscall(SYS_getpid)), 0, kStageNone};
  // A parent that dies before it reads the report has closed the pipe: the write then
  // fails with EPIPE rather than killing the child with SIGPIPE, and PR_SET_PDEATHSIG's
  // SIGKILL ends it as it ends every orphan of the tree.
  const uint64_t sigpipe = uint64_t{1} << (SIGPIPE - 1);
  syscall(SYS_rt_sigprocmask, SIG_BLOCK, &sigpipe, nullptr, sizeof(sigpipe));
  child_state.process = index;
  child_state.ready = 0;
  char name[16];
  FormatTaskName(index, 0, name);
  if (syscall(SYS_prctl, PR_SET_NAME, name, 0, 0, 0) != 0) ChildFail(report, write_fd, kStageName);

  const long mappings = spec.exec_mappings + spec.data_mappings;
  if (mappings > 0) {
    long memfd = syscall(SYS_memfd_create, ProcessTree::kMemfdName, MFD_CLOEXEC);
    if (memfd < 0 || syscall(SYS_ftruncate, memfd, mappings * page) != 0)
      ChildFail(report, write_fd, kStageMemfd);
    // Each mapping is followed by an inaccessible page, so that no two merge into one
    // VMA; the inaccessible pages are neither executable nor readable, so perf skips
    // them.
    void* base = MapRaw(nullptr, static_cast<size_t>(2 * mappings * page), PROT_NONE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) ChildFail(report, write_fd, kStageReserve);
    for (long k = 0; k < mappings; ++k) {
      int prot = k < spec.exec_mappings ? PROT_READ | PROT_EXEC : PROT_READ | PROT_WRITE;
      void* at = static_cast<char*>(base) + 2 * k * page;
      if (MapRaw(at, static_cast<size_t>(page), prot, MAP_PRIVATE | MAP_FIXED, memfd, k * page) ==
          MAP_FAILED) {
        ChildFail(report, write_fd, kStageMap);
      }
    }
    syscall(SYS_close, memfd);
  }

  const int extra = spec.threads - 1;
  if (extra > 0) {
    char* stacks = static_cast<char*>(
        MapRaw(nullptr, static_cast<size_t>(extra) * kThreadStack, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0));
    if (stacks == MAP_FAILED) ChildFail(report, write_fd, kStageStacks);
    const int flags =
        CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM;
    for (int t = 1; t <= extra; ++t) {
      char* top = stacks + static_cast<size_t>(t) * kThreadStack;
      if (__clone(&ThreadMain, top, flags, reinterpret_cast<void*>(static_cast<intptr_t>(t))) < 0) {
        ChildFail(report, write_fd, kStageClone);
      }
    }
    for (;;) {
      int ready = __atomic_load_n(&child_state.ready, __ATOMIC_SEQ_CST);
      if (ready >= extra) break;
      syscall(SYS_futex, &child_state.ready, FUTEX_WAIT, ready, nullptr, nullptr, 0);
    }
  }
  syscall(SYS_write, write_fd, &report, sizeof(report));
  syscall(SYS_close, write_fd);
  SleepForever();
  return 0;
}

// Waits until `fd` is readable or `deadline` passes (then DeadlineExceeded with
// `timeout_message`).
absl::Status WaitReadable(int fd, std::chrono::steady_clock::time_point deadline,
                          absl::FunctionRef<std::string()> timeout_message) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd poll_fd{fd, POLLIN, 0};
    int polled = left.count() > 0 ? poll(&poll_fd, 1, static_cast<int>(left.count())) : 0;
    if (polled > 0) return absl::OkStatus();
    if (polled < 0 && errno == EINTR) continue;
    if (polled < 0) return ErrnoStatus(errno, "poll (child reports)");
    return absl::DeadlineExceededError(timeout_message());
  }
}

}  // namespace

absl::Status ProcessTree::Validate(const ProcessTreeSpec& spec) {
  if (spec.processes < 1 || spec.processes > kMaxTreeProcesses) {
    return absl::InvalidArgumentError(absl::StrCat(
        "processes: ", spec.processes, " is out of range [1, ", kMaxTreeProcesses, "]"));
  }
  if (spec.threads < 1 || spec.threads > kMaxTreeThreads) {
    return absl::InvalidArgumentError(
        absl::StrCat("threads: ", spec.threads, " is out of range [1, ", kMaxTreeThreads, "]"));
  }
  for (int count : {spec.exec_mappings, spec.data_mappings}) {
    if (count < 0 || count > kMaxTreeMappings) {
      return absl::InvalidArgumentError(
          absl::StrCat("mappings: ", count, " is out of range [0, ", kMaxTreeMappings, "]"));
    }
  }
  // Each mapping costs two VMAs (it and its guard page); leave room for what the child
  // inherits.
  absl::StatusOr<std::string> text = ReadTextFile("/proc/sys/vm/max_map_count");
  int64_t limit = 0;
  if (text.ok() && absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &limit)) {
    int64_t needed = 2 * (int64_t{spec.exec_mappings} + spec.data_mappings) + 4096;
    if (needed > limit) {
      return absl::InvalidArgumentError(absl::StrCat(
          "mappings: ", spec.exec_mappings + spec.data_mappings,
          " mappings per process need about ", needed, " VMAs but vm.max_map_count is ", limit));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ProcessTree>> ProcessTree::Start(const ProcessTreeSpec& spec) {
  if (absl::Status valid = Validate(spec); !valid.ok()) return valid;
  const long page = sysconf(_SC_PAGESIZE);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return ErrnoStatus(errno, "pipe2 (child reports)");
  std::unique_ptr<ProcessTree> tree(new ProcessTree(spec));
  tree->pids_.reserve(static_cast<size_t>(spec.processes));
  tree->children_.reserve(static_cast<size_t>(spec.processes));
  auto fail = [&](absl::Status status) {
    if (fds[0] >= 0) close(fds[0]);
    if (fds[1] >= 0) close(fds[1]);
    tree->Stop();
    return status;
  };
  ChildArgs args{0, &tree->spec_, page, fds[1]};
  for (int i = 0; i < spec.processes; ++i) {
    args.index = i;
    absl::StatusOr<ChildProcess> child =
        ChildProcess::Start(absl::StrCat("process ", i + 1, " of ", spec.processes), &RunChild,
                            &args, {fds[1]}, ChildProcess::Stdio::kDevNull);
    if (!child.ok()) return fail(child.status());
    tree->pids_.push_back(child->pid());
    tree->children_.push_back(*std::move(child));
  }
  close(fds[1]);
  fds[1] = -1;

  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(kReadyTimeoutSeconds);
  for (int ready = 0; ready < spec.processes;) {
    absl::Status readable = WaitReadable(fds[0], deadline, [&] {
      return absl::StrCat(ready, " of ", spec.processes, " child processes were ready after ",
                          kReadyTimeoutSeconds, " s");
    });
    if (!readable.ok()) return fail(readable);
    Report report;
    ssize_t n = read(fds[0], &report, sizeof(report));
    if (n < 0 && errno == EINTR) continue;
    if (n == static_cast<ssize_t>(sizeof(report))) {
      if (report.err != 0 || report.stage != kStageNone) {
        return fail(ErrnoStatus(report.err, absl::StrCat("child process ", report.index, ": ",
                                                         StageName(report.stage))));
      }
      ++ready;
      continue;
    }
    // EOF (or a torn read, which cannot happen): a child died without a word.
    std::string why = "exited before it was ready";
    for (ChildProcess& child : tree->children_) {
      pid_t pid = child.pid();
      if (std::optional<int> status = child.TryWait()) {
        why = absl::StrCat("pid ", pid, " ", DescribeWaitStatus(*status), " before it was ready");
        break;
      }
    }
    return fail(absl::InternalError(absl::StrCat("a child process ", why)));
  }
  // Every child closes its end right after its report: wait for the end of file too, so
  // that no caller ever sees a child still holding a descriptor of ours.
  for (;;) {
    absl::Status readable = WaitReadable(
        fds[0], deadline, [] { return "child processes did not close their report pipe"; });
    if (!readable.ok()) return fail(readable);
    char extra;
    ssize_t n = read(fds[0], &extra, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) break;
    if (n < 0) return fail(ErrnoStatus(errno, "read (child reports)"));
    return fail(absl::InternalError("a child process wrote more than its report"));
  }
  close(fds[0]);
  return tree;
}

ProcessTree::~ProcessTree() { Stop(); }

void ProcessTree::Stop() {
  // All killed first, then reaped: they die in parallel.
  for (ChildProcess& child : children_) child.Kill();
  for (ChildProcess& child : children_) {
    if (child.pid() > 0) child.Wait().IgnoreError();
  }
  children_.clear();
  pids_.clear();
}

bool ProcessTree::Intact() {
  bool intact = !children_.empty();
  for (ChildProcess& child : children_) {
    if (child.pid() <= 0 || child.TryWait().has_value()) intact = false;  // each one reaped
  }
  return intact;
}

std::string ProcessTree::TaskName(int process, int thread) {
  char name[16];
  FormatTaskName(process, thread, name);
  return name;
}

}  // namespace perfscale
