// Tracepoint lookup: name parsing, finding tracefs in /proc/mounts text, and TracepointId
// over a fake filesystem (to reach the NotFound / PermissionDenied paths) and the real one.
#include "lib/tracefs.h"

#include <cerrno>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "lib/errno_status.h"
#include "lib/file_reader.h"

namespace perfscale {
namespace {

TEST(ParseTracepointNameTest, SplitsSubsystemAndEvent) {
  absl::StatusOr<TracepointName> name = ParseTracepointName("sched:sched_switch");
  ASSERT_TRUE(name.ok()) << name.status();
  EXPECT_EQ(name->subsystem, "sched");
  EXPECT_EQ(name->event, "sched_switch");
  name = ParseTracepointName("lock:contention_begin");
  ASSERT_TRUE(name.ok()) << name.status();
  EXPECT_EQ(name->event, "contention_begin");
  EXPECT_TRUE(ParseTracepointName("a-b.c:d_1").ok());
}

TEST(ParseTracepointNameTest, RejectsMalformedAndPathEscapingNames) {
  for (const char* bad : {"", ":", "sched", "sched:", ":sched_switch", "a:b:c", "sched::switch",
                          "../..:x", "..:id", "sched:..", ".:x", "sched/../..:x", "sched:a/b",
                          "sched: x", "sched:x\n", "sched:x y", "sched:x\t"}) {
    absl::StatusOr<TracepointName> name = ParseTracepointName(bad);
    EXPECT_FALSE(name.ok()) << "'" << bad << "' accepted";
    if (!name.ok()) {
      EXPECT_EQ(name.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_TRUE(absl::StrContains(name.status().message(), "subsystem:event"));
    }
  }
  EXPECT_FALSE(ParseTracepointName(std::string("a\0:b", 4)).ok());
}

constexpr char kTracefsMounts[] =
    "sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0\n"
    "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
    "debugfs /sys/kernel/debug debugfs rw,nosuid,nodev,noexec,relatime 0 0\n"
    "tracefs /sys/kernel/tracing tracefs rw,nosuid,nodev,noexec,relatime 0 0\n";

TEST(FindTracefsMountTest, PrefersTracefsEvenAfterDebugfs) {
  absl::StatusOr<std::string> root = FindTracefsMount(kTracefsMounts);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(*root, "/sys/kernel/tracing");
}

TEST(FindTracefsMountTest, TracefsMountedSomewhereElse) {
  absl::StatusOr<std::string> root = FindTracefsMount("none /mnt/trace tracefs rw,relatime 0 0\n");
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(*root, "/mnt/trace");
}

TEST(FindTracefsMountTest, DebugfsOnlyUsesItsTracingDirectory) {
  absl::StatusOr<std::string> root = FindTracefsMount(
      "proc /proc proc rw 0 0\n"
      "debugfs /sys/kernel/debug debugfs rw,relatime 0 0\n"
      "debugfs /other/debug debugfs rw,relatime 0 0\n");
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(*root, "/sys/kernel/debug/tracing");
}

TEST(FindTracefsMountTest, NeitherIsNotFoundWithHowToMount) {
  absl::StatusOr<std::string> root =
      FindTracefsMount("sysfs /sys sysfs rw 0 0\nproc /proc proc rw 0 0\n");
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(root.status().message(), "mount -t tracefs"));
}

TEST(FindTracefsMountTest, EmptyAndGarbageAreNotFound) {
  EXPECT_EQ(FindTracefsMount("").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(FindTracefsMount("\n\n\n").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(FindTracefsMount("tracefs\ntracefs tracefs\n").status().code(),
            absl::StatusCode::kNotFound);
  // The type is the third field; a device or mount point named tracefs is not a mount.
  EXPECT_EQ(FindTracefsMount("tracefs /tracefs ext4 rw 0 0\n").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(ParseTracepointIdTest, Numbers) {
  EXPECT_EQ(*ParseTracepointId("372\n"), 372u);
  EXPECT_EQ(*ParseTracepointId("0"), 0u);
  EXPECT_EQ(*ParseTracepointId("  15  "), 15u);
  EXPECT_EQ(*ParseTracepointId("18446744073709551615\n"), UINT64_MAX);
}

TEST(ParseTracepointIdTest, RejectsMalformed) {
  for (const char* bad : {"", "\n", "abc", "-1", "+1", "1 2", "12abc", "0x10",
                          "18446744073709551616", "99999999999999999999999"}) {
    absl::StatusOr<uint64_t> id = ParseTracepointId(bad);
    EXPECT_FALSE(id.ok()) << "'" << bad << "' parsed as " << *id;
    if (!id.ok()) {
      EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument);
    }
  }
}

// A filesystem of fixed files; anything else is ENOENT. Records what was asked for.
class FakeFiles {
 public:
  void Add(const std::string& path, absl::StatusOr<std::string> contents) {
    files_.emplace(path, std::move(contents));
  }
  TextFileReader Reader() {
    return [this](const std::string& path) -> absl::StatusOr<std::string> {
      requested_.push_back(path);
      auto it = files_.find(path);
      if (it == files_.end()) return ErrnoStatus(ENOENT, "open " + path);
      return it->second;
    };
  }
  const std::vector<std::string>& requested() const { return requested_; }

 private:
  std::map<std::string, absl::StatusOr<std::string>> files_;
  std::vector<std::string> requested_;
};

TEST(TracepointIdTest, ReadsIdUnderTheTracefsMount) {
  FakeFiles fs;
  fs.Add("/proc/mounts", std::string(kTracefsMounts));
  fs.Add("/sys/kernel/tracing/events/sched/sched_switch/id", std::string("316\n"));
  absl::StatusOr<uint64_t> id = TracepointId("sched:sched_switch", fs.Reader());
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, 316u);
}

TEST(TracepointIdTest, FollowsDebugfsWhenThatIsAllThereIs) {
  FakeFiles fs;
  fs.Add("/proc/mounts", std::string("debugfs /sys/kernel/debug debugfs rw 0 0\n"));
  fs.Add("/sys/kernel/debug/tracing/events/lock/contention_begin/id", std::string("77\n"));
  absl::StatusOr<uint64_t> id = TracepointId("lock:contention_begin", fs.Reader());
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, 77u);
}

TEST(TracepointIdTest, MissingTracepointIsNotFoundWithAHint) {
  FakeFiles fs;
  fs.Add("/proc/mounts", std::string(kTracefsMounts));
  absl::StatusOr<uint64_t> id = TracepointId("sched:no_such_event", fs.Reader());
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(id.status().message(), "sched:no_such_event"));
  EXPECT_TRUE(absl::StrContains(id.status().message(), "does not exist on this kernel"));
  EXPECT_TRUE(absl::StrContains(id.status().message(), "perf list tracepoint"));
}

TEST(TracepointIdTest, UnreadableIdFileIsPermissionDeniedSayingHowToFix) {
  FakeFiles fs;
  fs.Add("/proc/mounts", std::string(kTracefsMounts));
  fs.Add("/sys/kernel/tracing/events/sched/sched_switch/id",
         ErrnoStatus(EACCES, "open /sys/kernel/tracing/events/sched/sched_switch/id"));
  absl::StatusOr<uint64_t> id = TracepointId("sched:sched_switch", fs.Reader());
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(absl::StrContains(id.status().message(), "root"));
  EXPECT_TRUE(absl::StrContains(id.status().message(), "chmod -R o+rX /sys/kernel/tracing"));
}

TEST(TracepointIdTest, OtherReadErrorsPassThrough) {
  FakeFiles fs;
  fs.Add("/proc/mounts", std::string(kTracefsMounts));
  fs.Add("/sys/kernel/tracing/events/sched/sched_switch/id", ErrnoStatus(EIO, "read id"));
  absl::StatusOr<uint64_t> id = TracepointId("sched:sched_switch", fs.Reader());
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(absl::StrContains(id.status().message(), "read id"));
}

TEST(TracepointIdTest, GarbageIdFileIsInternalNamingTheFile) {
  FakeFiles fs;
  fs.Add("/proc/mounts", std::string(kTracefsMounts));
  fs.Add("/sys/kernel/tracing/events/sched/sched_switch/id", std::string("banana\n"));
  absl::StatusOr<uint64_t> id = TracepointId("sched:sched_switch", fs.Reader());
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(
      absl::StrContains(id.status().message(), "/sys/kernel/tracing/events/sched/sched_switch/id"));
}

TEST(TracepointIdTest, NoTracefsIsNotFoundWithHowToMount) {
  FakeFiles fs;
  fs.Add("/proc/mounts", std::string("proc /proc proc rw 0 0\n"));
  absl::StatusOr<uint64_t> id = TracepointId("sched:sched_switch", fs.Reader());
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(id.status().message(), "mount -t tracefs"));
}

TEST(TracepointIdTest, UnreadableMountsPassesTheErrorOn) {
  FakeFiles fs;  // no /proc/mounts at all
  absl::StatusOr<uint64_t> id = TracepointId("sched:sched_switch", fs.Reader());
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(id.status().message(), "/proc/mounts"));
}

