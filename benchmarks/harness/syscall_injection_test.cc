// The pure parts of --inject_syscall_events: the flags' checks, the context keys and the
// stderr line (what the gate's Python reads back from a run).
#include "benchmarks/harness/syscall_injection.h"

#include <string>
#include <vector>

#include "benchmarks/harness/flags.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace perfscale {
namespace {

using ::testing::HasSubstr;
using ::testing::Pair;

absl::Status CheckArgs(std::vector<std::string> args) {
  std::vector<char*> argv;
  std::string name = "test";
  argv.push_back(name.data());
  for (std::string& arg : args) argv.push_back(arg.data());
  absl::Status parsed = ParseFlags(static_cast<int>(argv.size()), argv.data());
  absl::Status checked = parsed.ok() ? CheckSyscallInjectionFlags() : parsed;
  ResetFlagsForTest();
  return checked;
}

TEST(SyscallInjectionFlagsTest, AcceptsOffAndOneToMax) {
  EXPECT_TRUE(CheckArgs({}).ok());
  EXPECT_TRUE(CheckArgs({"--inject_syscall_events=0"}).ok());
  EXPECT_TRUE(CheckArgs({"--inject_syscall_events=1"}).ok());
  EXPECT_TRUE(CheckArgs({"--inject_syscall_events=4096", "--inject_syscall_filter=id >= 0"}).ok());
}

TEST(SyscallInjectionFlagsTest, RejectsWhatIsOutOfRangeNamingTheFlag) {
  for (const char* arg : {"--inject_syscall_events=5000", "--inject_syscall_events=-1",
                          "--inject_syscall_events=many"}) {
    absl::Status status = CheckArgs({arg});
    EXPECT_TRUE(absl::IsInvalidArgument(status)) << arg;
    EXPECT_THAT(std::string(status.message()), HasSubstr(std::string(arg) + ": "));
    EXPECT_THAT(std::string(status.message()), HasSubstr("(allowed: an integer 0..4096)"));
  }
}

TEST(SyscallInjectionFlagsTest, RejectsAFilterWithoutEvents) {
  absl::Status status = CheckArgs({"--inject_syscall_filter=id >= 0"});
  EXPECT_TRUE(absl::IsInvalidArgument(status));
  EXPECT_THAT(std::string(status.message()), HasSubstr("--inject_syscall_filter: "));
  EXPECT_THAT(std::string(status.message()), HasSubstr("--inject_syscall_events=N"));
  EXPECT_FALSE(CheckArgs({"--inject_syscall_events=0", "--inject_syscall_filter=id >= 0"}).ok());
}

TEST(SyscallInjectionFlagsTest, OffStartsNothing) {
  absl::StatusOr<std::unique_ptr<SyscallInjector>> injector = StartSyscallInjection();
  ASSERT_TRUE(injector.ok()) << injector.status();
  EXPECT_EQ(*injector, nullptr);
}

TEST(InjectorContextTest, HasTheKeysTheGateReads) {
  InjectorCost cost;
  cost.bare_ns = 150.04;
  cost.injected_ns = 1150.06;
  EXPECT_THAT(InjectorContext("40 counting events per CPU", 40, cost),
              ::testing::ElementsAre(
                  Pair("injector", "40 counting events per CPU"),
                  Pair("injector_events_per_cpu", "40"), Pair("injector_bare_ns", "150.0"),
                  Pair("injector_ns", "1150.1"), Pair("injector_added_ns", "1000.0")));
}

TEST(InjectorLineTest, SaysTheCostPerSyscall) {
  InjectorCost cost;
  cost.bare_ns = 200;
  cost.injected_ns = 950.5;
  EXPECT_EQ(InjectorLine("8 counting events per CPU on x", cost),
            "injector: 8 counting events per CPU on x: getppid() 200.0 ns bare, 950.5 ns "
            "injected, +750.5 ns per syscall (bare loop)\n");
}

}  // namespace
}  // namespace perfscale
