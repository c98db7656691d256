// What a person watching a run sees besides Google Benchmark's table: benchmark k of N,
// the time elapsed and an estimate of the time left (the plan's estimates, corrected by
// how the finished benchmarks compared with theirs). On a terminal it is one live line
// on stderr, redrawn when a benchmark starts or ends and cleared before each table row;
// when stderr is a file or a pipe, a plain line (at a start or an end) at most every 10 s,
// and one at the end.
// stdout (the table, or --benchmark_format=json) and --benchmark_out never see it.
//
// PlannedReporter also takes the plan's run-control segments (min_time:, iterations:)
// out of the names it forwards, so that a benchmark's name does not depend on the plan.
//
// Example:
//   perfscale::Progress progress(plan.runs);
//   perfscale::PlannedReporter display(default_display.get(), &progress);
//   benchmark::RunSpecifiedBenchmarks(&display);
#ifndef PERFSCALE_BENCHMARKS_HARNESS_PROGRESS_H_
#define PERFSCALE_BENCHMARKS_HARNESS_PROGRESS_H_

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "benchmarks/harness/suite_plan.h"

namespace perfscale {

class Progress {
 public:
  // `out` is where progress goes (stderr); `live` chooses the terminal style.
  Progress(const std::vector<PlannedRun>& runs, std::FILE* out, bool live);

  void Started(const std::string& name);
  // `name` as Google Benchmark reports it, without the plan's segments.
  void Finished(const std::string& name);
  // Before a table row goes to the same terminal.
  void ClearLine();
  void Done();

 private:
  double Elapsed() const;
  double EstimatedLeft() const;
  void Draw();

  std::FILE* out_;
  bool live_;
  std::map<std::string, double> estimates_;
  double planned_total_ = 0;
  double planned_done_ = 0;
  int total_ = 0;
  int done_ = 0;
  // Google Benchmark reports a benchmark's repetitions and then its aggregates: two
  // reports, one benchmark.
  std::set<std::string> finished_;
  std::string current_;
  std::chrono::steady_clock::time_point start_;
  double last_plain_ = -1e9;
  bool drawn_ = false;
};

// Forwards to `inner`, names cleaned, and tells `progress` (when not null) what finished.
class PlannedReporter : public benchmark::BenchmarkReporter {
 public:
  // Neither is owned; both outlive the run.
  PlannedReporter(benchmark::BenchmarkReporter* inner, Progress* progress)
      : inner_(inner), progress_(progress) {}

  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;

 private:
  benchmark::BenchmarkReporter* inner_;
  Progress* progress_;
};

// The reporter for --benchmark_out in --benchmark_out_format (json, console or csv).
std::unique_ptr<benchmark::BenchmarkReporter> CreateFileReporter(const std::string& format);

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_HARNESS_PROGRESS_H_
