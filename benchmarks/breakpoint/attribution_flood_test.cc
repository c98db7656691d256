// The attributed counters count the benchmark's own tasks only: while another process
// (//testing/common:ipi_flood) floods the machine with TLB-shootdown IPIs, the
// ipis_sent/op and xcalls/op of BM_BreakpointEnable/passive:8/active:0/
// placement:other_cpus stay within 2% of a quiet run although the flood sent thousands
// of IPIs meanwhile (it counts its own), and the machine-wide ipis_system/op of both
// runs is printed. Counts, not times, are compared: they hardly depend on load.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "lib/cpu_set.h"
#include "testing/common/benchmark_json.h"
#include "testing/common/run_command.h"

extern char** environ;

namespace perfscale {
namespace {

using ::perfscale::testing::ParseBenchmarkJson;

struct Counts {
  double ipis_sent = 0;
  double xcalls = 0;
  double ipis_system = 0;
};

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

// Medians over 5 repetitions of the one benchmark.
Counts RunEnable() {
  ::perfscale::testing::CommandResult result = ::perfscale::testing::RunRunfile(
      "benchmarks/breakpoint/breakpoint",
      {"--benchmark_filter=BM_BreakpointEnable", "--breakpoint_passive=8", "--breakpoint_active=0",
       "--breakpoint_placement=other_cpus", "--benchmark_min_time=0.1s",
       "--benchmark_repetitions=5", "--benchmark_report_aggregates_only=false",
       "--benchmark_format=json"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  absl::StatusOr<nlohmann::json> doc = ParseBenchmarkJson(result.out);
  EXPECT_TRUE(doc.ok()) << doc.status();
  std::vector<double> sent, xcalls, system;
  if (!doc.ok() || !doc->contains("benchmarks")) return {};
  for (const nlohmann::json& run : doc->at("benchmarks")) {
    if (run.value("run_type", "") != "iteration") continue;
    EXPECT_FALSE(run.contains("error_message")) << run.value("error_message", "");
    EXPECT_FALSE(run.contains("skip_message")) << run.value("skip_message", "");
    for (auto [key, into] : {std::pair{"ipis_sent/op", &sent}, std::pair{"xcalls/op", &xcalls},
                             std::pair{"ipis_system/op", &system}}) {
      EXPECT_TRUE(run.contains(key)) << "no " << key;
      if (run.contains(key)) into->push_back(run.at(key).get<double>());
    }
  }
  return {Median(sent), Median(xcalls), Median(system)};
}

TEST(AttributionFloodTest, AttributedCountsIgnoreAnotherProcesssIpis) {
  absl::StatusOr<std::vector<int>> online = OnlineCpus();
  ASSERT_TRUE(online.ok());
  if (online->size() < 2) GTEST_SKIP() << "needs 2 online CPUs";
  Counts quiet = RunEnable();
  if (quiet.xcalls == 0) GTEST_SKIP() << "no attributed xcalls here (tracefs, permission)";

  std::string flood = ::perfscale::testing::RunfilePath("testing/common/ipi_flood");
  char* argv[] = {flood.data(), nullptr};
  int out[2];
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  pid_t pid = -1;
  ASSERT_EQ(posix_spawn(&pid, flood.c_str(), &actions, nullptr, argv, environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  usleep(200 * 1000);  // its threads are up and flooding
  Counts flooded = RunEnable();
  kill(pid, SIGTERM);
  std::string said;
  char buffer[512];
  for (ssize_t n; (n = read(out[0], buffer, sizeof(buffer))) > 0;) said.append(buffer, n);
  close(out[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  std::printf("%s", said.c_str());
  // The flood really flooded while the benchmark ran: IPIs it counted as its own.
  size_t at = said.find("sent ");
  ASSERT_NE(at, std::string::npos) << said;
  EXPECT_GT(std::strtoull(said.c_str() + at + 5, nullptr, 10), 1000u) << said;

  for (const auto& [what, counts] : {std::pair{"quiet", quiet}, std::pair{"flooded", flooded}}) {
    std::printf("%s: ipis_sent/op %.3f xcalls/op %.3f ipis_system/op %.3f\n", what,
                counts.ipis_sent, counts.xcalls, counts.ipis_system);
  }
  // 2 per inherited copy per toggle (docs/counters.md): 16 for 8 copies.
  EXPECT_NEAR(quiet.xcalls, 16.0, 16.0 * 0.02);
  EXPECT_NEAR(flooded.xcalls, quiet.xcalls, quiet.xcalls * 0.02);
  // An IPI goes only to a target that is not polling in idle (docs/counters.md): at most one per
  // queued call, fewer on a quiet machine whose other CPU idles.
  EXPECT_LE(quiet.ipis_sent, quiet.xcalls * 1.02);
  EXPECT_LE(flooded.ipis_sent, flooded.xcalls * 1.02);
  // ipis_system/op grows by the flood's IPIs during each toggle, but on a machine that
  // other work already keeps busy with IPIs that growth is within their noise: printed,
  // not asserted (docs/counters.md).
}

}  // namespace
}  // namespace perfscale
