// Runs //benchmarks:synthesize itself: its JSON, its refusals of bad flags, and what it
// leaves behind when it is interrupted.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "benchmarks/synthesize/proc_status.h"
#include "gtest/gtest.h"
#include "lib/child_process.h"
#include "lib/file_reader.h"
#include "lib/tracepoint_keep_alive.h"
#include "testing/common/family_harness.h"

namespace perfscale {
namespace {

constexpr char kBinary[] = "benchmarks/synthesize/synthesize";

using ::perfscale::testing::BadFlag;
using ::perfscale::testing::BenchmarkResult;
using ::perfscale::testing::BinaryRun;
using ::perfscale::testing::RunFamilyBinary;

std::string MakeDir(const std::string& name) { return testing::MakeTestDir(name); }
int Entries(const std::string& dir) { return testing::CountDirEntries(dir); }

// Starts the binary with `args`, stdout and stderr to files in `dir`.
pid_t Spawn(const std::vector<std::string>& args, const std::string& dir) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  int out = open((dir + "/stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int err = open((dir + "/stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(out, 1);
  dup2(err, 2);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(kBinary));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(kBinary, argv.data());
  _exit(127);
}

TEST(SynthesizeBinary, JsonCountersAndIdenticalRecordCounts) {
  std::string dir = MakeDir("sink");
  BinaryRun run =
      RunFamilyBinary(kBinary, {"--synthesize_workload=controlled", "--synthesize_processes=4",
                                "--synthesize_threads=3", "--synthesize_exec_maps=5",
                                "--synthesize_data_maps=2", "--synthesize_workers=1,2",
                                "--synthesize_dir=" + dir, "--benchmark_min_time=0.01s"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_TRUE(run.json.ok()) << run.json.status();
  ASSERT_EQ(run.benchmarks.size(), 12u) << run.out.substr(0, 2000);
  double records = -1;
  for (const BenchmarkResult& benchmark : run.benchmarks) {
    const std::string& name = benchmark.name;
    SCOPED_TRACE(name);
    EXPECT_TRUE(absl::StartsWith(name, "BM_Synthesize/workload:controlled/sink:"));
    EXPECT_TRUE(benchmark.Timed()) << benchmark.message;
    // FORK and COMM per task, the 5 mappings each process adds, and what it inherited.
    EXPECT_GT(benchmark.Number("records"), 4 * 3 * 2 + 4 * 5);
    if (records < 0) records = benchmark.Number("records");
    EXPECT_EQ(benchmark.Number("records"), records) << "record counts must not vary";
    EXPECT_EQ(benchmark.Number("tasks_vanished"), 0);
    EXPECT_GT(benchmark.Number("bytes"), 8 * records);
    double usecs = benchmark.Number("usecs/record");
    EXPECT_GT(usecs, 0);
    // records/s is a rate over the same (manual) time.
    EXPECT_NEAR(benchmark.Number("records/s"), 1e6 / usecs, 1e6 / usecs * 0.01);
    bool mutex = absl::StrContains(name, "strategy:mutex");
    EXPECT_EQ(benchmark.Has("mutex_wait_share"), mutex);
    if (mutex) {
      EXPECT_GE(benchmark.Number("mutex_wait_share"), 0);
      EXPECT_LE(benchmark.Number("mutex_wait_share"), 1);
    }
    EXPECT_EQ(benchmark.Number("workers"), absl::EndsWith(name, "workers:1/manual_time") ? 1 : 2);
  }
  EXPECT_EQ(Entries(dir), 0);
  EXPECT_FALSE(testing::HasChildren());
  rmdir(dir.c_str());
}

TEST(SynthesizeBinary, SystemWorkloadRuns) {
  BinaryRun run =
      RunFamilyBinary(kBinary, {"--synthesize_workload=system", "--synthesize_sink=memory",
                                "--synthesize_workers=2", "--synthesize_strategy=atomic",
                                "--benchmark_min_time=0.01s"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_TRUE(run.json.ok()) << run.json.status();
  ASSERT_EQ(run.benchmarks.size(), 1u);
  EXPECT_TRUE(run.benchmarks[0].Timed()) << run.benchmarks[0].message;
  EXPECT_GT(run.benchmarks[0].Number("records"), 2);  // at least this test and the benchmark
}

TEST(SynthesizeBinary, BadFlagsExitTwoNamingTheFlagAndLeaveNothing) {
  std::string dir = MakeDir("bad");
  std::vector<BadFlag> cases;
  for (const std::string& flag : std::vector<std::string>{
           "--synthesize_workers=0", "--synthesize_workers=5000", "--synthesize_workers=two",
           "--synthesize_workers=-1", "--synthesize_processes=0", "--synthesize_threads=0",
           "--synthesize_exec_maps=-1", "--synthesize_data_maps=100000",
           "--synthesize_strategy=spinlock", "--synthesize_workload=everything",
           "--synthesize_sink=tape", "--synthesize_data=maybe", "--synthesize_namespaces=2",
           "--synthesize_comm=cmdline", "--synthesize_dir=" + dir + "/missing",
           "--synthesize_dir=/proc"}) {
    BadFlag bad{{flag, "--benchmark_min_time=0.01s"}, flag.substr(0, flag.find('='))};
    if (!absl::StartsWith(flag, "--synthesize_dir")) bad.args.push_back("--synthesize_dir=" + dir);
    cases.push_back(bad);
  }
  // More tasks than this process may create: the thread budget, before anything runs.
  cases.push_back({{"--synthesize_processes=100000", "--synthesize_threads=10000",
                    "--synthesize_workload=controlled", "--benchmark_min_time=0.01s"},
                   "--synthesize_processes=100000"});
  testing::ExpectUsageErrors(kBinary, cases);
  EXPECT_EQ(Entries(dir), 0);
  EXPECT_FALSE(testing::HasChildren());
  rmdir(dir.c_str());
}

bool IsTracepointKeeper(pid_t pid) {
  absl::StatusOr<std::string> comm = ReadTextFile(absl::StrCat("/proc/", pid, "/comm"));
  return comm.ok() && absl::StripAsciiWhitespace(*comm) == TracepointKeepAlive::kProcessName;
}

// The pids whose parent is `parent`, but for the tracepoint keep-alive (not the workload's).
std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> children;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return children;
  while (dirent* entry = readdir(proc)) {
    pid_t pid = std::atoi(entry->d_name);
    if (pid <= 0) continue;
    absl::StatusOr<std::string> text = ReadTextFile(absl::StrCat("/proc/", pid, "/status"));
    if (!text.ok()) continue;
    absl::StatusOr<ProcStatus> status = ParseProcStatus(*text);
    if (status.ok() && status->ppid == parent && !IsTracepointKeeper(pid)) {
      children.push_back(pid);
    }
  }
  closedir(proc);
  return children;
}

void ExpectNothingLeftAfter(int signal) {
  SCOPED_TRACE(absl::StrCat("signal ", signal));
  // The orphans come to us, so we can see how they ended.
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  std::string sink_dir = MakeDir("interrupted");
  std::string out_dir = MakeDir("out");
  pid_t binary = Spawn(
      {"--synthesize_workload=controlled", "--synthesize_sink=file", "--synthesize_strategy=mutex",
       "--synthesize_workers=1", "--synthesize_processes=4", "--synthesize_threads=3",
       "--synthesize_dir=" + sink_dir, "--benchmark_min_time=1000s"},
      out_dir);
  ASSERT_GT(binary, 0);
  std::vector<pid_t> tree;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    tree = ChildrenOf(binary);
    if (tree.size() == 4) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(tree.size(), 4u) << "the benchmark did not build its tree";
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // well into the run
  ASSERT_EQ(kill(binary, signal), 0);
  int status = 0;
  ASSERT_EQ(waitpid(binary, &status, 0), binary);
  if (signal == SIGKILL) {
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  } else {
    // The interrupt handler cleans up and exits with 128 + signal.
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + signal) << "status " << status;
  }
  // Either the benchmark reaped its children (its handler), or they died of
  // PR_SET_PDEATHSIG's SIGKILL and came to us.
  for (pid_t orphan : tree) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      int orphan_status = 0;
      pid_t reaped = waitpid(orphan, &orphan_status, WNOHANG);
      if (reaped == orphan) {
        EXPECT_TRUE(WIFSIGNALED(orphan_status) && WTERMSIG(orphan_status) == SIGKILL);
        break;
      }
      if (reaped < 0) {
        EXPECT_EQ(errno, ECHILD);
        EXPECT_EQ(kill(orphan, 0), -1) << "pid " << orphan << " survived";
        break;
      }
      ASSERT_LT(std::chrono::steady_clock::now(), until) << "pid " << orphan << " survived";
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  // Google Benchmark calls the benchmark function again for each iteration-count probe,
  // so the tree alive at the signal may be a newer one than `tree`: whatever came to us
  // must have been killed, and nothing may remain. The tracepoint keep-alive ends by
  // itself when the benchmark's end of its pipe closes (exit 0), or was killed with it.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    int orphan_status = 0;
    pid_t reaped = waitpid(-1, &orphan_status, WNOHANG);
    if (reaped < 0) break;  // ECHILD: nothing left
    if (reaped > 0) {
      // Exit 0: the keep-alive saw its pipe close. kChildOrphaned: a child forked as the
      // signal came, whose parent was gone before it could tie its life to it.
      const bool ended =
          (WIFEXITED(orphan_status) &&
           (WEXITSTATUS(orphan_status) == 0 || WEXITSTATUS(orphan_status) == kChildOrphaned)) ||
          (WIFSIGNALED(orphan_status) && WTERMSIG(orphan_status) == SIGKILL);
      EXPECT_TRUE(ended) << "pid " << reaped << " status " << orphan_status;
      continue;
    }
    ASSERT_LT(std::chrono::steady_clock::now(), until) << "a child of the benchmark survived";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(Entries(sink_dir), 0) << "the file sink left files in " << sink_dir;
  EXPECT_FALSE(testing::HasChildren());
  prctl(PR_SET_CHILD_SUBREAPER, 0);
  rmdir(sink_dir.c_str());
  unlink((out_dir + "/stdout").c_str());
  unlink((out_dir + "/stderr").c_str());
  rmdir(out_dir.c_str());
}

TEST(SynthesizeBinary, InterruptedRunLeavesNoChildrenNorFiles) { ExpectNothingLeftAfter(SIGINT); }
TEST(SynthesizeBinary, TerminatedRunLeavesNoChildrenNorFiles) { ExpectNothingLeftAfter(SIGTERM); }
TEST(SynthesizeBinary, KilledRunLeavesNoChildrenNorFiles) { ExpectNothingLeftAfter(SIGKILL); }

}  // namespace
}  // namespace perfscale
