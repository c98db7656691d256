// The run context: hypervisor detection and git HEAD resolution over fake inputs
// (detached, loose ref, packed-refs, unsafe refs, garbage), and CollectRunContext
// checked field by field against what this machine says.
#include "benchmarks/harness/run_context.h"

#include <sys/utsname.h>

#include <cerrno>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "lib/capabilities.h"
#include "lib/cpu_set.h"
#include "lib/errno_status.h"
#include "lib/file_reader.h"

namespace perfscale {
namespace {

TEST(DetectHypervisorTest, NoFlagIsNone) {
  EXPECT_EQ(DetectHypervisor("processor\t: 0\nflags\t\t: fpu vme de pse tsc msr\n", "xen"), "none");
  EXPECT_EQ(DetectHypervisor("", ""), "none");
  EXPECT_EQ(DetectHypervisor("garbage without lines", "kvm"), "none");
}

TEST(DetectHypervisorTest, FlagWithVendor) {
  const char* cpuinfo = "processor\t: 0\nflags\t\t: fpu vme hypervisor lahf_lm\n";
  EXPECT_EQ(DetectHypervisor(cpuinfo, "xen\n"), "xen");
  EXPECT_EQ(DetectHypervisor(cpuinfo, ""), "yes");
  EXPECT_EQ(DetectHypervisor(cpuinfo, " \n"), "yes");
}

TEST(DetectHypervisorTest, FlagMustMatchAWholeWord) {
  EXPECT_EQ(DetectHypervisor("flags\t\t: fpu nohypervisor hypervisor_x\n", ""), "none");
  EXPECT_EQ(DetectHypervisor("flags\t\t: hypervisor\n", ""), "yes");
  // Only the flags line counts, not a model name that mentions the word.
  EXPECT_EQ(DetectHypervisor("model name\t: hypervisor edition\nflags\t\t: fpu\n", ""), "none");
  EXPECT_EQ(DetectHypervisor("flags without colon hypervisor\n", ""), "none");
}

// HEAD and refs as files relative to .git; anything else is ENOENT.
TextFileReader FakeGit(std::map<std::string, std::string> files,
                       std::vector<std::string>* requested = nullptr) {
  return [files, requested](const std::string& path) -> absl::StatusOr<std::string> {
    if (requested != nullptr) requested->push_back(path);
    auto it = files.find(path);
    if (it == files.end()) return ErrnoStatus(ENOENT, "open " + path);
    return it->second;
  };
}

constexpr char kHash[] = "059247d3c1e2a4b5c6d7e8f90123456789abcdef";
constexpr char kOtherHash[] = "4aa63e4000000000000000000000000000000000";

TEST(ResolveGitHeadTest, DetachedHead) {
  absl::StatusOr<std::string> rev = ResolveGitHead(FakeGit({{"HEAD", std::string(kHash) + "\n"}}));
  ASSERT_TRUE(rev.ok()) << rev.status();
  EXPECT_EQ(*rev, kHash);
}

TEST(ResolveGitHeadTest, LooseRef) {
  absl::StatusOr<std::string> rev = ResolveGitHead(FakeGit({
      {"HEAD", "ref: refs/heads/main\n"},
      {"refs/heads/main", std::string(kHash) + "\n"},
      {"packed-refs", std::string(kOtherHash) + " refs/heads/main\n"},
  }));
  ASSERT_TRUE(rev.ok()) << rev.status();
  EXPECT_EQ(*rev, kHash) << "the loose ref is newer than packed-refs";
}

TEST(ResolveGitHeadTest, PackedRefs) {
  absl::StatusOr<std::string> rev = ResolveGitHead(FakeGit({
      {"HEAD", "ref: refs/heads/main\n"},
      {"packed-refs", "# pack-refs with: peeled fully-peeled sorted \n" + std::string(kOtherHash) +
                          " refs/heads/feature\n" + std::string(kHash) + " refs/heads/main\n" +
                          "^" + std::string(kOtherHash) + "\n"},
  }));
  ASSERT_TRUE(rev.ok()) << rev.status();
  EXPECT_EQ(*rev, kHash);
}

TEST(ResolveGitHeadTest, GarbageLooseRefFallsBackToPackedRefs) {
  absl::StatusOr<std::string> rev = ResolveGitHead(FakeGit({
      {"HEAD", "ref: refs/heads/main"},
      {"refs/heads/main", "not a hash\n"},
      {"packed-refs", std::string(kHash) + " refs/heads/main\n"},
  }));
  ASSERT_TRUE(rev.ok()) << rev.status();
  EXPECT_EQ(*rev, kHash);
}

TEST(ResolveGitHeadTest, PackedRefsPrefixDoesNotMatch) {
  absl::StatusOr<std::string> rev = ResolveGitHead(FakeGit({
      {"HEAD", "ref: refs/heads/main\n"},
      {"packed-refs",
       std::string(kHash) + " refs/heads/main2\n" + std::string(kHash) + " refs/heads/mai\n"},
  }));
  EXPECT_EQ(rev.status().code(), absl::StatusCode::kNotFound);
}

TEST(ResolveGitHeadTest, UnbornBranchIsNotFound) {
  absl::StatusOr<std::string> rev = ResolveGitHead(FakeGit({{"HEAD", "ref: refs/heads/main\n"}}));
  ASSERT_FALSE(rev.ok());
  EXPECT_EQ(rev.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(rev.status().message(), "refs/heads/main"));
}

TEST(ResolveGitHeadTest, UnsafeRefIsRejectedBeforeAnyRead) {
  for (const char* head :
       {"ref: ../../../etc/shadow\n", "ref: refs/heads/../../../x\n", "ref: refs/..\n"}) {
    std::vector<std::string> requested;
    absl::StatusOr<std::string> rev =
        ResolveGitHead(FakeGit({{"HEAD", head}, {"../../../etc/shadow", kHash}}, &requested));
    ASSERT_FALSE(rev.ok()) << head;
    EXPECT_EQ(rev.status().code(), absl::StatusCode::kInvalidArgument) << head;
    EXPECT_EQ(requested, std::vector<std::string>{"HEAD"}) << head;
  }
}

TEST(ResolveGitHeadTest, MalformedHead) {
  for (const char* head :
       {"", "\n", "garbage", "abc123", "ref:refs/heads/main",
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0", "059247z"}) {
    absl::StatusOr<std::string> rev = ResolveGitHead(FakeGit({{"HEAD", head}}));
    EXPECT_FALSE(rev.ok()) << "'" << head << "' resolved to " << *rev;
  }
}

TEST(ResolveGitHeadTest, MissingHeadPassesTheErrorOn) {
  absl::StatusOr<std::string> rev = ResolveGitHead(FakeGit({}));
  ASSERT_FALSE(rev.ok());
  EXPECT_EQ(rev.status().code(), absl::StatusCode::kNotFound);
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    had_ = std::getenv(name) != nullptr;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(FindPerfscaleRevisionTest, EnvironmentWins) {
  ScopedEnv env("PERFSCALE_REVISION", "v1.2-test");
  EXPECT_EQ(FindPerfscaleRevision(), "v1.2-test");
}

TEST(FindPerfscaleRevisionTest, UnknownOutsideACheckout) {
  ScopedEnv env("PERFSCALE_REVISION", nullptr);
  ScopedEnv workspace("BUILD_WORKSPACE_DIRECTORY", "/nonexistent/checkout");
  EXPECT_EQ(FindPerfscaleRevision(), "unknown");
}

TEST(FindPerfscaleRevisionTest, EmptyEnvironmentValueIsIgnored) {
  ScopedEnv env("PERFSCALE_REVISION", "");
  ScopedEnv workspace("BUILD_WORKSPACE_DIRECTORY", "/nonexistent/checkout");
  EXPECT_EQ(FindPerfscaleRevision(), "unknown");
}

std::string Trimmed(const char* path) {
  absl::StatusOr<std::string> text = ReadTextFile(path);
  return text.ok() ? std::string(absl::StripAsciiWhitespace(*text)) : "";
}

TEST(CollectRunContextTest, MatchesThisMachine) {
  ScopedEnv env("PERFSCALE_REVISION", "test-revision");
  RunContext context = CollectRunContext();
  utsname names{};
  ASSERT_EQ(uname(&names), 0);
  EXPECT_EQ(context.kernel_release, names.release);
  EXPECT_EQ(context.perf_event_paranoid, Trimmed("/proc/sys/kernel/perf_event_paranoid"));
  absl::StatusOr<std::vector<int>> online = OnlineCpus();
  ASSERT_TRUE(online.ok());
  EXPECT_EQ(context.online_cpus, FormatCpuList(*online));
  EXPECT_EQ(context.num_online_cpus, static_cast<int>(online->size()));
  EXPECT_EQ(context.clocksource,
            Trimmed("/sys/devices/system/clocksource/clocksource0/current_clocksource"));
  EXPECT_FALSE(context.clocksource.empty());
  EXPECT_FALSE(context.hypervisor.empty());
  absl::StatusOr<std::string> cpuinfo = ReadTextFile("/proc/cpuinfo");
  ASSERT_TRUE(cpuinfo.ok());
  EXPECT_EQ(context.hypervisor == "none", !absl::StrContains(*cpuinfo, " hypervisor"));
  EXPECT_EQ(context.perfscale_revision, "test-revision");
  EXPECT_EQ(context.breakpoints_fire,
            DescribeBreakpointsFire(ProbeCapabilities().RequireFiringBreakpoints()));
}

TEST(DescribeBreakpointsFireTest, YesOrNoWithTheReason) {
  EXPECT_EQ(DescribeBreakpointsFire(absl::OkStatus()), "yes");
  EXPECT_EQ(DescribeBreakpointsFire(absl::FailedPreconditionError("counted 0 of 4 writes")),
            "no: counted 0 of 4 writes");
}

TEST(RunContextTest, FieldsHaveStableNamesAndOrder) {
  RunContext context;
  context.kernel_release = "6.1.0";
  context.perf_event_paranoid = "2";
  context.online_cpus = "0-1";
  context.num_online_cpus = 2;
  context.hypervisor = "kvm";
  context.clocksource = "tsc";
  context.breakpoints_fire = "yes";
  context.perfscale_revision = "abc1234";
  std::vector<std::pair<std::string, std::string>> expected = {
      {"kernel_release", "6.1.0"}, {"perf_event_paranoid", "2"},
      {"online_cpus", "0-1"},      {"num_online_cpus", "2"},
      {"hypervisor", "kvm"},       {"clocksource", "tsc"},
      {"breakpoints_fire", "yes"}, {"perfscale_revision", "abc1234"},
  };
  EXPECT_EQ(context.Fields(), expected);
}

}  // namespace
}  // namespace perfscale
