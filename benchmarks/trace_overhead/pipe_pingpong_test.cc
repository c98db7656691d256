#include "benchmarks/trace_overhead/pipe_pingpong.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/cpu_set.h"
#include "lib/file_reader.h"
#include "testing/common/process_state.h"

namespace perfscale {
namespace {

using ::testing::HasSubstr;
using Peer = PipePingPong::Peer;

// Alive and not a zombie: a killed orphan may wait a while for its new parent to reap it.
bool ProcessRuns(pid_t pid) {
  absl::StatusOr<std::string> stat = ReadTextFile(absl::StrCat("/proc/", pid, "/stat"));
  if (!stat.ok()) return false;
  size_t paren = stat->rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat->size()) return false;
  char state = (*stat)[paren + 2];
  return state != 'Z' && state != 'X';
}

class PipePingPongTest : public ::testing::TestWithParam<Peer> {};

TEST_P(PipePingPongTest, BouncesTheTokenAndLeavesNothingBehind) {
  absl::StatusOr<testing::ProcessState> before = testing::CaptureProcessState();
  ASSERT_TRUE(before.ok()) << before.status();
  {
    absl::StatusOr<std::unique_ptr<PipePingPong>> pingpong = PipePingPong::Start(GetParam());
    ASSERT_TRUE(pingpong.ok()) << pingpong.status();
    EXPECT_GT((*pingpong)->peer_id(), 0);
    EXPECT_NE((*pingpong)->peer_id(), getpid());
    for (int i = 0; i < 1000; ++i) ASSERT_TRUE((*pingpong)->RoundTrip().ok()) << i;
    EXPECT_TRUE((*pingpong)->Stop().ok());
    EXPECT_TRUE((*pingpong)->Stop().ok());  // idempotent
    EXPECT_TRUE(absl::IsFailedPrecondition((*pingpong)->RoundTrip()));
  }
  EXPECT_EQ(*testing::CaptureProcessStateSettled(*before), *before);
}

TEST_P(PipePingPongTest, DestructorAloneEndsAndReapsThePeer) {
  absl::StatusOr<testing::ProcessState> before = testing::CaptureProcessState();
  ASSERT_TRUE(before.ok()) << before.status();
  pid_t peer = 0;
  {
    absl::StatusOr<std::unique_ptr<PipePingPong>> pingpong = PipePingPong::Start(GetParam());
    ASSERT_TRUE(pingpong.ok()) << pingpong.status();
    peer = (*pingpong)->peer_id();
    ASSERT_TRUE((*pingpong)->RoundTrip().ok());
  }
  EXPECT_EQ(*testing::CaptureProcessStateSettled(*before), *before);
  if (GetParam() == Peer::kProcess) {
    EXPECT_FALSE(ProcessRuns(peer));
  }
}

TEST_P(PipePingPongTest, PinsThePeer) {
  absl::StatusOr<CpuMask> allowed = GetAffinity();
  ASSERT_TRUE(allowed.ok());
  std::vector<int> cpus = allowed->Cpus();
  const int target = cpus.back();
  absl::StatusOr<std::unique_ptr<PipePingPong>> pingpong =
      PipePingPong::Start(GetParam(), {target});
  ASSERT_TRUE(pingpong.ok()) << pingpong.status();
  ASSERT_TRUE((*pingpong)->RoundTrip().ok());  // the peer has pinned itself by now
  absl::StatusOr<CpuMask> peer_mask = GetAffinity((*pingpong)->peer_id());
  ASSERT_TRUE(peer_mask.ok()) << peer_mask.status();
  EXPECT_EQ(peer_mask->Cpus(), std::vector<int>{target});
  // The caller's own mask is untouched.
  EXPECT_EQ(GetAffinity()->Cpus(), cpus);
  EXPECT_TRUE((*pingpong)->Stop().ok());
}

INSTANTIATE_TEST_SUITE_P(Peers, PipePingPongTest, ::testing::Values(Peer::kProcess, Peer::kThread),
                         [](const ::testing::TestParamInfo<Peer>& param_info) {
                           return param_info.param == Peer::kProcess ? "Process" : "Thread";
                         });

TEST(PipePingPongProcessTest, KilledPeerIsAnErrorNotAHangOrSigpipe) {
  absl::StatusOr<testing::ProcessState> before = testing::CaptureProcessState();
  ASSERT_TRUE(before.ok()) << before.status();
  {
    absl::StatusOr<std::unique_ptr<PipePingPong>> pingpong = PipePingPong::Start(Peer::kProcess);
    ASSERT_TRUE(pingpong.ok()) << pingpong.status();
    ASSERT_TRUE((*pingpong)->RoundTrip().ok());
    ASSERT_EQ(kill((*pingpong)->peer_id(), SIGKILL), 0);
    // The write lands in the pipe (we hold its read end), the read sees EOF.
    absl::Status trip = (*pingpong)->RoundTrip();
    EXPECT_TRUE(absl::IsFailedPrecondition(trip)) << trip;
    absl::Status stopped = (*pingpong)->Stop();
    EXPECT_FALSE(stopped.ok());
    EXPECT_THAT(std::string(stopped.message()), HasSubstr("signal 9"));
  }
  EXPECT_EQ(*testing::CaptureProcessStateSettled(*before), *before);
}

TEST(PipePingPongProcessTest, ImpossiblePinningIsReportedByStop) {
  // A CPU that is not online: the child's sched_setaffinity fails and it says so.
  absl::StatusOr<std::vector<int>> possible = PossibleCpus();
  ASSERT_TRUE(possible.ok());
  absl::StatusOr<std::unique_ptr<PipePingPong>> pingpong =
      PipePingPong::Start(Peer::kProcess, {possible->back() + 1});
  ASSERT_TRUE(pingpong.ok()) << pingpong.status();
  EXPECT_TRUE(absl::IsFailedPrecondition((*pingpong)->RoundTrip()));
  absl::Status stopped = (*pingpong)->Stop();
  EXPECT_THAT(std::string(stopped.message()), HasSubstr("sched_setaffinity"));
  EXPECT_FALSE(testing::HasChildren());
}

TEST(PipePingPongProcessTest, PeerDiesWithTheThreadThatStartedIt) {
  // A helper process starts a ping-pong and is then killed without any cleanup; the
  // peer must go too (PR_SET_PDEATHSIG), not linger as an orphan.
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  pid_t helper = fork();
  ASSERT_GE(helper, 0);
  if (helper == 0) {
    close(report[0]);
    absl::StatusOr<std::unique_ptr<PipePingPong>> pingpong = PipePingPong::Start(Peer::kProcess);
    if (!pingpong.ok() || !(*pingpong)->RoundTrip().ok()) _exit(1);
    pid_t peer = (*pingpong)->peer_id();
    ssize_t ignored = write(report[1], &peer, sizeof(peer));
    (void)ignored;
    pause();  // killed here
    _exit(0);
  }
  close(report[1]);
  pid_t peer = 0;
  ASSERT_EQ(read(report[0], &peer, sizeof(peer)), static_cast<ssize_t>(sizeof(peer)));
  close(report[0]);
  ASSERT_GT(peer, 0);
  kill(helper, SIGKILL);
  ASSERT_EQ(waitpid(helper, nullptr, 0), helper);
  // The peer was the helper's child: it is killed, then reparented; poll until it no
  // longer runs.
  bool gone = false;
  for (int i = 0; i < 2000 && !gone; ++i) {
    gone = !ProcessRuns(peer);
    if (!gone) usleep(1000);
  }
  EXPECT_TRUE(gone) << "peer " << peer << " outlived its parent";
}

}  // namespace
}  // namespace perfscale
