#include "benchmarks/synthesize/process_tree.h"

#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "benchmarks/synthesize/proc_maps.h"
#include "benchmarks/synthesize/proc_status.h"
#include "gtest/gtest.h"
#include "lib/file_reader.h"
#include "lib/interrupt_cleanup.h"
#include "testing/common/process_state.h"

namespace perfscale {
namespace {

std::vector<pid_t> Tasks(pid_t pid) {
  std::vector<pid_t> tids;
  DIR* dir = opendir(absl::StrCat("/proc/", pid, "/task").c_str());
  if (dir == nullptr) return tids;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') tids.push_back(std::atoi(entry->d_name));
  }
  closedir(dir);
  std::sort(tids.begin(), tids.end());
  return tids;
}

bool IsGoneOrZombie(pid_t pid) {
  absl::StatusOr<std::string> stat = ReadTextFile(absl::StrCat("/proc/", pid, "/stat"));
  if (!stat.ok()) return true;
  size_t paren = stat->rfind(')');
  return paren != std::string::npos && paren + 2 < stat->size() && (*stat)[paren + 2] == 'Z';
}

TEST(ProcessTree, BuildsExactlyWhatWasAskedAndReapsIt) {
  testing::ProcessState before = *testing::CaptureProcessState();
  ProcessTreeSpec spec;
  spec.processes = 3;
  spec.threads = 4;
  spec.exec_mappings = 5;
  spec.data_mappings = 2;
  absl::StatusOr<std::unique_ptr<ProcessTree>> tree = ProcessTree::Start(spec);
  ASSERT_TRUE(tree.ok()) << tree.status();
  std::vector<pid_t> pids = (*tree)->pids();
  ASSERT_EQ(pids.size(), 3u);
  for (size_t i = 0; i < pids.size(); ++i) {
    pid_t pid = pids[i];
    std::vector<pid_t> tids = Tasks(pid);
    ASSERT_EQ(tids.size(), 4u) << "pid " << pid;
    std::set<std::string> names;
    for (pid_t tid : tids) {
      absl::StatusOr<std::string> comm =
          ReadTextFile(absl::StrCat("/proc/", pid, "/task/", tid, "/comm"));
      ASSERT_TRUE(comm.ok());
      names.insert(std::string(*ParseCommText(*comm)));
      std::string status_text =
          *ReadTextFile(absl::StrCat("/proc/", pid, "/task/", tid, "/status"));
      absl::StatusOr<ProcStatus> status = ParseProcStatus(status_text);
      ASSERT_TRUE(status.ok());
      EXPECT_EQ(status->tgid, pid);
      EXPECT_EQ(status->ppid, getpid());
    }
    int p = static_cast<int>(i);
    EXPECT_EQ(names,
              (std::set<std::string>{ProcessTree::TaskName(p, 0), ProcessTree::TaskName(p, 1),
                                     ProcessTree::TaskName(p, 2), ProcessTree::TaskName(p, 3)}));
    std::string maps_text = *ReadTextFile(absl::StrCat("/proc/", pid, "/maps"));
    absl::StatusOr<std::vector<MapsEntry>> maps = ParseMaps(maps_text);  // views into it
    ASSERT_TRUE(maps.ok()) << maps.status();
    int exec = 0, data = 0;
    for (const MapsEntry& entry : *maps) {
      if (!absl::StrContains(entry.path, ProcessTree::kMemfdName)) continue;
      exec += entry.executable;
      data += entry.readable && entry.writable && !entry.executable;
    }
    EXPECT_EQ(exec, 5);
    EXPECT_EQ(data, 2);
  }
  EXPECT_EQ(ProcessTree::TaskName(0, 0), "psyn0");
  EXPECT_EQ(ProcessTree::TaskName(12, 3), "psyn12.3");

  (*tree)->Stop();
  (*tree)->Stop();  // idempotent
  EXPECT_TRUE((*tree)->pids().empty());
  for (pid_t pid : pids) {
    EXPECT_EQ(kill(pid, 0), -1) << pid << " still exists";
    EXPECT_EQ(errno, ESRCH);
  }
  tree->reset();
  EXPECT_EQ(*testing::CaptureProcessState(), before);
}

TEST(ProcessTree, ChildrenHoldNoneOfOurFiles) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ProcessTreeSpec spec;
  spec.processes = 2;
  spec.threads = 2;
  absl::StatusOr<std::unique_ptr<ProcessTree>> tree = ProcessTree::Start(spec);
  ASSERT_TRUE(tree.ok()) << tree.status();
  close(fds[1]);
  // Had a child kept the write end, this would block instead of seeing EOF.
  char byte;
  EXPECT_EQ(read(fds[0], &byte, 1), 0);
  close(fds[0]);
  for (pid_t pid : (*tree)->pids()) {
    DIR* dir = opendir(absl::StrCat("/proc/", pid, "/fd").c_str());
    ASSERT_NE(dir, nullptr);
    std::set<int> open_fds;
    while (dirent* entry = readdir(dir)) {
      if (entry->d_name[0] != '.') open_fds.insert(std::atoi(entry->d_name));
    }
    closedir(dir);
    EXPECT_EQ(open_fds, (std::set<int>{0, 1, 2})) << "pid " << pid;
  }
}

