#include "lib/perf_event.h"

#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "lib/errno_status.h"
#include "lib/file_reader.h"

namespace perfscale {
namespace {

std::string DescribeEvent(const perf_event_attr& attr, pid_t pid, int cpu) {
  const char* type = "event";
  switch (attr.type) {
    case PERF_TYPE_BREAKPOINT:
      type = "hardware breakpoint";
      break;
    case PERF_TYPE_SOFTWARE:
      type = "software event";
      break;
    case PERF_TYPE_TRACEPOINT:
      type = "tracepoint";
      break;
    case PERF_TYPE_HARDWARE:
      type = "hardware event";
      break;
    default:
      break;
  }
  return absl::StrCat("perf_event_open(", type, " config=", attr.config, ", pid=", pid,
                      ", cpu=", cpu, ")");
}

std::string ParanoidLevel() {
  absl::StatusOr<std::string> text = ReadTextFile("/proc/sys/kernel/perf_event_paranoid");
  if (!text.ok()) return "unknown";
  std::string value = *text;
  while (!value.empty() && (value.back() == '\n' || value.back() == ' ')) value.pop_back();
  return value;
}

}  // namespace

absl::Status ExplainPerfEventOpenError(int err, const perf_event_attr& attr, pid_t pid, int cpu) {
  absl::Status base = ErrnoStatus(err, DescribeEvent(attr, pid, cpu));
  std::string hint;
  switch (err) {
    case EACCES:
    case EPERM:
      hint = absl::StrCat(
          "kernel.perf_event_paranoid is ", ParanoidLevel(),
          (pid == -1 || !attr.exclude_kernel)
              ? "; system-wide or kernel events need root or CAP_PERFMON, or "
                "'sysctl kernel.perf_event_paranoid=-1'"
              : "; this kernel refuses per-task user events at that level: they need "
                "perf_event_paranoid <= 2 here ('sysctl kernel.perf_event_paranoid=2'), or "
                "CAP_PERFMON");
      if (attr.type == PERF_TYPE_TRACEPOINT) {
        absl::StrAppend(&hint, "; tracepoints also need read access to tracefs");
      }
      break;
    case ENOENT:
    case ENODEV:
    case EOPNOTSUPP:
      hint = attr.type == PERF_TYPE_BREAKPOINT
                 ? "this machine has no hardware breakpoint support (no 'breakpoint' PMU "
                   "in /sys/bus/event_source/devices)"
                 : "this kernel or PMU does not support the event";
      break;
    case EMFILE: {
      rlimit limit{};
      getrlimit(RLIMIT_NOFILE, &limit);
      hint =
          absl::StrCat("open file limit reached (RLIMIT_NOFILE soft ", limit.rlim_cur, ", hard ",
                       limit.rlim_max, "); raise it with 'ulimit -n' or /etc/security/limits.conf");
      break;
    }
    case ENFILE:
      hint = "the system-wide file table is full (fs.file-max)";
      break;
    case ENOSPC:
      hint = attr.type == PERF_TYPE_BREAKPOINT
                 ? "all hardware breakpoint slots are in use (x86 has 4 per CPU)"
                 : "the PMU has no free counter";
      break;
    case EINVAL:
      if (attr.type == PERF_TYPE_TRACEPOINT) {
        hint =
            "no tracepoint with this id on this kernel (ids come from tracefs "
            "events/<subsystem>/<event>/id)";
      } else if (cpu >= 0) {
        hint = "the CPU may be offline or out of range";
      }
      break;
    default:
      break;
  }
  if (hint.empty()) return base;
  return WithMessage(base, absl::StrCat(base.message(), ": ", hint));
}

absl::StatusOr<PerfEvent> PerfEvent::Open(const perf_event_attr& attr, pid_t pid, int cpu,
                                          int group_fd) {
  long fd = syscall(SYS_perf_event_open, &attr, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0 && errno == EINTR) {
    fd = syscall(SYS_perf_event_open, &attr, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC);
  }
  if (fd < 0) return ExplainPerfEventOpenError(errno, attr, pid, cpu);
  return PerfEvent(static_cast<int>(fd));
}

PerfEvent::PerfEvent(PerfEvent&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

PerfEvent& PerfEvent::operator=(PerfEvent&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

PerfEvent::~PerfEvent() { Close(); }

void PerfEvent::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

absl::Status PerfEvent::Ioctl(unsigned long request, const char* what) {
  if (ioctl(fd_, request, 0) != 0) return ErrnoStatus(errno, what);
  return absl::OkStatus();
}

absl::Status PerfEvent::Enable() { return Ioctl(PERF_EVENT_IOC_ENABLE, "PERF_EVENT_IOC_ENABLE"); }
absl::Status PerfEvent::Disable() {
  return Ioctl(PERF_EVENT_IOC_DISABLE, "PERF_EVENT_IOC_DISABLE");
}

absl::Status EnableAll(absl::Span<PerfEvent> events) {
  for (PerfEvent& event : events) {
    if (absl::Status enabled = event.Enable(); !enabled.ok()) return enabled;
  }
  return absl::OkStatus();
}

absl::Status DisableAll(absl::Span<PerfEvent> events) {
  for (PerfEvent& event : events) {
    if (absl::Status disabled = event.Disable(); !disabled.ok()) return disabled;
  }
  return absl::OkStatus();
}

absl::Status PerfEvent::Reset() { return Ioctl(PERF_EVENT_IOC_RESET, "PERF_EVENT_IOC_RESET"); }

absl::StatusOr<uint64_t> PerfEvent::ReadCount() {
  uint64_t value = 0;
  ssize_t n;
  do {
    n = read(fd_, &value, sizeof(value));
  } while (n < 0 && errno == EINTR);
  if (n < 0) return ErrnoStatus(errno, "read perf event");
  if (n != static_cast<ssize_t>(sizeof(value))) {
    return absl::InternalError(absl::StrCat("read perf event: short read of ", n, " bytes"));
  }
  return value;
}

}  // namespace perfscale
