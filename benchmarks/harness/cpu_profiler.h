// Samples where the calling thread, and every thread and process it creates afterwards,
// spends its CPU time: `perf record -g -e cpu-clock -- cmd`, in process. One cpu-clock
// event per CPU (pid 0, cpu N, inherit: the kernel refuses to mmap an inherited event
// opened with cpu -1), each sample carrying the IP, the task and a callchain, kernel
// frames then user frames (user frames walk frame pointers, so code built without them
// shows only its leaf). Each CPU's event has its own ring buffer (lib/ring_buffer.h); a
// reader thread, started before the events exist so it is never sampled itself, drains
// them and counts identical callchains.
//
// Inheritance only reaches tasks created after Open, so open it before the work creates
// its threads; it is opened disabled, and Enable/Disable (which reach every inherited
// copy) bracket the region of interest.
//
// Kernel frames need perf_event_paranoid <= 1 or CAP_PERFMON; without them the profiler
// falls back to user frames only and says so in RawProfile::kernel_excluded.
//
// Example:
//   absl::StatusOr<std::unique_ptr<perfscale::CpuProfiler>> profiler =
//       perfscale::CpuProfiler::Open({});
//   (*profiler)->Enable();  ... work ...  (*profiler)->Disable();
//   absl::StatusOr<perfscale::RawProfile> profile = (*profiler)->Stop();
#ifndef PERFSCALE_BENCHMARKS_HARNESS_CPU_PROFILER_H_
#define PERFSCALE_BENCHMARKS_HARNESS_CPU_PROFILER_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "lib/perf_event.h"
#include "lib/ring_buffer.h"
#include "lib/ring_reader.h"

namespace perfscale {

struct CpuProfilerOptions {
  int frequency_hz = 4000;   // perf record's default rate, as a fixed cpu-clock period
  std::vector<int> cpus;     // empty: every online CPU
  uint64_t ring_pages = 64;  // per CPU; within the unprivileged mlock allowance
};

struct RawProfile {
  // Callchains as the kernel wrote them (leaf first, with its PERF_CONTEXT_* markers)
  // and how many samples had each.
  std::map<std::vector<uint64_t>, uint64_t> chains;
  uint64_t samples = 0;
  uint64_t lost = 0;            // samples the kernel dropped for want of buffer space
  std::string kernel_excluded;  // why kernel frames are missing; empty when they are not

  void Merge(const RawProfile& other);
};

// One PERF_RECORD_SAMPLE of sample_type IP|TID|CALLCHAIN, header included.
struct ProfileSample {
  uint64_t ip = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  std::vector<uint64_t> callchain;
};
absl::StatusOr<ProfileSample> ParseProfileSample(absl::Span<const uint8_t> record);

class CpuProfiler {
 public:
  static absl::StatusOr<std::unique_ptr<CpuProfiler>> Open(const CpuProfilerOptions& options);

  CpuProfiler(const CpuProfiler&) = delete;
  CpuProfiler& operator=(const CpuProfiler&) = delete;
  ~CpuProfiler();

  absl::Status Enable();
  absl::Status Disable();
  // Disables, drains, stops the reader and closes everything; only the first call
  // does work.
  absl::StatusOr<RawProfile> Stop();

 private:
  CpuProfiler() = default;
  void DrainAll();
  void Shutdown();

  std::vector<PerfEvent> events_;
  std::vector<RingBuffer> rings_;  // rings_[i] belongs to events_[i]
  RingReader reader_;
  bool stopped_ = false;
  // Written by the reader only; read after it is joined.
  RawProfile profile_;
  absl::Status drain_error_;
};

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_HARNESS_CPU_PROFILER_H_
