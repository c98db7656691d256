// Multi-threaded synthesis of perf records from /proc, with the output design as the
// variable: how N workers that each produce records get them into one output.
//
//   mutex       one lock around each record's write (perf record
//               --num-thread-synthesize: process_locked_synthesized_event)
//   atomic      each record reserves its bytes in the shared output with one atomic
//               fetch_add, then is copied (or pwrite(2)n) there without a lock
//   per_worker  each worker fills a private buffer; the buffers are appended to the
//               output, in worker order, once all workers are done
//
// and the output is memory (one preallocated buffer) or a file written with write(2)
// (pwrite(2) at the reserved offset for `atomic`), as perf record writes perf.data. The
// process list is split into contiguous chunks, one per worker, as perf splits /proc.
// One worker runs on the calling thread (perf creates no thread then); more are created
// by each Run, as perf creates them for each synthesis.
//
// For `mutex`, every worker measures the time it waits for the lock (only when the lock
// is taken: an uncontended acquisition costs no clock reads), so the share of worker
// time lost to serialization comes out of the same run.
//
// Example:
//   perfscale::ParallelSynthesisOptions options;
//   options.strategy = perfscale::OutputStrategy::kMutex;
//   options.workers = 4;
//   auto synth = perfscale::ParallelSynthesizer::Create(options);
//   absl::StatusOr<perfscale::SynthesisRunStats> stats = (*synth)->Run(pids);
//   absl::StatusOr<std::string> records = (*synth)->ReadOutput();
#ifndef PERFSCALE_BENCHMARKS_SYNTHESIZE_PARALLEL_SYNTHESIS_H_
#define PERFSCALE_BENCHMARKS_SYNTHESIZE_PARALLEL_SYNTHESIS_H_

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "benchmarks/synthesize/proc_synthesis.h"
#include "lib/scratch_file.h"

namespace perfscale {

enum class OutputStrategy { kMutex, kAtomic, kPerWorker };
enum class OutputSink { kMemory, kFile };

// "mutex", "atomic", "per_worker"; "memory", "file".
const char* OutputStrategyName(OutputStrategy strategy);
const char* OutputSinkName(OutputSink sink);
absl::StatusOr<OutputStrategy> ParseOutputStrategy(absl::string_view name);
absl::StatusOr<OutputSink> ParseOutputSink(absl::string_view name);

inline constexpr int kMaxSynthesisWorkers = 1024;

struct ParallelSynthesisOptions {
  OutputStrategy strategy = OutputStrategy::kMutex;
  OutputSink sink = OutputSink::kMemory;
  int workers = 1;  // at most kMaxSynthesisWorkers; never more are used than processes
  SynthesisOptions synthesis;
  std::string file_dir = "/tmp";  // OutputSink::kFile: where the scratch file lives
  // OutputSink::kMemory: address space reserved for the output (pages are committed
  // only as they are written).
  size_t memory_capacity = size_t{1} << 30;
};

// True for Run's failure when the memory output had no room left (the caller may size
// it again: ParallelSynthesisOptions::memory_capacity).
bool IsMemoryOutputFull(const absl::Status& status);

struct SynthesisRunStats {
  SynthesisCounts counts;        // summed over workers
  int workers = 0;               // workers that ran: min(options.workers, processes)
  double worker_seconds = 0;     // each worker's time from start to end, summed
  double lock_wait_seconds = 0;  // kMutex: time spent waiting for the lock, summed
  uint64_t lock_waits = 0;       // kMutex: acquisitions that had to wait
};

class ParallelSynthesizer {
 public:
  // Creates the output (memory reservation or scratch file; errors name file_dir).
  static absl::StatusOr<std::unique_ptr<ParallelSynthesizer>> Create(
      const ParallelSynthesisOptions& options);
  ParallelSynthesizer(const ParallelSynthesizer&) = delete;
  ParallelSynthesizer& operator=(const ParallelSynthesizer&) = delete;
  ~ParallelSynthesizer();

  // Empties the output (between timed runs).
  absl::Status Reset();
  // Synthesizes every process in `pids` and appends the records to the output. On an
  // error every worker stops at its next process and the first error is returned.
  absl::StatusOr<SynthesisRunStats> Run(const std::vector<pid_t>& pids);
  // Everything written since the last Reset.
  absl::StatusOr<std::string> ReadOutput() const;

  const ParallelSynthesisOptions& options() const { return options_; }

 private:
  struct Worker;
  struct Output;
  explicit ParallelSynthesizer(const ParallelSynthesisOptions& options);
  static void* WorkerMain(void* arg);
  void RunWorker(Worker& worker, const std::vector<pid_t>& pids);
  absl::Status JoinPrivateBuffers();

  const ParallelSynthesisOptions options_;
  std::unique_ptr<Output> output_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::atomic<bool> stop_{false};
};

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_SYNTHESIZE_PARALLEL_SYNTHESIS_H_
