// Records tracepoints the way `perf record -R -c 1` (and so `perf lock record`) does, to
// measure what recording costs a workload: every hit of every tracepoint becomes a
// sample (sample_period 1) carrying the tracepoint's raw payload, the task, time and CPU,
// and optionally a frame-pointer callchain of depth 8. Each CPU gets one mmap'd ring
// buffer; that CPU's other events are redirected into it with PERF_EVENT_IOC_SET_OUTPUT.
// A reader thread sleeps in poll() until the kernel wakes it (buffer half full, perf's
// default) and then drains every buffer, discarding the bytes or writing them to a
// nameless ScratchFile, as perf record writes perf.data.
//
// Scopes:
//   kSystemWide: pid -1 on every CPU (perf record -a); needs CAP_PERFMON/root or
//     perf_event_paranoid <= 0.
//   kTask: the given task, and the tasks and threads it creates after Open (inherit=1),
//     still one event per CPU (pid, cpu) like `perf record -- cmd`: the kernel refuses to
//     mmap an inherited event opened with cpu -1. The reader thread is started before
//     the events are opened so that it is not recorded itself.
//
// Example:
//   perfscale::TraceRecorderOptions options;
//   options.tracepoints = {"sched:sched_switch", "sched:sched_wakeup"};
//   absl::StatusOr<std::unique_ptr<perfscale::TraceRecorder>> recorder =
//       perfscale::TraceRecorder::Open(options);
//   (*recorder)->Enable();  ... workload ...
//   absl::StatusOr<perfscale::TraceStats> stats = (*recorder)->Stop();
#ifndef PERFSCALE_BENCHMARKS_TRACE_OVERHEAD_TRACE_RECORDER_H_
#define PERFSCALE_BENCHMARKS_TRACE_OVERHEAD_TRACE_RECORDER_H_

#include <linux/perf_event.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "lib/file_reader.h"
#include "lib/perf_event.h"
#include "lib/ring_buffer.h"
#include "lib/ring_reader.h"
#include "lib/scratch_file.h"

namespace perfscale {

// perf lock's --call-graph fp,8.
inline constexpr int kTraceCallchainDepth = 8;

enum class TraceScope { kSystemWide, kTask };
enum class TraceSink { kDiscard, kFile };

struct TraceRecorderOptions {
  std::vector<std::string> tracepoints;  // "subsystem:event"
  bool callchains = false;
  TraceScope scope = TraceScope::kSystemWide;
  pid_t task = 0;              // kTask: the recorded task; 0 is the calling thread
  std::vector<int> cpus;       // empty: every online CPU
  uint64_t ring_pages = 1024;  // data pages per CPU buffer (perf lock record -m 1024)
  TraceSink sink = TraceSink::kDiscard;
  std::string file_dir;  // kFile: where the ScratchFile goes; empty: $TMPDIR or /tmp
};

struct TraceStats {
  uint64_t samples = 0;        // PERF_RECORD_SAMPLE records
  uint64_t records = 0;        // records of any type
  uint64_t bytes = 0;          // consumed from the ring buffers
  uint64_t bytes_written = 0;  // kFile: written to the file
  // Samples the kernel could not write for want of space. Exact where the kernel
  // counts them per event (PERF_FORMAT_LOST, Linux 6.0+); otherwise the sum over
  // PERF_RECORD_LOST records, which undercounts: the kernel reports drops in the next
  // record it manages to write, so drops at the very end are never reported.
  uint64_t lost = 0;
  bool lost_exact = false;
  uint64_t lost_reported = 0;  // the sum over PERF_RECORD_LOST records
  uint64_t lost_records = 0;   // PERF_RECORD_LOST records seen
  uint64_t drains = 0;         // times the reader woke up and drained
};

// The tracepoints of a named set:
//   "lock": every tracepoint of events/lock/ this kernel has, sorted: lock:contention_begin
//     and contention_end (Linux 5.19+), and lockdep's lock_acquire, lock_release (and with
//     CONFIG_LOCK_STAT lock_acquired, lock_contended) where it is built in. A fixed pick
//     would hide a kernel that gained one; the run's context names the list
//     (lock_tracepoints), so a count that moved with it is told apart;
//   "sched": sched:sched_switch, sched:sched_wakeup;
//   "syscalls": raw_syscalls:sys_enter, raw_syscalls:sys_exit.
// Only "lock" looks at tracefs (its available_events, through `reader`); the others are
// resolved by Open.
absl::StatusOr<std::vector<std::string>> TracepointSet(absl::string_view set,
                                                       const TextFileReader& reader = ReadTextFile);

// The tracepoints of `subsystem` in the text of tracefs's available_events (one
// "subsystem:event" a line, what `ls events/SUBSYSTEM/` shows), sorted, each once.
std::vector<std::string> SubsystemTracepoints(absl::string_view available_events,
                                              absl::string_view subsystem);

// The attr of one recorded tracepoint, as `perf lock record` builds it: sample_period
// 1, IP|TID|TIME|ID|CPU|PERIOD|RAW (+CALLCHAIN with sample_max_stack 8), sample_id_all,
// disabled; `inherit` for kTask; read_format PERF_FORMAT_LOST when `count_lost`.
perf_event_attr RecordingAttr(uint64_t tracepoint_id, bool callchains, bool inherit,
                              bool count_lost = true);

class TraceRecorder {
 public:
  // Resolves the tracepoints (NotFound/PermissionDenied naming the tracepoint), opens
  // them disabled on every CPU, maps one buffer per CPU and starts the reader. Nothing
  // is left open or running on failure.
  static absl::StatusOr<std::unique_ptr<TraceRecorder>> Open(
      const TraceRecorderOptions& options, const TextFileReader& reader = ReadTextFile);

  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;
  ~TraceRecorder();

  absl::Status Enable();
  // Disables the events, drains what is left, stops the reader, closes everything and
  // returns the totals (or the reader's first error). Only the first call does work.
  absl::StatusOr<TraceStats> Stop();

  size_t event_count() const { return events_.size(); }
  size_t buffer_count() const { return buffers_.size(); }

 private:
  TraceRecorder() = default;
  void DrainAll();
  void RecordError(absl::Status status);
  void Shutdown();

  std::vector<PerfEvent> events_;
  struct Buffer {
    int fd;  // the event whose mmap this is (owned by events_)
    RingBuffer ring;
  };
  std::vector<Buffer> buffers_;
  std::optional<ScratchFile> file_;  // kFile
  bool count_lost_ = true;           // the events were opened with PERF_FORMAT_LOST
  bool stopped_ = false;
  RingReader reader_;  // drains buffers_; Shutdown stops it before anything is closed

  std::mutex mu_;
  absl::Status error_;  // guarded by mu_: the reader's and the file's first error
  // Written by the reader only; read after it is joined.
  TraceStats stats_;
};

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_TRACE_OVERHEAD_TRACE_RECORDER_H_