TEST(TracepointIdTest, BadNameTouchesNoFile) {
  FakeFiles fs;
  fs.Add("/proc/mounts", std::string(kTracefsMounts));
  absl::StatusOr<uint64_t> id = TracepointId("../../etc:passwd", fs.Reader());
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(fs.requested().empty());
}

TEST(TracepointIdTest, RealSchedSwitch) {
  absl::StatusOr<uint64_t> id = TracepointId("sched:sched_switch");
  if (!id.ok() && (absl::IsNotFound(id.status()) || absl::IsPermissionDenied(id.status()))) {
    GTEST_SKIP() << id.status().message();
  }
  ASSERT_TRUE(id.ok()) << id.status();
  // Cross-check against the file itself, found independently of FindTracefsMount.
  absl::StatusOr<std::string> text =
      ReadTextFile("/sys/kernel/tracing/events/sched/sched_switch/id");
  if (!text.ok()) text = ReadTextFile("/sys/kernel/debug/tracing/events/sched/sched_switch/id");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*id, *ParseTracepointId(*text));
  EXPECT_GT(*id, 0u);
}

TEST(TracepointIdTest, RealMissingTracepointIsNotFound) {
  absl::StatusOr<std::string> mounts = ReadTextFile("/proc/mounts");
  ASSERT_TRUE(mounts.ok()) << mounts.status();
  if (!FindTracefsMount(*mounts).ok()) GTEST_SKIP() << "tracefs is not mounted";
  absl::StatusOr<uint64_t> id = TracepointId("sched:perfscale_no_such_event");
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kNotFound) << id.status();
  EXPECT_TRUE(absl::StrContains(id.status().message(), "perf list tracepoint"));
}

}  // namespace
}  // namespace perfscale
