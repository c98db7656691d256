#include "benchmarks/synthesize/proc_status.h"

#include <string>

#include "gtest/gtest.h"
#include "lib/file_reader.h"

namespace perfscale {
namespace {

constexpr char kUserTask[] =
    "Name:\tbash\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t1234\nNgid:\t0\n"
    "Pid:\t1236\nPPid:\t1000\nTracerPid:\t0\nKthread:\t0\nVmPeak:\t    3060 kB\n"
    "Threads:\t3\n";
constexpr char kKernelThread[] =
    "Name:\tkthreadd\nUmask:\t0000\nState:\tS (sleeping)\nTgid:\t2\nPid:\t2\nPPid:\t0\n"
    "Kthread:\t1\nThreads:\t1\n";
// Kernels before the Kthread line: perf's rule, no VmPeak but a Threads line.
constexpr char kOldKernelThread[] =
    "Name:\tkworker/0:1\nState:\tI (idle)\nTgid:\t17\nPid:\t17\nPPid:\t2\nThreads:\t1\n";
constexpr char kOldUserTask[] =
    "Name:\tcat\nTgid:\t40\nPid:\t40\nPPid:\t1\nVmPeak:\t 100 kB\nThreads:\t1\n";

TEST(ParseProcStatus, UserTask) {
  absl::StatusOr<ProcStatus> status = ParseProcStatus(kUserTask);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->name, "bash");
  EXPECT_EQ(status->tgid, 1234);
  EXPECT_EQ(status->ppid, 1000);
  EXPECT_FALSE(status->kernel_thread);
}

TEST(ParseProcStatus, KernelThreads) {
  absl::StatusOr<ProcStatus> status = ParseProcStatus(kKernelThread);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->name, "kthreadd");
  EXPECT_EQ(status->ppid, 0);
  EXPECT_TRUE(status->kernel_thread);
  status = ParseProcStatus(kOldKernelThread);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->name, "kworker/0:1");
  EXPECT_TRUE(status->kernel_thread);
  status = ParseProcStatus(kOldUserTask);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_FALSE(status->kernel_thread);
}

TEST(ParseProcStatus, NameKeepsSpacesAndEscapes) {
  // The kernel escapes a newline in the name as "\n"; perf keeps it as it is.
  absl::StatusOr<ProcStatus> status =
      ParseProcStatus("Name:\tmy prog\\n\nTgid:\t5\nPPid:\t1\nVmPeak:\t1 kB\n");
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->name, "my prog\\n");
}

TEST(ParseProcStatus, EmptyNameIsAllowed) {
  absl::StatusOr<ProcStatus> status = ParseProcStatus("Name:\t\nTgid:\t5\nPPid:\t1\n");
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->name, "");
}

TEST(ParseProcStatus, TruncatedAfterTheNeededFields) {
  // perf reads 4095 bytes; what comes after the fields it needs may be cut anywhere.
  absl::StatusOr<ProcStatus> status =
      ParseProcStatus("Name:\tx\nTgid:\t7\nPPid:\t3\nKthread:\t0\nVmPe");
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->tgid, 7);
  EXPECT_FALSE(status->kernel_thread);
}

TEST(ParseProcStatus, MalformedInput) {
  const char* bad[] = {
      "",
      "garbage without colons",
      "Tgid:\t5\nPPid:\t1\n",                         // no Name
      "Name:\tx\nPPid:\t1\n",                         // no Tgid
      "Name:\tx\nTgid:\t5\n",                         // no PPid
      "Name:\tx\nTgid:\t\nPPid:\t1\n",                // empty Tgid
      "Name:\tx\nTgid:\t-5\nPPid:\t1\n",              // negative
      "Name:\tx\nTgid:\t5x\nPPid:\t1\n",              // trailing junk
      "Name:\tx\nTgid:\t5\nPPid:\tabc\n",             // not a number
      "Name:\tx\nTgid:\t99999999999\nPPid:\t1\n",     // overflows pid_t
      "Name:\tx\nTgid:\t2147483648\nPPid:\t1\n",      // just past INT32_MAX
      "Name:\tx\nTgid:\t5\nPPid:\t1\nKthread:\t2\n",  // not 0 or 1
      "Name:\tx\nTgid:\t5\nPPid:\t1\nKthread:\t\n",
      "Name:\tx\nTgid:5 6\nPPid:\t1\n",
  };
  for (const char* text : bad) {
    absl::StatusOr<ProcStatus> status = ParseProcStatus(text);
    EXPECT_FALSE(status.ok()) << "accepted: " << text;
    if (!status.ok()) {
      EXPECT_EQ(status.status().code(), absl::StatusCode::kInvalidArgument);
    }
  }
}

TEST(ParseProcStatus, NulBytesDoNotCrash) {
  std::string text("Name:\tx\0y\nTgid:\t5\nPPid:\t1\n", 26);
  absl::StatusOr<ProcStatus> status = ParseProcStatus(text);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->tgid, 5);
}

TEST(ParseProcStatus, ThisProcess) {
  absl::StatusOr<std::string> text = ReadTextFile("/proc/self/status");
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<ProcStatus> status = ParseProcStatus(*text);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->tgid, getpid());
  EXPECT_EQ(status->ppid, getppid());
  EXPECT_FALSE(status->kernel_thread);
}

TEST(ParseProcStatus, KernelThreadOfThisKernel) {
  // kthreadd is pid 2 in the initial pid namespace; elsewhere there may be none.
  absl::StatusOr<std::string> text = ReadTextFile("/proc/2/status");
  if (!text.ok()) GTEST_SKIP() << "no /proc/2 in this pid namespace";
  absl::StatusOr<ProcStatus> status = ParseProcStatus(*text);
  ASSERT_TRUE(status.ok()) << status.status();
  if (status->name != "kthreadd") GTEST_SKIP() << "pid 2 is " << status->name;
  EXPECT_TRUE(status->kernel_thread);
}

TEST(ParseCommText, Valid) {
  EXPECT_EQ(*ParseCommText("bash\n"), "bash");
  EXPECT_EQ(*ParseCommText("no newline"), "no newline");
  EXPECT_EQ(*ParseCommText("\n"), "");
  EXPECT_EQ(*ParseCommText("fifteen-chars-x\n"), "fifteen-chars-x");
}

TEST(ParseCommText, Malformed) {
  EXPECT_FALSE(ParseCommText("sixteen-chars-xy\n").ok());
  EXPECT_FALSE(ParseCommText("two\nlines\n").ok());
  EXPECT_FALSE(ParseCommText(std::string("nul\0in", 6)).ok());
  EXPECT_FALSE(ParseCommText(std::string(4096, 'a')).ok());
}

}  // namespace
}  // namespace perfscale
