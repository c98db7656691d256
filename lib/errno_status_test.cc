// errno -> Status: the code decides skip-vs-error in every benchmark, so each errno the
// library hands out is pinned to its code, and the message must keep the caller's words.
#include "lib/errno_status.h"

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace perfscale {
namespace {

struct Mapping {
  int err;
  absl::StatusCode code;
  const char* name;
};

TEST(ErrnoStatusTest, MapsEachErrnoToItsCodeAndName) {
  const Mapping mappings[] = {
      {EPERM, absl::StatusCode::kPermissionDenied, "EPERM"},
      {EACCES, absl::StatusCode::kPermissionDenied, "EACCES"},
      {ENOENT, absl::StatusCode::kNotFound, "ENOENT"},
      {ENODEV, absl::StatusCode::kNotFound, "ENODEV"},
      {ENXIO, absl::StatusCode::kNotFound, "ENXIO"},
      {EOPNOTSUPP, absl::StatusCode::kUnimplemented, "EOPNOTSUPP"},
      {ENOSYS, absl::StatusCode::kUnimplemented, "ENOSYS"},
      {EMFILE, absl::StatusCode::kResourceExhausted, "EMFILE"},
      {ENFILE, absl::StatusCode::kResourceExhausted, "ENFILE"},
      {ENOSPC, absl::StatusCode::kResourceExhausted, "ENOSPC"},
      {EAGAIN, absl::StatusCode::kResourceExhausted, "EAGAIN"},
      {ENOMEM, absl::StatusCode::kResourceExhausted, "ENOMEM"},
      {E2BIG, absl::StatusCode::kResourceExhausted, "E2BIG"},
      {EINVAL, absl::StatusCode::kInvalidArgument, "EINVAL"},
      {EBADF, absl::StatusCode::kInvalidArgument, "EBADF"},
      {EBUSY, absl::StatusCode::kUnavailable, "EBUSY"},
      {EINTR, absl::StatusCode::kInternal, "EINTR"},
      {ESRCH, absl::StatusCode::kInternal, "ESRCH"},
  };
  for (const Mapping& m : mappings) {
    absl::Status status = ErrnoStatus(m.err, "open thing");
    EXPECT_EQ(status.code(), m.code) << m.name;
    EXPECT_EQ(std::string(status.message()),
              std::string("open thing: ") + std::strerror(m.err) + " (" + m.name + ")");
  }
}

TEST(ErrnoStatusTest, UnmappedErrnoIsInternalAndStillNamed) {
  absl::Status status = ErrnoStatus(EXDEV, "rename");
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_NE(status.message().find("rename: "), absl::string_view::npos);
  EXPECT_NE(status.message().find("(EXDEV)"), absl::string_view::npos) << status.message();
}

TEST(ErrnoStatusTest, EveryErrnoTheKernelReturnsIsNamed) {
  // The hostile sweep saw "Read-only file system (errno)": a reader greps for the name.
  for (int err = 1; err <= 133; ++err) {
    if (err == 41 || err == 58) continue;  // numbers Linux leaves unused
    std::string message(ErrnoStatus(err, "x").message());
    ASSERT_GT(message.size(), 4u);
    size_t open = message.rfind(" (E");
    EXPECT_NE(open, std::string::npos) << err << ": " << message;
    EXPECT_EQ(message.back(), ')') << err << ": " << message;
  }
  EXPECT_NE(ErrnoStatus(EROFS, "x").message().find("(EROFS)"), absl::string_view::npos);
  EXPECT_NE(ErrnoStatus(99999, "x").message().find("(errno 99999)"), absl::string_view::npos);
}

TEST(ErrnoStatusTest, FilesystemRefusalsAreSkips) {
  // A read-only or full $TMPDIR is the machine's limit, not a bug in the benchmark.
  EXPECT_EQ(ErrnoStatus(EROFS, "x").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(IsEnvironmentLimitation(ErrnoStatus(EROFS, "x")));
  EXPECT_TRUE(IsEnvironmentLimitation(ErrnoStatus(EDQUOT, "x")));
  EXPECT_TRUE(IsEnvironmentLimitation(ErrnoStatus(ENOTDIR, "x")));
}

TEST(ErrnoStatusTest, OutOfRangeErrnoDoesNotCrash) {
  // strerror must cope with numbers no libc knows.
  absl::Status status = ErrnoStatus(99999, "odd");
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_FALSE(status.message().empty());
  EXPECT_EQ(ErrnoStatus(-1, "negative").code(), absl::StatusCode::kInternal);
}

TEST(ErrnoStatusTest, ZeroErrnoIsNeverOk) {
  // A caller that forgot to check errno still gets a failure, not silent success.
  EXPECT_FALSE(ErrnoStatus(0, "nothing").ok());
}

TEST(ErrnoStatusTest, EnvironmentLimitationsAreTheSkipCodes) {
  EXPECT_TRUE(IsEnvironmentLimitation(ErrnoStatus(EACCES, "x")));
  EXPECT_TRUE(IsEnvironmentLimitation(ErrnoStatus(EPERM, "x")));
  EXPECT_TRUE(IsEnvironmentLimitation(ErrnoStatus(ENOENT, "x")));
  EXPECT_TRUE(IsEnvironmentLimitation(ErrnoStatus(EOPNOTSUPP, "x")));
  EXPECT_TRUE(IsEnvironmentLimitation(ErrnoStatus(EMFILE, "x")));
  EXPECT_TRUE(IsEnvironmentLimitation(ErrnoStatus(ENOSPC, "x")));
  EXPECT_TRUE(IsEnvironmentLimitation(absl::FailedPreconditionError("x")));

  EXPECT_FALSE(IsEnvironmentLimitation(absl::OkStatus()));
  EXPECT_FALSE(IsEnvironmentLimitation(ErrnoStatus(EINVAL, "x")));
  EXPECT_FALSE(IsEnvironmentLimitation(ErrnoStatus(EBADF, "x")));
  EXPECT_FALSE(IsEnvironmentLimitation(ErrnoStatus(EBUSY, "x")));
  EXPECT_FALSE(IsEnvironmentLimitation(ErrnoStatus(EXDEV, "x")));
  EXPECT_FALSE(IsEnvironmentLimitation(absl::OutOfRangeError("x")));
}

}  // namespace
}  // namespace perfscale

TEST(StatusErrnoTest, KeepsTheErrnoThatSharesACodeWithOthers) {
  // ENOSPC and EMFILE are both ResourceExhausted; breakpoint probing must tell them apart.
  EXPECT_EQ(perfscale::StatusErrno(perfscale::ErrnoStatus(ENOSPC, "open")), ENOSPC);
  EXPECT_EQ(perfscale::StatusErrno(perfscale::ErrnoStatus(EMFILE, "open")), EMFILE);
  EXPECT_EQ(perfscale::StatusErrno(absl::ResourceExhaustedError("no errno")), std::nullopt);
}

TEST(StatusErrnoTest, WithMessageKeepsCodeAndErrno) {
  absl::Status status =
      perfscale::WithMessage(perfscale::ErrnoStatus(ENOSPC, "open"), "open: slots full");
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(), "open: slots full");
  EXPECT_EQ(perfscale::StatusErrno(status), ENOSPC);
}
