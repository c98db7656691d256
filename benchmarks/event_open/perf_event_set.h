// Owns many perf_event fds opened across CPUs. Opening stops at the first failure and
// closes everything opened so far, so a half-finished open never leaks fds.
//
// Example:
//   absl::StatusOr<perfscale::PerfEventSet> set =
//       perfscale::PerfEventSet::OpenPerCpu(attr, *perfscale::OnlineCpus());
#ifndef PERFSCALE_BENCHMARKS_EVENT_OPEN_PERF_EVENT_SET_H_
#define PERFSCALE_BENCHMARKS_EVENT_OPEN_PERF_EVENT_SET_H_

#include <linux/perf_event.h>

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lib/perf_event.h"

namespace perfscale {

class PerfEventSet {
 public:
  struct Entry {
    PerfEvent event;
    int cpu;
  };

  // One system-wide (pid -1) event per CPU in `cpus`.
  static absl::StatusOr<PerfEventSet> OpenPerCpu(const perf_event_attr& attr,
                                                 const std::vector<int>& cpus);

  PerfEventSet() = default;
  PerfEventSet(PerfEventSet&&) = default;
  PerfEventSet& operator=(PerfEventSet&&) = default;

  // Opens one more event and keeps it; on failure the set is emptied (all closed).
  absl::Status Open(const perf_event_attr& attr, pid_t pid, int cpu, int group_fd = -1);
  void Add(PerfEvent event, int cpu);
  void Reserve(size_t n) { entries_.reserve(n); }

  absl::Status EnableAll();
  absl::Status DisableAll();

  size_t size() const { return entries_.size(); }
  const std::vector<Entry>& entries() const { return entries_; }
  std::vector<Entry>& entries() { return entries_; }
  void CloseAll() { entries_.clear(); }

 private:
  std::vector<Entry> entries_;
};

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_EVENT_OPEN_PERF_EVENT_SET_H_
