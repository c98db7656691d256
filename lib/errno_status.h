// Turns a failed syscall's errno into an absl::Status whose code says what kind of
// failure it is (so callers can tell "this kernel or permission can't" from a bug) and
// whose message says what to do about it.
//
// Example:
//   if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0)
//     return perfscale::ErrnoStatus(errno, "enable perf event");
#ifndef PERFSCALE_LIB_ERRNO_STATUS_H_
#define PERFSCALE_LIB_ERRNO_STATUS_H_

#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace perfscale {

// EPERM/EACCES/EROFS -> PermissionDenied, ENOENT/ENOTDIR/ENODEV/EOPNOTSUPP ->
// NotFound/Unimplemented, EMFILE/ENFILE/ENOSPC/EDQUOT/EAGAIN/ENOMEM -> ResourceExhausted,
// EINVAL -> InvalidArgument, everything else Internal. The message is
// "<what>: <strerror> (<ERRNO>)", with the errno's symbolic name.
absl::Status ErrnoStatus(int err, absl::string_view what);

// The errno a status was made from by ErrnoStatus (kept as a payload), if any. Lets a
// caller tell e.g. ENOSPC from EMFILE, which share a code.
std::optional<int> StatusErrno(const absl::Status& status);

// A copy of `status` (code and payloads) with another message.
absl::Status WithMessage(const absl::Status& status, absl::string_view message);

// True for the codes that mean "this machine or these privileges cannot do it", which
// benchmarks report as a skip with the reason rather than as an error.
bool IsEnvironmentLimitation(const absl::Status& status);

}  // namespace perfscale

#endif  // PERFSCALE_LIB_ERRNO_STATUS_H_