TEST(ProcessTree, RegisteredForTheInterruptHandler) {
  ProcessTreeSpec spec;
  spec.processes = 3;
  absl::StatusOr<std::unique_ptr<ProcessTree>> tree = ProcessTree::Start(spec);
  ASSERT_TRUE(tree.ok()) << tree.status();
  std::vector<pid_t> pids = (*tree)->pids();
  // What SIGINT's handler runs: every child killed and reaped.
  RunInterruptCleanupForTest();
  for (pid_t pid : pids) {
    EXPECT_EQ(kill(pid, 0), -1) << pid;
    EXPECT_EQ(errno, ESRCH);
  }
  EXPECT_FALSE(testing::HasChildren());
}  // Stop() then finds them gone: harmless.

TEST(ProcessTree, DestructorReaps) {
  std::vector<pid_t> pids;
  {
    ProcessTreeSpec spec;
    spec.processes = 2;
    spec.threads = 2;
    absl::StatusOr<std::unique_ptr<ProcessTree>> tree = ProcessTree::Start(spec);
    ASSERT_TRUE(tree.ok()) << tree.status();
    pids = (*tree)->pids();
  }
  for (pid_t pid : pids) EXPECT_EQ(kill(pid, 0), -1) << pid;
  EXPECT_FALSE(testing::HasChildren());
}

TEST(ProcessTree, IntactUntilOneOfItsProcessesEnds) {
  ProcessTreeSpec spec;
  spec.processes = 3;
  spec.threads = 2;
  absl::StatusOr<std::unique_ptr<ProcessTree>> tree = ProcessTree::Start(spec);
  ASSERT_TRUE(tree.ok()) << tree.status();
  EXPECT_TRUE((*tree)->Intact());
  EXPECT_TRUE((*tree)->Intact()) << "asking changed it";
  const pid_t victim = (*tree)->pids()[1];
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  bool intact = true;
  for (int i = 0; i < 2000 && intact; ++i) {  // the kill lands asynchronously
    intact = (*tree)->Intact();
    if (intact) usleep(1000);
  }
  EXPECT_FALSE(intact) << "process " << victim << " was killed";
  EXPECT_FALSE((*tree)->Intact()) << "intact again once the dead one was reaped";
  (*tree)->Stop();
  EXPECT_FALSE((*tree)->Intact()) << "a stopped tree";
  EXPECT_FALSE(testing::HasChildren());
}

TEST(ProcessTree, ValidateRejectsBadSpecs) {
  ProcessTreeSpec spec;
  spec.processes = 0;
  EXPECT_EQ(ProcessTree::Validate(spec).code(), absl::StatusCode::kInvalidArgument);
  spec.processes = kMaxTreeProcesses + 1;
  EXPECT_FALSE(ProcessTree::Validate(spec).ok());
  spec.processes = 1;
  spec.threads = 0;
  EXPECT_FALSE(ProcessTree::Validate(spec).ok());
  spec.threads = kMaxTreeThreads + 1;
  EXPECT_FALSE(ProcessTree::Validate(spec).ok());
  spec.threads = 1;
  spec.exec_mappings = -1;
  EXPECT_FALSE(ProcessTree::Validate(spec).ok());
  spec.exec_mappings = kMaxTreeMappings + 1;
  EXPECT_FALSE(ProcessTree::Validate(spec).ok());
  spec.exec_mappings = 1;
  EXPECT_TRUE(ProcessTree::Validate(spec).ok());
  // Start validates too, and leaves nothing behind when it refuses.
  spec.processes = 0;
  EXPECT_FALSE(ProcessTree::Start(spec).ok());
  EXPECT_FALSE(testing::HasChildren());
}

