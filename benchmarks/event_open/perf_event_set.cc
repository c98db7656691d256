#include "benchmarks/event_open/perf_event_set.h"

#include <utility>

namespace perfscale {

absl::StatusOr<PerfEventSet> PerfEventSet::OpenPerCpu(const perf_event_attr& attr,
                                                      const std::vector<int>& cpus) {
  PerfEventSet set;
  set.Reserve(cpus.size());
  for (int cpu : cpus) {
    absl::Status opened = set.Open(attr, -1, cpu);
    if (!opened.ok()) return opened;
  }
  return set;
}

absl::Status PerfEventSet::Open(const perf_event_attr& attr, pid_t pid, int cpu, int group_fd) {
  absl::StatusOr<PerfEvent> event = PerfEvent::Open(attr, pid, cpu, group_fd);
  if (!event.ok()) {
    CloseAll();
    return event.status();
  }
  Add(*std::move(event), cpu);
  return absl::OkStatus();
}

void PerfEventSet::Add(PerfEvent event, int cpu) {
  entries_.push_back(Entry{std::move(event), cpu});
}

absl::Status PerfEventSet::EnableAll() {
  for (Entry& entry : entries_) {
    absl::Status status = entry.event.Enable();
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status PerfEventSet::DisableAll() {
  for (Entry& entry : entries_) {
    absl::Status status = entry.event.Disable();
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace perfscale
