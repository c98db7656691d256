// The --benchmark_out file, kept whole at every moment. Google Benchmark streams it as it
// goes, so a run cut short (Ctrl-C, a nightly's timeout) leaves half a JSON document that
// no tool can read. This reporter instead rewrites the whole document after the context
// and after every finished benchmark, into a temporary file beside it that is renamed
// into place: the file always parses and holds what finished. Until the run ends, its
// context says "run_complete": "false"; the finished run's says "true".
//
// Example (main):
//   absl::StatusOr<std::unique_ptr<perfscale::ResultFileReporter>> file =
//       perfscale::ResultFileReporter::Create("out.json", "json");
//   // give Google Benchmark --benchmark_out=/dev/null, then:
//   benchmark::RunSpecifiedBenchmarks(display, file->get());
#ifndef PERFSCALE_BENCHMARKS_HARNESS_RESULT_FILE_H_
#define PERFSCALE_BENCHMARKS_HARNESS_RESULT_FILE_H_

#include <sys/types.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "benchmark/benchmark.h"

namespace perfscale {

class ResultFileReporter : public benchmark::BenchmarkReporter {
 public:
  // `format` is --benchmark_out_format: json or console. Fails (the caller then leaves
  // the file to Google Benchmark) for csv, when `path` exists but is not a regular file
  // (/dev/stdout, a FIFO), or when no temporary file can be made beside it.
  static absl::StatusOr<std::unique_ptr<ResultFileReporter>> Create(const std::string& path,
                                                                    const std::string& format);

  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;

  // The first write that failed, if any (the run goes on; main reports it at the end).
  const absl::Status& status() const { return status_; }

 private:
  ResultFileReporter(std::string path, std::unique_ptr<benchmark::BenchmarkReporter> format,
                     std::string closing, mode_t mode);
  void Write(const std::string& document);

  std::string path_;
  std::unique_ptr<benchmark::BenchmarkReporter> format_;  // writes into buffer_
  std::ostringstream buffer_;
  std::string closing_;  // what makes the buffer a whole document mid-run
  mode_t mode_;          // what a plain create would have given the file
  absl::Status status_;
};

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_HARNESS_RESULT_FILE_H_
