// Turns a failed syscall's errno into an absl::Status whose code says what kind of
// failure it is (so callers can tell "this kernel or permission can't" from a bug) and
// whose message says what to do about it.
//
// Example:
//   if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0)
//     return perfscale::ErrnoStatus(errno, "enable perf event");
#ifndef PERFSCALE_LIB_ERRNO_STATUS_H_
#define PERFSCALE_LIB_ERRNO_STATUS_H_

#include "absl/strings/string_view.h"

#include "absl/status/status.h"

namespace perfscale {

// EPERM/EACCES -> PermissionDenied, ENOENT/ENODEV/EOPNOTSUPP -> NotFound/Unimplemented,
// EMFILE/ENFILE/ENOSPC/EAGAIN/ENOMEM -> ResourceExhausted, EINVAL -> InvalidArgument,
// everything else Internal. The message is "<what>: <strerror> (<ERRNO>)".
absl::Status ErrnoStatus(int err, absl::string_view what);

// True for the codes that mean "this machine or these privileges cannot do it", which
// benchmarks report as a skip with the reason rather than as an error.
bool IsEnvironmentLimitation(const absl::Status& status);

}  // namespace perfscale

#endif  // PERFSCALE_LIB_ERRNO_STATUS_H_
