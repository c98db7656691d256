// An owned perf_event file descriptor: opened with PERF_FLAG_FD_CLOEXEC, closed on
// destruction, move-only. Failures come back as absl::Status whose message says what to
// do (which sysctl or capability, which PMU, which limit), so a benchmark can skip with
// that line instead of failing.
//
// Example:
//   absl::StatusOr<perfscale::PerfEvent> event =
//       perfscale::PerfEvent::Open(perfscale::SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK),
//                                  /*pid=*/-1, /*cpu=*/0);
//   if (!event.ok()) state.SkipWithError(event.status().ToString().c_str());
#ifndef PERFSCALE_LIB_PERF_EVENT_H_
#define PERFSCALE_LIB_PERF_EVENT_H_

#include <linux/perf_event.h>
#include <sys/types.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace perfscale {

class PerfEvent {
 public:
  // pid/cpu/group_fd as perf_event_open(2). EINTR is retried once, as the kernel can
  // return it when a signal lands during the open.
  static absl::StatusOr<PerfEvent> Open(const perf_event_attr& attr, pid_t pid, int cpu,
                                        int group_fd = -1);

  PerfEvent() = default;
  PerfEvent(PerfEvent&& other) noexcept;
  PerfEvent& operator=(PerfEvent&& other) noexcept;
  PerfEvent(const PerfEvent&) = delete;
  PerfEvent& operator=(const PerfEvent&) = delete;
  ~PerfEvent();

  absl::Status Enable();
  absl::Status Disable();
  absl::Status Reset();
  // The counter's value (read_format 0).
  absl::StatusOr<uint64_t> ReadCount();

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Close();

 private:
  explicit PerfEvent(int fd) : fd_(fd) {}
  absl::Status Ioctl(unsigned long request, const char* what);
  int fd_ = -1;
};

// Enable (Disable) each of `events` in order; the first failure stops and is returned.
absl::Status EnableAll(absl::Span<PerfEvent> events);
absl::Status DisableAll(absl::Span<PerfEvent> events);

// Describes why perf_event_open failed with `err` for `attr` on `cpu`, and what to do.
absl::Status ExplainPerfEventOpenError(int err, const perf_event_attr& attr, pid_t pid, int cpu);

}  // namespace perfscale

#endif  // PERFSCALE_LIB_PERF_EVENT_H_
