// Tracepoint lookup: name parsing, finding tracefs in /proc/mounts text, what to do when it
// is not mounted (PlanTracefs, fed text), EnsureTracefs for real in private mount
// namespaces, and TracepointId over a fake filesystem (to reach the NotFound /
// PermissionDenied paths) and the real one.
#include "lib/tracefs.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "lib/capabilities.h"
#include "lib/errno_status.h"
#include "lib/file_reader.h"
#include "testing/common/run_command.h"

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

constexpr char kFilesystemsWithTracefs[] =
    "nodev\tsysfs\nnodev\ttmpfs\nnodev\tdebugfs\nnodev\ttracefs\n\text4\n";
constexpr char kBareMounts[] = "sysfs /sys sysfs rw 0 0\nproc /proc proc rw 0 0\n";

TEST(PlanTracefsTest, UsesWhatIsMountedAndNeverMountsAgain) {
  for (bool may_mount : {false, true}) {
    absl::StatusOr<TracefsPlan> plan =
        PlanTracefs(kTracefsMounts, kFilesystemsWithTracefs, may_mount);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->root, "/sys/kernel/tracing");
    EXPECT_FALSE(plan->mount);
  }
  absl::StatusOr<TracefsPlan> debugfs =
      PlanTracefs("debugfs /sys/kernel/debug debugfs rw 0 0\n", kFilesystemsWithTracefs, true);
  ASSERT_TRUE(debugfs.ok()) << debugfs.status();
  EXPECT_EQ(debugfs->root, "/sys/kernel/debug/tracing");
  EXPECT_FALSE(debugfs->mount);
}

TEST(PlanTracefsTest, MountsWhenTheKernelHasItAndWeMay) {
  absl::StatusOr<TracefsPlan> plan = PlanTracefs(kBareMounts, kFilesystemsWithTracefs, true);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->root, "/sys/kernel/tracing");
  EXPECT_TRUE(plan->mount);
  // Spaces instead of a tab, no "nodev": still the name in the last field.
  plan = PlanTracefs(kBareMounts, "   tracefs  \n", true);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->mount);
}

TEST(PlanTracefsTest, WithoutThePrivilegeGivesTheExactCommand) {
  absl::StatusOr<TracefsPlan> plan = PlanTracefs(kBareMounts, kFilesystemsWithTracefs, false);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(
      absl::StrContains(plan.status().message(), "mount -t tracefs nodev /sys/kernel/tracing"))
      << plan.status();
  EXPECT_TRUE(absl::StrContains(plan.status().message(), "CAP_SYS_ADMIN")) << plan.status();
}

TEST(PlanTracefsTest, AKernelWithoutTracefsIsUnimplementedWhateverThePrivilege) {
  for (absl::string_view filesystems :
       {"nodev\tsysfs\nnodev\tdebugfs\n", "", "nodev\ttracefs2\n", "tracefs\tnodev\n"}) {
    for (bool may_mount : {false, true}) {
      absl::StatusOr<TracefsPlan> plan = PlanTracefs(kBareMounts, filesystems, may_mount);
      ASSERT_FALSE(plan.ok()) << filesystems;
      EXPECT_EQ(plan.status().code(), absl::StatusCode::kUnimplemented) << filesystems;
      EXPECT_TRUE(absl::StrContains(plan.status().message(), "CONFIG_TRACING"));
    }
  }
}

// EnsureTracefs for real, each case in a fresh process (its mount happens once per
// process) inside a private mount namespace, so the host's mounts are never touched.
class EnsureTracefsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to create a private mount namespace";
    absl::StatusOr<std::string> filesystems = ReadTextFile("/proc/filesystems");
    ASSERT_TRUE(filesystems.ok()) << filesystems.status();
    if (!absl::StrContains(*filesystems, "tracefs")) GTEST_SKIP() << "this kernel has no tracefs";
  }

  // Runs `script` with sh in a private mount namespace where neither tracefs nor debugfs
  // is mounted; "$0" in it is the ensure_tracefs helper.
  static ::perfscale::testing::CommandResult InFreshNamespace(const std::string& script,
                                                              const std::string& helper) {
    return ::perfscale::testing::RunCommand(
        {"unshare", "--mount", "--propagation", "private", "sh", "-c",
         absl::StrCat("while umount -l /sys/kernel/tracing 2>/dev/null; do :; done; "
                      "while umount -l /sys/kernel/debug 2>/dev/null; do :; done; ",
                      script),
         helper});
  }

  static std::string Helper() { return ::perfscale::testing::RunfilePath("lib/ensure_tracefs"); }

  static int CountLines(absl::string_view text, absl::string_view needle) {
    int count = 0;
    for (absl::string_view line : absl::StrSplit(text, '\n'))
      count += absl::StrContains(line, needle);
    return count;
  }
};

TEST_F(EnsureTracefsTest, MountsOnceWhereNothingDidAndSaysSoOnce) {
  auto result = InFreshNamespace(
      "grep -c ' tracefs ' /proc/mounts; \"$0\" 3; grep ' tracefs ' /proc/mounts", Helper());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::vector<std::string> lines = absl::StrSplit(result.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 5u) << result.out;
  EXPECT_EQ(lines[0], "0");  // the namespace starts as a new machine does
  for (int i = 1; i <= 3; ++i) EXPECT_EQ(lines[i], "ok /sys/kernel/tracing") << result.out;
  EXPECT_TRUE(absl::StartsWith(lines[4], "nodev /sys/kernel/tracing tracefs ")) << result.out;
  EXPECT_EQ(CountLines(result.err,
                       "perfscale: tracefs was not mounted; mounted it at "
                       "/sys/kernel/tracing"),
            1)
      << result.err;
}

