// CpuProfiler against the running kernel: a function that burns a known amount of CPU
// in a thread created after Open must come out on top, with its inherited samples; work
// done while the profiler is disabled must not be sampled; kernel work must resolve to
// kernel symbols through /proc/kallsyms.
#include "benchmarks/harness/cpu_profiler.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "benchmarks/harness/profile_summary.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/symbols.h"

namespace perfscale {
namespace {

using ::testing::HasSubstr;

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

volatile uint64_t sink;

// Burns `seconds` of this thread's CPU time in user space, whatever the machine's load.
__attribute__((noinline)) void BusyUserFunctionForProfilerTest(double seconds) {
  const double until = ThreadCpuSeconds() + seconds;
  uint64_t x = 1;
  while (ThreadCpuSeconds() < until) {
    for (int i = 0; i < 100000; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
    sink = x;
  }
}

// Burns CPU in the kernel: reading /dev/zero clears user memory.
__attribute__((noinline)) void BusyKernelWork(double seconds) {
  int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  std::vector<char> buffer(1 << 20);
  const double until = ThreadCpuSeconds() + seconds;
  // The raw syscall: a sanitizer's read() interceptor would touch the whole buffer in
  // user space, and the profile would rightly put that on top.
  while (ThreadCpuSeconds() < until) {
    ASSERT_GT(syscall(SYS_read, fd, buffer.data(), buffer.size()), 0);
  }
  close(fd);
}

ProfileSummary Summary(const RawProfile& raw) {
  ProcessSymbolizer& symbols = ProcessSymbolizer::Get();
  return Summarize(
      ResolveChains(raw.chains, [&](uint64_t address,
                                    bool kernel) { return symbols.Resolve(address, kernel); }),
      20);
}

const ProfileEntry* TopBySelf(const ProfileSummary& summary) {
  const ProfileEntry* top = nullptr;
  for (const ProfileEntry& e : summary.entries) {
    if (top == nullptr || e.self > top->self) top = &e;
  }
  return top;
}

absl::StatusOr<std::unique_ptr<CpuProfiler>> OpenOrSkipReason(std::string* reason) {
  absl::StatusOr<std::unique_ptr<CpuProfiler>> profiler = CpuProfiler::Open({});
  if (!profiler.ok()) *reason = std::string(profiler.status().message());
  return profiler;
}

TEST(CpuProfiler, FindsTheBusyFunctionOfAThreadCreatedAfterOpen) {
  std::string reason;
  absl::StatusOr<std::unique_ptr<CpuProfiler>> profiler = OpenOrSkipReason(&reason);
  if (absl::IsPermissionDenied(profiler.status())) GTEST_SKIP() << reason;
  ASSERT_TRUE(profiler.ok()) << profiler.status();
  ASSERT_TRUE((*profiler)->Enable().ok());
  std::thread worker([] { BusyUserFunctionForProfilerTest(0.3); });  // inherits the events
  worker.join();
  ASSERT_TRUE((*profiler)->Disable().ok());
  absl::StatusOr<RawProfile> raw = (*profiler)->Stop();
  ASSERT_TRUE(raw.ok()) << raw.status();
  // 0.3 s of CPU at 4000 Hz is 1200 samples; allow for lost ones and timer slack.
  EXPECT_GE(raw->samples, 600u);
  ProfileSummary summary = Summary(*raw);
  const ProfileEntry* top = TopBySelf(summary);
  ASSERT_NE(top, nullptr);
  EXPECT_THAT(top->frame.symbol, HasSubstr("BusyUserFunctionForProfilerTest"));
  EXPECT_FALSE(top->frame.kernel);
  EXPECT_GT(summary.SelfShare(*top), 0.8) << FormatProfile(summary, 10);
}

TEST(CpuProfiler, SamplesNothingWhileDisabled) {
  std::string reason;
  absl::StatusOr<std::unique_ptr<CpuProfiler>> profiler = OpenOrSkipReason(&reason);
  if (absl::IsPermissionDenied(profiler.status())) GTEST_SKIP() << reason;
  ASSERT_TRUE(profiler.ok()) << profiler.status();
  BusyUserFunctionForProfilerTest(0.1);
  absl::StatusOr<RawProfile> raw = (*profiler)->Stop();
  ASSERT_TRUE(raw.ok()) << raw.status();
  EXPECT_EQ(raw->samples, 0u);
  EXPECT_FALSE((*profiler)->Stop().ok());  // only the first Stop works
}

TEST(CpuProfiler, KernelWorkResolvesThroughKallsyms) {
  std::string reason;
  absl::StatusOr<std::unique_ptr<CpuProfiler>> profiler = OpenOrSkipReason(&reason);
  if (absl::IsPermissionDenied(profiler.status())) GTEST_SKIP() << reason;
  ASSERT_TRUE(profiler.ok()) << profiler.status();
  ASSERT_TRUE((*profiler)->Enable().ok());
  BusyKernelWork(0.3);
  absl::StatusOr<RawProfile> raw = (*profiler)->Stop();
  ASSERT_TRUE(raw.ok()) << raw.status();
  if (!raw->kernel_excluded.empty()) GTEST_SKIP() << raw->kernel_excluded;
  if (!ProcessSymbolizer::Get().KernelStatus().ok()) {
    GTEST_SKIP() << ProcessSymbolizer::Get().KernelStatus().message();
  }
  ProfileSummary summary = Summary(*raw);
  const ProfileEntry* top = TopBySelf(summary);
  ASSERT_NE(top, nullptr);
  EXPECT_TRUE(top->frame.kernel) << FormatProfile(summary, 10);
  EXPECT_NE(top->frame.symbol, kUnknownSymbol);
  bool read_path = false, caller = false;
  for (const ProfileEntry& e : summary.entries) {
    read_path |= e.frame.kernel && absl::StrContains(e.frame.symbol, "read") &&
                 summary.ChildrenShare(e) > 0.5;
    // libc's syscall() sets up no frame, so the walk skips its caller and names the
    // caller's caller: some function of this binary, whichever it is.
    caller |=
        !e.frame.kernel && e.frame.dso == "cpu_profiler_test" && summary.ChildrenShare(e) > 0.5;
  }
  EXPECT_TRUE(read_path) << FormatProfile(summary, 10);
  EXPECT_TRUE(caller) << FormatProfile(summary, 10);  // user frames above the syscall
}

}  // namespace
}  // namespace perfscale
