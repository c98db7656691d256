// Runs the event_open families in this process with tiny parameters, as the binary
// would, and checks that they ran (no error, no skip as root), report the counters they
// promise, and leave the process as they found it: fds, threads, affinity, fd limit and
// children.
#include <dirent.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <cerrno>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "benchmarks/harness/family.h"
#include "gtest/gtest.h"
#include "lib/capabilities.h"
#include "lib/cpu_set.h"
#include "lib/flags.h"

namespace perfscale {
namespace {

class Capture : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& reported) override {
    for (const Run& run : reported) runs.push_back(run);
  }
  std::vector<Run> runs;
};

int CountThreads() {
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return -1;
  int count = 0;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  closedir(dir);
  return count;
}

struct ProcessState {
  int fds;
  int threads;
  std::vector<int> affinity;
  rlim_t fd_soft_limit;
  bool operator==(const ProcessState& o) const {
    return fds == o.fds && threads == o.threads && affinity == o.affinity &&
           fd_soft_limit == o.fd_soft_limit;
  }
};

ProcessState Snapshot() {
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  absl::StatusOr<CpuMask> mask = GetAffinity();
  return ProcessState{*CountOpenFds(), CountThreads(),
                      mask.ok() ? mask->Cpus() : std::vector<int>{}, files.rlim_cur};
}

std::ostream& operator<<(std::ostream& os, const ProcessState& s) {
  return os << "fds=" << s.fds << " threads=" << s.threads
            << " affinity=" << FormatCpuList(s.affinity) << " fd_soft_limit=" << s.fd_soft_limit;
}

TEST(EventOpenFamilies, RunCleanAndReportTheirCounters) {
  if (absl::Status s = ProbeCapabilities().RequireSystemWide(); !s.ok()) {
    GTEST_SKIP() << s.message();
  }
  std::vector<std::string> args = {"hygiene_test", "--event_open_events=3",
                                   "--event_open_group_size=1,2",
                                   "--event_open_event_kinds=cpu-clock,dummy"};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  ASSERT_TRUE(ParseFlags(static_cast<int>(argv.size()), argv.data()).ok());

  // A soft fd limit just above what is open makes the benchmarks raise it (they need
  // 3 x CPUs fds plus headroom), so the test sees that it is put back.
  rlimit files{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &files), 0);
  rlimit lowered = files;
  lowered.rlim_cur = std::min<rlim_t>(files.rlim_cur, static_cast<rlim_t>(*CountOpenFds() + 12));
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lowered), 0);

  // ThreadSanitizer starts a helper thread with the first thread a process creates:
  // let that happen before the baseline.
  std::thread([] {}).join();
  ProcessState before = Snapshot();
  for (const Family& family : Families()) {
    absl::Status registered = family.register_benchmarks();
    ASSERT_TRUE(registered.ok()) << family.name << ": " << registered;
  }
  std::string min_time = "--benchmark_min_time=0.002";
  std::vector<char*> bench_argv = {args[0].data(), min_time.data()};
  int bench_argc = static_cast<int>(bench_argv.size());
  benchmark::Initialize(&bench_argc, bench_argv.data());
  Capture capture;
  size_t ran = benchmark::RunSpecifiedBenchmarks(&capture);
  benchmark::ClearRegisteredBenchmarks();
  ProcessState after = Snapshot();
  setrlimit(RLIMIT_NOFILE, &files);

  EXPECT_EQ(before, after) << "before: " << before << "\nafter: " << after;
  errno = 0;
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD) << "a child process was left behind";

  int cpus = static_cast<int>(OnlineCpus()->size());
  // 3 strategies x 2 kinds x 3 phase plans x 2 group sizes x 2 loads (0, all: the hog
  // threads are among those counted above), and 2 lookups.
  EXPECT_EQ(ran, 3u * 2 * 3 * 2 * 2 + 2);
  int open_runs = 0;
  for (const benchmark::BenchmarkReporter::Run& run : capture.runs) {
    std::string name = run.benchmark_name();
    EXPECT_FALSE(run.error_occurred) << name << ": " << run.error_message;
    if (absl::StartsWith(name, "BM_EventOpen/")) {
      ++open_runs;
      EXPECT_EQ(run.counters.at("fds").value, 3.0 * cpus) << name;
      for (const char* counter : {"usecs/fd", "ipis_system/fd", "sys_us/fd"}) {
        EXPECT_EQ(run.counters.count(counter), 1u) << name << " lacks " << counter;
      }
      EXPECT_GT(run.counters.at("usecs/fd").value, 0) << name;
      if (absl::StrContains(name, "/phases:lifecycle/")) {
        double shares = 0;
        for (const char* phase : {"open", "enable", "read", "disable", "close"}) {
          shares += run.counters.at(absl::StrCat("share:", phase)).value;
        }
        EXPECT_NEAR(shares, 1.0, 1e-9) << name;
      }
      EXPECT_EQ(run.counters.count("weak_fallbacks"), absl::StrContains(name, "/group:2") ? 1u : 0u)
          << name;
      EXPECT_EQ(run.report_label, "") << name;  // affinity is never refused here
    } else {
      EXPECT_TRUE(absl::StartsWith(name, "BM_PmuResolve/")) << name;
      EXPECT_GT(run.counters.at("usecs/event").value, 0) << name;
      EXPECT_GT(run.counters.at("sysfs_ops/event").value, 0) << name;
    }
  }
  EXPECT_EQ(open_runs, 72);
}

}  // namespace
}  // namespace perfscale