TEST(ProcessTree, AChildThatFailsIsReportedAndEverythingIsReaped) {
  // A limit on the address space makes the children's mmap fail, which they report
  // with the step that failed.
  testing::ProcessState before = *testing::CaptureProcessState();
  pid_t helper = fork();
  ASSERT_GE(helper, 0);
  if (helper == 0) {
    // Room for the helper's own small allocations, not for a child's 16 MiB of
    // mappings. Set in the helper only, so it applies to the children it forks.
    absl::StatusOr<std::string> text = ReadTextFile("/proc/self/status");
    if (!text.ok()) _exit(10);
    size_t at = text->find("VmSize:");
    if (at == std::string::npos) _exit(10);
    rlimit limit{};
    getrlimit(RLIMIT_AS, &limit);
    limit.rlim_cur = (std::strtoull(text->c_str() + at + 7, nullptr, 10) + 4096) * 1024;
    if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(10);
    ProcessTreeSpec spec;
    spec.processes = 3;
    spec.threads = 1;
    spec.exec_mappings = 2048;
    absl::StatusOr<std::unique_ptr<ProcessTree>> tree = ProcessTree::Start(spec);
    if (tree.ok()) _exit(11);
    if (!absl::StrContains(tree.status().message(), "mmap")) _exit(12);
    // Every child was reaped: none left to wait for.
    if (waitpid(-1, nullptr, WNOHANG) != -1 || errno != ECHILD) _exit(13);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(helper, &status, 0), helper);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: setrlimit, 11: started, 12: message, 13: child left";
  EXPECT_EQ(*testing::CaptureProcessState(), before);
}

// A helper process creates a tree and is then killed by `signal`; its children must die
// too (PR_SET_PDEATHSIG). We make ourselves a subreaper so that the orphans come to us
// and we can see how they ended.
void ExpectChildrenDieWithTheirParent(int signal) {
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t helper = fork();
  ASSERT_GE(helper, 0);
  if (helper == 0) {
    close(fds[0]);
    ProcessTreeSpec spec;
    spec.processes = 4;
    spec.threads = 3;
    absl::StatusOr<std::unique_ptr<ProcessTree>> tree = ProcessTree::Start(spec);
    if (!tree.ok()) _exit(1);
    for (pid_t pid : (*tree)->pids()) {
      if (write(fds[1], &pid, sizeof(pid)) != sizeof(pid)) _exit(2);
    }
    close(fds[1]);
    for (;;) pause();
  }
  close(fds[1]);
  std::vector<pid_t> grandchildren;
  pid_t pid;
  // Exactly four: no EOF to wait for if a child kept the pipe (they must not, see below).
  while (grandchildren.size() < 4 && read(fds[0], &pid, sizeof(pid)) == sizeof(pid)) {
    grandchildren.push_back(pid);
  }
  close(fds[0]);
  ASSERT_EQ(grandchildren.size(), 4u);
  ASSERT_EQ(kill(helper, signal), 0);
  int status = 0;
  ASSERT_EQ(waitpid(helper, &status, 0), helper);
  EXPECT_TRUE(WIFSIGNALED(status));
  for (pid_t orphan : grandchildren) {
    int orphan_status = 0;
    ASSERT_EQ(waitpid(orphan, &orphan_status, 0), orphan) << "pid " << orphan;
    EXPECT_TRUE(WIFSIGNALED(orphan_status) && WTERMSIG(orphan_status) == SIGKILL);
    EXPECT_TRUE(IsGoneOrZombie(orphan));
  }
  EXPECT_FALSE(testing::HasChildren());
  prctl(PR_SET_CHILD_SUBREAPER, 0);
}

TEST(ProcessTree, ChildrenDieWhenTheBenchmarkIsInterrupted) {
  ExpectChildrenDieWithTheirParent(SIGINT);
}
TEST(ProcessTree, ChildrenDieWhenTheBenchmarkIsTerminated) {
  ExpectChildrenDieWithTheirParent(SIGTERM);
}
TEST(ProcessTree, ChildrenDieWhenTheBenchmarkIsKilled) {
  ExpectChildrenDieWithTheirParent(SIGKILL);
}

}  // namespace
}  // namespace perfscale
