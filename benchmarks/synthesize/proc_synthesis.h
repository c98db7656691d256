// Synthesis of the records `perf record` writes at start for tasks that already exist,
// read from /proc the way perf reads it (tools/perf/util/synthetic-events.c): for each
// task of a process, /proc/PID/task/TID/status (name, Tgid, PPid, kernel thread or not),
// then PERF_RECORD_FORK, PERF_RECORD_NAMESPACES (only as `perf record --namespaces`
// does, from /proc/TID/ns/*), PERF_RECORD_COMM; and for the process leader, unless it is
// a kernel thread, one PERF_RECORD_MMAP2 per executable mapping of
// /proc/PID/task/PID/maps (readable data mappings too, as `perf record --data`).
//
// A task or process that exits while it is being read is left out, as perf leaves it
// out; `counts().tasks_vanished` says how many. One ProcSynthesizer per thread: it owns the read
// buffers, so synthesis allocates nothing per record once they have grown.
//
// Example:
//   perfscale::ProcSynthesizer synth(perfscale::SynthesisOptions{});
//   MySink sink;  // a RecordSink
//   for (pid_t pid : *perfscale::ListProcessIds()) {
//     if (absl::Status s = synth.SynthesizeProcess(pid, sink); !s.ok()) return s;
//   }
#ifndef PERFSCALE_BENCHMARKS_SYNTHESIZE_PROC_SYNTHESIS_H_
#define PERFSCALE_BENCHMARKS_SYNTHESIZE_PROC_SYNTHESIS_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "benchmarks/synthesize/perf_records.h"

namespace perfscale {

// Where records go. Write is called once per record, from the synthesizing thread.
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual absl::Status Write(const char* record, size_t size) = 0;
};

enum class CommSource {
  kStatus,    // status's "Name:" line, as perf does (one file per task)
  kCommFile,  // /proc/PID/task/TID/comm read as well (unescaped name; one more file)
};

struct SynthesisOptions {
  bool data_mmaps = false;  // perf record --data
  bool namespaces = false;  // perf record --namespaces
  CommSource comm_source = CommSource::kStatus;
  std::string proc_root = "/proc";  // tests point it at a fake tree
};

struct SynthesisCounts {
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint64_t tasks = 0;           // tasks that got records
  uint64_t tasks_vanished = 0;  // tasks or maps files gone (or unreadable) while being read
};

class ProcSynthesizer {
 public:
  explicit ProcSynthesizer(SynthesisOptions options);
  ProcSynthesizer(const ProcSynthesizer&) = delete;
  ProcSynthesizer& operator=(const ProcSynthesizer&) = delete;

  // Records for every task of process `pid` (perf's "full" synthesis of one /proc
  // entry). Errors: the sink's, or /proc text that does not parse (Internal, naming the
  // file). A process that is gone is not an error.
  absl::Status SynthesizeProcess(pid_t pid, RecordSink& sink);

  const SynthesisCounts& counts() const { return counts_; }
  void ResetCounts() { counts_ = SynthesisCounts{}; }

 private:
  absl::Status Emit(RecordSink& sink, size_t size);
  absl::Status SynthesizeTask(pid_t pid, pid_t tid, RecordSink& sink);
  absl::Status SynthesizeMmaps(pid_t pid, pid_t tgid, RecordSink& sink);
  // Builds "<proc_root>/<a>[/task/<b>]/<leaf>" in path_ and returns it.
  const char* Path(pid_t a, pid_t b, const char* leaf);

  const SynthesisOptions options_;
  SynthesisCounts counts_;
  RecordBuffer record_;
  std::vector<char> dirents_;
  std::vector<pid_t> tids_;
  std::string status_;
  std::string comm_;
  std::string maps_;
  std::string path_;
};

// The numeric entries of `proc_root` (every process), in directory order: perf scans
// /proc without sorting.
absl::StatusOr<std::vector<pid_t>> ListProcessIds(const std::string& proc_root = "/proc");

// `n` items in `parts` contiguous [begin, end) ranges, as perf splits its /proc list
// among synthesis threads: n / parts each, the first n % parts one more. Never more
// ranges than items; none for n == 0.
std::vector<std::pair<size_t, size_t>> SplitContiguous(size_t n, size_t parts);

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_SYNTHESIZE_PROC_SYNTHESIS_H_
