#include "benchmarks/trace_overhead/trace_recorder.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "lib/cpu_set.h"
#include "lib/errno_status.h"
#include "lib/perf_attr.h"
#include "lib/scratch_file.h"
#include "lib/tracefs.h"

namespace perfscale {
namespace {

// TracepointId's errors name the tracepoint except when tracefs itself is missing.
absl::Status NameTracepoint(const absl::Status& status, absl::string_view name) {
  if (absl::StrContains(status.message(), name)) return status;
  return absl::Status(status.code(), absl::StrCat("tracepoint ", name, ": ", status.message()));
}

}  // namespace

std::vector<std::string> SubsystemTracepoints(absl::string_view available_events,
                                              absl::string_view subsystem) {
  std::vector<std::string> names;
  for (absl::string_view line : absl::StrSplit(available_events, '\n')) {
    absl::StatusOr<TracepointName> name = ParseTracepointName(absl::StripAsciiWhitespace(line));
    if (name.ok() && name->subsystem == subsystem) {
      names.push_back(absl::StrCat(name->subsystem, ":", name->event));
    }
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

absl::StatusOr<std::vector<std::string>> TracepointSet(absl::string_view set,
                                                       const TextFileReader& reader) {
  if (set == "sched") return std::vector<std::string>{"sched:sched_switch", "sched:sched_wakeup"};
  if (set == "syscalls") {
    return std::vector<std::string>{"raw_syscalls:sys_enter", "raw_syscalls:sys_exit"};
  }
  if (set != "lock") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown tracepoint set '", set, "' (known: lock, sched, syscalls)"));
  }
  // A missing or unreadable tracefs must not read as "this kernel has no lock tracepoints".
  absl::StatusOr<std::string> root = TracefsRoot(reader);
  if (!root.ok()) {
    return absl::Status(root.status().code(),
                        absl::StrCat("lock tracepoints: ", root.status().message()));
  }
  const std::string path = absl::StrCat(*root, "/available_events");
  absl::StatusOr<std::string> events = reader(path);
  if (absl::IsPermissionDenied(events.status())) {
    return absl::PermissionDeniedError(absl::StrCat("lock tracepoints: cannot read ", path,
                                                    ": tracefs needs root (or 'chmod -R o+rX ",
                                                    *root, "')"));
  }
  if (!events.ok()) {
    return absl::Status(events.status().code(),
                        absl::StrCat("lock tracepoints: ", events.status().message()));
  }
  std::vector<std::string> names = SubsystemTracepoints(*events, "lock");
  if (names.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no lock tracepoints on this kernel (", path,
                     " lists none under lock:): "
                     "lock:contention_begin/end need Linux 5.19+, lockdep's lock:lock_acquire and "
                     "friends CONFIG_LOCKDEP"));
  }
  return names;
}

perf_event_attr RecordingAttr(uint64_t tracepoint_id, bool callchains, bool inherit,
                              bool count_lost) {
  perf_event_attr attr = TracepointAttr(tracepoint_id);
  attr.sample_period = 1;
  // What `perf lock record` asks for (perf evlist -v on its perf.data): perf record -R
  // adds raw payload, time and CPU to IP, TID and PERIOD; the id tells the events apart
  // once they share a buffer.
  attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
                     PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW;
  if (callchains) {
    attr.sample_type |= PERF_SAMPLE_CALLCHAIN;
    attr.sample_max_stack = kTraceCallchainDepth;
  }
  attr.sample_id_all = 1;
  // The kernel's own count of samples it dropped; PERF_RECORD_LOST lags behind it.
  if (count_lost) attr.read_format = PERF_FORMAT_LOST;
  attr.disabled = 1;
  attr.inherit = inherit ? 1 : 0;
  return attr;
}

absl::StatusOr<std::unique_ptr<TraceRecorder>> TraceRecorder::Open(
    const TraceRecorderOptions& options, const TextFileReader& reader) {
  if (options.tracepoints.empty()) {
    return absl::InvalidArgumentError("no tracepoints to record");
  }
  if (absl::Status pages = ValidateRingPages(options.ring_pages); !pages.ok()) return pages;
  std::vector<uint64_t> ids;
  for (const std::string& name : options.tracepoints) {
    absl::StatusOr<uint64_t> id = TracepointId(name, reader);
    if (!id.ok()) return NameTracepoint(id.status(), name);
    ids.push_back(*id);
  }
  std::vector<int> cpus = options.cpus;
  if (cpus.empty()) {
    absl::StatusOr<std::vector<int>> online = OnlineCpus();
    if (!online.ok()) return online.status();
    cpus = *online;
  }
  const bool task = options.scope == TraceScope::kTask;
  const pid_t pid = task ? (options.task == 0 ? gettid() : options.task) : -1;

  std::unique_ptr<TraceRecorder> recorder(new TraceRecorder());
  if (options.sink == TraceSink::kFile) {
    // Nameless: nothing is left behind, however the run ends.
    absl::StatusOr<ScratchFile> file = ScratchFile::Create(options.file_dir);
    if (!file.ok()) {
      return WithMessage(
          file.status(),
          absl::StrCat(
              "trace file: ", file.status().message(),
              options.file_dir.empty() ? " (TMPDIR: point it at a writable directory)" : ""));
    }
    recorder->file_ = *std::move(file);
  }
  // Before any event exists: a thread created later by an inheriting task is recorded.
  if (absl::Status started = recorder->reader_.Start([r = recorder.get()] { r->DrainAll(); });
      !started.ok()) {
    return started;
  }

  recorder->events_.reserve(cpus.size() * ids.size());
  for (int cpu : cpus) {
    int output_fd = -1;
    for (size_t i = 0; i < ids.size(); ++i) {
      perf_event_attr attr = RecordingAttr(ids[i], options.callchains, task, recorder->count_lost_);
      if (i == 0) {
        // perf record's tracking bits ride on one event per buffer: task names, forks
        // and exits, mmaps.
        attr.comm = 1;
        attr.comm_exec = 1;
        attr.task = 1;
        attr.mmap2 = 1;
      }
      absl::StatusOr<PerfEvent> event = PerfEvent::Open(attr, pid, cpu);
      if (!event.ok() && recorder->count_lost_ && recorder->events_.empty() &&
          absl::IsInvalidArgument(event.status())) {
        // Kernels before 6.0 do not know PERF_FORMAT_LOST: count from the records.
        recorder->count_lost_ = false;
        attr.read_format = 0;
        event = PerfEvent::Open(attr, pid, cpu);
      }
      if (!event.ok()) {
        return absl::Status(
            event.status().code(),
            absl::StrCat("tracepoint ", options.tracepoints[i], ": ", event.status().message()));
      }
      int fd = event->fd();
      recorder->events_.push_back(*std::move(event));
      if (output_fd < 0) {
        absl::StatusOr<RingBuffer> ring = RingBuffer::Map(fd, options.ring_pages);
        if (!ring.ok()) return ring.status();
        recorder->buffers_.push_back(Buffer{fd, *std::move(ring)});
        output_fd = fd;
      } else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, output_fd) != 0) {
        return ErrnoStatus(errno, absl::StrCat("PERF_EVENT_IOC_SET_OUTPUT (",
                                               options.tracepoints[i], " on CPU ", cpu, ")"));
      }
    }
  }
  std::vector<int> fds;
  for (const Buffer& buffer : recorder->buffers_) fds.push_back(buffer.fd);
  recorder->reader_.Arm(std::move(fds));
  return recorder;
}