TEST_F(EnsureTracefsTest, MountsNothingWhenItIsThere) {
  auto mounted = InFreshNamespace(
      "mount -t tracefs nodev /sys/kernel/tracing && \"$0\" 2 && grep -c ' tracefs ' /proc/mounts",
      Helper());
  ASSERT_EQ(mounted.exit_code, 0) << mounted.err;
  EXPECT_EQ(mounted.out, "ok /sys/kernel/tracing\nok /sys/kernel/tracing\n1\n");
  EXPECT_EQ(mounted.err, "");
  // debugfs alone: its tracing directory (which the kernel mounts on first access).
  auto debugfs = InFreshNamespace(
      "mount -t debugfs nodev /sys/kernel/debug && \"$0\" && "
      "grep -c ' /sys/kernel/tracing ' /proc/mounts",
      Helper());
  EXPECT_EQ(debugfs.out, "ok /sys/kernel/debug/tracing\n0\n") << debugfs.err;
  EXPECT_EQ(debugfs.err, "");
}

TEST_F(EnsureTracefsTest, TwoProcessesAtOnceMountItOnce) {
  auto result = InFreshNamespace(
      "\"$0\" & \"$0\" & \"$0\"; wait; grep -c ' /sys/kernel/tracing tracefs ' /proc/mounts",
      Helper());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(CountLines(result.out, "ok /sys/kernel/tracing"), 3) << result.out;
  EXPECT_TRUE(absl::EndsWith(result.out, "\n1\n")) << result.out;
  EXPECT_EQ(CountLines(result.err, "mounted it at"), 1) << result.err;
}

TEST_F(EnsureTracefsTest, UnprivilegedGetsTheMountCommandAndMountsNothing) {
  // nobody cannot execute from the runfiles under /root: a copy it can.
  char dir[] = "/tmp/perfscale-tracefs-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string copy = absl::StrCat(dir, "/ensure_tracefs");
  auto copied = ::perfscale::testing::RunCommand({"cp", Helper(), copy});
  ASSERT_EQ(copied.exit_code, 0) << copied.err;
  chmod(dir, 0755);
  auto result = InFreshNamespace(
      "setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all "
      "-- \"$0\"; grep -c ' tracefs ' /proc/mounts",
      copy);
  unlink(copy.c_str());
  rmdir(dir);
  ASSERT_EQ(result.exit_code, 1) << result.err;  // grep found no tracefs mount
  EXPECT_TRUE(absl::StartsWith(result.out, "error NOT_FOUND: ")) << result.out;
  EXPECT_TRUE(absl::StrContains(result.out, "'sudo mount -t tracefs nodev /sys/kernel/tracing'"))
      << result.out;
  EXPECT_TRUE(absl::EndsWith(result.out, "\n0\n")) << result.out;
  EXPECT_EQ(result.err, "");
}

// Root of a user namespace has CAP_SYS_ADMIN there, but the kernel lets no user
// namespace mount tracefs: the one attempt fails, and every answer names the command.
TEST_F(EnsureTracefsTest, AMountTheKernelRefusesNamesTheCommandOnEveryCall) {
  auto result = InFreshNamespace(
      "unshare --user --map-root-user \"$0\" 2; grep -c ' tracefs ' /proc/mounts", Helper());
  ASSERT_EQ(result.exit_code, 1) << result.err;  // grep found no tracefs mount
  std::vector<std::string> lines = absl::StrSplit(result.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u) << result.out;
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(absl::StartsWith(lines[i], "error PERMISSION_DENIED: ")) << lines[i];
    EXPECT_TRUE(absl::StrContains(lines[i], "mounting it failed")) << lines[i];
    EXPECT_TRUE(absl::StrContains(lines[i], "'mount -t tracefs nodev /sys/kernel/tracing' as root"))
        << lines[i];
  }
  EXPECT_EQ(lines[2], "0");
  EXPECT_EQ(result.err, "");
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

TEST(TracefsRootTest, FromTheMountsOrWhyNot) {
  FakeFiles fs;
  fs.Add("/proc/mounts", std::string(kTracefsMounts));
  EXPECT_EQ(*TracefsRoot(fs.Reader()), "/sys/kernel/tracing");
  FakeFiles unmounted;
  unmounted.Add("/proc/mounts", std::string("sysfs /sys sysfs rw 0 0\n"));
  EXPECT_TRUE(absl::IsNotFound(TracefsRoot(unmounted.Reader()).status()));
  FakeFiles no_proc;  // /proc/mounts itself is missing: its own error
  absl::Status status = TracefsRoot(no_proc.Reader()).status();
  EXPECT_TRUE(absl::IsNotFound(status)) << status;
  EXPECT_NE(status.message().find("/proc/mounts"), absl::string_view::npos) << status;
}

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
  if (absl::Status s = ProbeCapabilities().RequireTracefs(); !s.ok()) GTEST_SKIP() << s.message();
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
  if (absl::Status s = ProbeCapabilities().RequireTracefs(); !s.ok()) GTEST_SKIP() << s.message();
  absl::StatusOr<uint64_t> id = TracepointId("sched:perfscale_no_such_event");
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kNotFound) << id.status();
  EXPECT_TRUE(absl::StrContains(id.status().message(), "perf list tracepoint"));
}

}  // namespace
}  // namespace perfscale
