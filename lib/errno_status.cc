#include "lib/errno_status.h"

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace perfscale {
namespace {

constexpr char kErrnoPayload[] = "perfscale/errno";

absl::StatusCode CodeFor(int err) {
  switch (err) {
    case EPERM:
    case EACCES:
    case EROFS:
      return absl::StatusCode::kPermissionDenied;
    case ENOENT:
    case ENOTDIR:
    case ENODEV:
    case ENXIO:
      return absl::StatusCode::kNotFound;
    case EOPNOTSUPP:
    case ENOSYS:
      return absl::StatusCode::kUnimplemented;
    case EMFILE:
    case ENFILE:
    case ENOSPC:
    case EDQUOT:
    case EAGAIN:
    case ENOMEM:
    case E2BIG:
      return absl::StatusCode::kResourceExhausted;
    case EINVAL:
    case EBADF:
      return absl::StatusCode::kInvalidArgument;
    case EBUSY:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kInternal;
  }
}

// glibc names every errno it knows (strerrorname_np, glibc 2.32); a number it does not
// know is shown as such rather than as a bare "errno".
std::string ErrnoName(int err) {
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 32)
  if (const char* name = strerrorname_np(err); name != nullptr) return name;
#endif
  return absl::StrCat("errno ", err);
}

}  // namespace

absl::Status ErrnoStatus(int err, absl::string_view what) {
  std::string message = absl::StrCat(what, ": ", std::strerror(err), " (", ErrnoName(err), ")");
  absl::Status status(CodeFor(err), message);
  status.SetPayload(kErrnoPayload, absl::Cord(absl::StrCat(err)));
  return status;
}

std::optional<int> StatusErrno(const absl::Status& status) {
  absl::optional<absl::Cord> payload = status.GetPayload(kErrnoPayload);
  int err = 0;
  if (!payload.has_value() || !absl::SimpleAtoi(std::string(*payload), &err)) {
    return std::nullopt;
  }
  return err;
}

absl::Status WithMessage(const absl::Status& status, absl::string_view message) {
  absl::Status copy(status.code(), message);
  status.ForEachPayload(
      [&copy](absl::string_view url, const absl::Cord& payload) { copy.SetPayload(url, payload); });
  return copy;
}

bool IsEnvironmentLimitation(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kUnimplemented:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kFailedPrecondition:
      return true;
    default:
      return false;
  }
}

}  // namespace perfscale