void TraceRecorder::DrainAll() {
  ++stats_.drains;
  for (Buffer& buffer : buffers_) {
    auto on_record = [this](const perf_event_header& header, absl::Span<const uint8_t> record) {
      ++stats_.records;
      if (header.type == PERF_RECORD_SAMPLE) {
        ++stats_.samples;
      } else if (header.type == PERF_RECORD_LOST && record.size() >= 24) {
        uint64_t lost = 0;  // {header, u64 id, u64 lost, sample_id}
        std::memcpy(&lost, record.data() + 16, sizeof(lost));
        stats_.lost_reported += lost;
        ++stats_.lost_records;
      }
    };
    absl::StatusOr<RingBuffer::Consumed> consumed;
    if (file_) {
      consumed = buffer.ring.Consume(on_record, [this](absl::Span<const uint8_t> chunk) {
        if (!file_) return;
        absl::Status written =
            WriteFully(file_->fd(), reinterpret_cast<const char*>(chunk.data()), chunk.size());
        if (!written.ok()) {
          RecordError(WithMessage(written, absl::StrCat("trace file: ", written.message())));
          file_.reset();  // keep draining, so the workload is not starved of space
          return;
        }
        stats_.bytes_written += chunk.size();
      });
    } else {
      consumed = buffer.ring.Consume(on_record);
    }
    if (!consumed.ok()) {
      RecordError(consumed.status());
      continue;
    }
    stats_.bytes += consumed->bytes;
  }
}

void TraceRecorder::RecordError(absl::Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (error_.ok()) error_ = std::move(status);
}

absl::Status TraceRecorder::Enable() { return EnableAll(absl::MakeSpan(events_)); }

void TraceRecorder::Shutdown() {
  if (stopped_) return;
  stopped_ = true;
  // Disabling is synchronous (the owning CPU acknowledges), so after it every record
  // is in a buffer and the reader's last drain sees it.
  for (PerfEvent& event : events_) (void)event.Disable();
  uint64_t lost = 0;
  bool lost_exact = count_lost_ && !events_.empty();
  for (PerfEvent& event : events_) {
    if (!count_lost_) break;
    uint64_t values[2] = {0, 0};  // {count, lost}
    ssize_t n;
    do {
      n = read(event.fd(), values, sizeof(values));
    } while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(sizeof(values))) {
      lost_exact = false;
      break;
    }
    lost += values[1];
  }
  reader_.Stop();
  if (absl::Status polled = reader_.error(); !polled.ok()) RecordError(polled);
  stats_.lost_exact = lost_exact;
  stats_.lost = lost_exact ? lost : stats_.lost_reported;
  buffers_.clear();  // unmap before closing the events
  events_.clear();
  file_.reset();
}

absl::StatusOr<TraceStats> TraceRecorder::Stop() {
  if (stopped_) return absl::FailedPreconditionError("trace recorder already stopped");
  Shutdown();
  std::lock_guard<std::mutex> lock(mu_);
  if (!error_.ok()) return error_;
  return stats_;
}

TraceRecorder::~TraceRecorder() { Shutdown(); }

}  // namespace perfscale
