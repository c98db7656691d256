// The suite plan (fixed counts where untimed work dominates, the filter narrowed to the
// selection, durations) and the progress display (plain and live lines, names without
// the plan's segments).
#include "benchmarks/harness/suite_plan.h"

#include <cstdio>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "benchmarks/harness/family.h"
#include "benchmarks/harness/flags.h"
#include "benchmarks/harness/progress.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace perfscale {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ParseDuration, TakesSecondsMinutesAndHours) {
  EXPECT_EQ(*ParseDuration("90"), 90);
  EXPECT_EQ(*ParseDuration("90s"), 90);
  EXPECT_EQ(*ParseDuration("10m"), 600);
  EXPECT_EQ(*ParseDuration("1h"), 3600);
  EXPECT_EQ(*ParseDuration("2.5m"), 150);
}

TEST(ParseDuration, RejectsWhatIsNotAPositiveDuration) {
  for (const char* bad : {"", "0", "-5", "m", "10x", "ten", "9999h"}) {
    EXPECT_FALSE(ParseDuration(bad).ok()) << bad;
  }
}

TEST(FormatClock, MinutesAndHours) {
  EXPECT_EQ(FormatClock(0), "0:00");
  EXPECT_EQ(FormatClock(75.4), "1:15");
  EXPECT_EQ(FormatClock(3725), "1:02:05");
}

// What a Progress wrote, through a memory stream.
class Captured {
 public:
  Captured() : file_(open_memstream(&data_, &size_)) {}
  ~Captured() {
    std::fclose(file_);
    std::free(data_);
  }
  std::FILE* file() { return file_; }
  std::string text() {
    std::fflush(file_);
    return std::string(data_, size_);
  }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
  std::FILE* file_;
};

const std::vector<PlannedRun> kRuns = {{"BM_A/real_time", 10}, {"BM_B/real_time", 30}};

TEST(Progress, PlainLinesSayKOfNAndTimeLeftThenDone) {
  Captured out;
  Progress progress(kRuns, out.file(), /*live=*/false);
  progress.Started("BM_A");             // the first line comes at once
  progress.Finished("BM_A/real_time");  // within 10 s of the last line: none
  progress.Started("BM_B");
  progress.Finished("BM_B/real_time");
  progress.Done();
  std::string text = out.text();
  EXPECT_THAT(text, HasSubstr("progress: [0/2] 0:00 elapsed, about 0:40 left (now: BM_A)\n"));
  EXPECT_THAT(text, Not(HasSubstr("[1/2]")));
  EXPECT_THAT(text, Not(HasSubstr("[2/2]")));
  EXPECT_THAT(text, HasSubstr("done: 2 of 2 benchmarks in 0:00 (planned 0:40)\n"));
  EXPECT_THAT(text, Not(HasSubstr("\r")));
}

TEST(Progress, RepetitionsAndTheirAggregatesAreOneBenchmark) {
  Captured out;
  Progress progress(kRuns, out.file(), /*live=*/false);
  progress.Finished("BM_A/real_time");  // its repetitions
  progress.Finished("BM_A/real_time");  // then its mean, median, stddev, cv
  progress.Done();
  EXPECT_THAT(out.text(), HasSubstr("done: 1 of 2 benchmarks"));
}

TEST(Progress, LiveLineIsRedrawnAndCleared) {
  Captured out;
  Progress progress(kRuns, out.file(), /*live=*/true);
  progress.Started("BM_A");
  EXPECT_EQ(out.text(), "\r\033[K[0/2] 0:00 elapsed, about 0:40 left: BM_A");
  progress.ClearLine();
  EXPECT_THAT(out.text(), testing::EndsWith("BM_A\r\033[K"));
  const std::string long_name = "BM_Long/" + std::string(200, 'x') + "/tail:1";
  progress.Started(long_name);  // not a terminal here: 80 columns
  std::string drawn = out.text().substr(out.text().rfind('\r'));
  EXPECT_EQ(drawn.size(), 4 + 79u);  // "\r\033[K" and 79 columns
  EXPECT_THAT(drawn, testing::EndsWith("xxx/tail:1"));
  EXPECT_THAT(drawn, HasSubstr("left: ...xxx"));
  progress.Finished("BM_A/real_time");
  EXPECT_THAT(out.text(), testing::EndsWith("[1/2] 0:00 elapsed, about 0:06 left"));  // 30 s x 0.2
}

// Records the names it is given.
class NameRecorder : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      names.push_back(run.benchmark_name());
      iterations.push_back(run.iterations);
    }
  }
  std::vector<std::string> names;
  std::vector<int64_t> iterations;
};

void BM_Cheap(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(state.iterations());
}

// Registered at startup, as a family would; planned in the test below.
int RegisterForTest() {
  // 0.1 ms measured, 2 ms untimed per iteration: a fixed count, 0.05 s / 2.1 ms = 23.
  RegisterPlanned(
      "BM_PlanFixed", TimeMode::kManual,
      [](const UnitCosts&) {
        return Cost{0, 1e-4, 2e-3};
      },
      [](benchmark::State& state) {
        for (auto _ : state) state.SetIterationTime(1e-4);
      });
  RegisterPlanned(
      "BM_PlanAdaptive", TimeMode::kReal,
      [](const UnitCosts&) {
        return Cost{0, 1e-7, 0};
      },
      BM_Cheap);
  return 0;
}
const int registered = RegisterForTest();

TEST(PlanSuite, FixedCountsWhereUntimedWorkDominatesAndOnlyTheSelectionRuns) {
  ASSERT_EQ(registered, 0);
  SetRunSelection("BM_Plan", /*list_only=*/false);
  PlanRequest request;
  request.min_time = 0.05;
  absl::StatusOr<SuitePlan> plan = PlanSuite(request);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->runs.size(), 2u);
  EXPECT_EQ(plan->runs[0].name, "BM_PlanFixed/manual_time");
  EXPECT_NEAR(plan->runs[0].estimate_seconds, 23 * 2.1e-3, 1e-9);
  EXPECT_THAT(plan->text, HasSubstr("plan: 2 benchmarks"));
  EXPECT_THAT(plan->text, HasSubstr("(1)"));  // one of them has a fixed count

  NameRecorder inner;
  PlannedReporter display(&inner, nullptr);
  EXPECT_EQ(benchmark::RunSpecifiedBenchmarks(&display), 2u);
  ASSERT_EQ(inner.names.size(), 2u);
  EXPECT_EQ(inner.names[0], "BM_PlanFixed/manual_time");  // no iterations:23 segment
  EXPECT_EQ(inner.iterations[0], 23);
  EXPECT_EQ(inner.names[1], "BM_PlanAdaptive/real_time");  // no min_time:0.050 segment
}

TEST(PlanSuite, PlanCpusNeedsPlan) {
  const char* argv[] = {"test", "--plan_cpus=256"};
  ASSERT_TRUE(ParseFlags(2, const_cast<char**>(argv)).ok());
  EXPECT_EQ(PlannedCpuCount(), 256);
  absl::StatusOr<SuitePlan> plan = PlanSuite(PlanRequest{});
  EXPECT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("--plan_cpus"));
  ResetFlagsForTest();
}

}  // namespace
}  // namespace perfscale
