#include "benchmarks/harness/cpu_profiler.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "lib/cpu_set.h"
#include "lib/errno_status.h"
#include "lib/perf_attr.h"

namespace perfscale {
namespace {

// perf_event_open refuses callchains deeper than kernel.perf_event_max_stack (127).
constexpr uint64_t kMaxCallchain = 127 + 8;  // frames plus context markers

perf_event_attr SamplingAttr(int frequency_hz, bool kernel) {
  perf_event_attr attr = SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK);
  // A fixed period in nanoseconds of CPU time rather than attr.freq: no rate
  // adjustment, so every sample stands for the same time.
  attr.sample_period = 1000000000ull / static_cast<uint64_t>(frequency_hz);
  attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN;
  attr.inherit = 1;
  attr.disabled = 1;
  attr.exclude_kernel = kernel ? 0 : 1;
  attr.exclude_hv = 1;
  return attr;
}

}  // namespace

void RawProfile::Merge(const RawProfile& other) {
  for (const auto& [chain, count] : other.chains) chains[chain] += count;
  samples += other.samples;
  lost += other.lost;
  if (kernel_excluded.empty()) kernel_excluded = other.kernel_excluded;
}

absl::StatusOr<ProfileSample> ParseProfileSample(absl::Span<const uint8_t> record) {
  ProfileSample sample;
  constexpr size_t kFixed = sizeof(perf_event_header) + 8 + 8 + 8;  // header, ip, pid/tid, nr
  if (record.size() < kFixed) {
    return absl::DataLossError(absl::StrCat("sample record of ", record.size(), " bytes"));
  }
  const uint8_t* p = record.data() + sizeof(perf_event_header);
  std::memcpy(&sample.ip, p, 8);
  std::memcpy(&sample.pid, p + 8, 4);
  std::memcpy(&sample.tid, p + 12, 4);
  uint64_t nr = 0;
  std::memcpy(&nr, p + 16, 8);
  if (nr > kMaxCallchain || nr * 8 > record.size() - kFixed) {
    return absl::DataLossError(
        absl::StrCat("callchain of ", nr, " frames in a ", record.size(), "-byte sample"));
  }
  sample.callchain.resize(static_cast<size_t>(nr));
  if (nr > 0) std::memcpy(sample.callchain.data(), record.data() + kFixed, nr * 8);
  return sample;
}

absl::StatusOr<std::unique_ptr<CpuProfiler>> CpuProfiler::Open(const CpuProfilerOptions& options) {
  if (options.frequency_hz < 1 || options.frequency_hz > 100000) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling frequency ", options.frequency_hz, " Hz is not in 1..100000"));
  }
  if (absl::Status pages = ValidateRingPages(options.ring_pages); !pages.ok()) return pages;
  std::vector<int> cpus = options.cpus;
  if (cpus.empty()) {
    absl::StatusOr<std::vector<int>> online = OnlineCpus();
    if (!online.ok()) return online.status();
    cpus = *online;
  }
  std::unique_ptr<CpuProfiler> profiler(new CpuProfiler());
  // Before any event exists, so the reader is not one of the profiled threads.
  if (absl::Status started = profiler->reader_.Start([p = profiler.get()] { p->DrainAll(); });
      !started.ok()) {
    return started;
  }
  bool kernel = true;
  for (int cpu : cpus) {
    absl::StatusOr<PerfEvent> event = PerfEvent::Open(SamplingAttr(options.frequency_hz, kernel),
                                                      /*pid=*/0, cpu);
    if (!event.ok() && kernel && absl::IsPermissionDenied(event.status())) {
      // perf_event_paranoid 2 without CAP_PERFMON: user frames are still worth having.
      kernel = false;
      profiler->profile_.kernel_excluded =
          absl::StrCat("kernel frames not sampled: ", event.status().message(),
                       " (kernel samples need perf_event_paranoid <= 1, CAP_PERFMON or root)");
      event = PerfEvent::Open(SamplingAttr(options.frequency_hz, kernel), 0, cpu);
    }
    if (!event.ok()) {
      return absl::Status(event.status().code(), absl::StrCat("cpu-clock sampling on CPU ", cpu,
                                                              ": ", event.status().message()));
    }
    absl::StatusOr<RingBuffer> ring = RingBuffer::Map(event->fd(), options.ring_pages);
    if (!ring.ok()) return ring.status();
    profiler->events_.push_back(*std::move(event));
    profiler->rings_.push_back(*std::move(ring));
  }
  std::vector<int> fds;
  for (const PerfEvent& event : profiler->events_) fds.push_back(event.fd());
  profiler->reader_.Arm(std::move(fds));
  return profiler;
}

void CpuProfiler::DrainAll() {
  for (RingBuffer& ring : rings_) {
    absl::StatusOr<RingBuffer::Consumed> consumed =
        ring.Consume([this](const perf_event_header& header, absl::Span<const uint8_t> record) {
          if (header.type == PERF_RECORD_LOST && record.size() >= 24) {
            uint64_t lost = 0;  // {header, u64 id, u64 lost}
            std::memcpy(&lost, record.data() + 16, sizeof(lost));
            profile_.lost += lost;
            return;
          }
          if (header.type != PERF_RECORD_SAMPLE) return;
          absl::StatusOr<ProfileSample> sample = ParseProfileSample(record);
          if (!sample.ok()) return;
          ++profile_.samples;
          if (sample->callchain.empty()) sample->callchain.push_back(sample->ip);
          ++profile_.chains[std::move(sample->callchain)];
        });
    if (!consumed.ok() && drain_error_.ok()) drain_error_ = consumed.status();
  }
}

absl::Status CpuProfiler::Enable() { return EnableAll(absl::MakeSpan(events_)); }

absl::Status CpuProfiler::Disable() { return DisableAll(absl::MakeSpan(events_)); }

void CpuProfiler::Shutdown() {
  if (stopped_) return;
  stopped_ = true;
  // Synchronous: after it every sample is in a buffer for the reader's last drain.
  for (PerfEvent& event : events_) (void)event.Disable();
  reader_.Stop();
  rings_.clear();  // unmap before closing the events
  events_.clear();
}

absl::StatusOr<RawProfile> CpuProfiler::Stop() {
  if (stopped_) return absl::FailedPreconditionError("profiler already stopped");
  Shutdown();
  if (absl::Status polled = reader_.error(); !polled.ok()) return polled;
  if (!drain_error_.ok()) return drain_error_;
  return std::move(profile_);
}

CpuProfiler::~CpuProfiler() { Shutdown(); }

}  // namespace perfscale
