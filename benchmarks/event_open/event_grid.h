// Many perf events on many CPUs -- the events x CPUs fds `perf stat -a` holds -- opened,
// enabled, read, disabled and closed in one of three orders:
//   event_major: for each event, for each CPU (perf before 2019): every operation on
//                another CPU's event is an IPI to that CPU;
//   cpu_major:   for each CPU, move there (scoped affinity), then every event of that
//                CPU (perf stat since 2019): the calls become local;
//   parallel:    one worker per CPU, pinned there, all CPUs at once.
// Affinity is an optimization: where the kernel refuses it the operations are done from
// wherever the thread runs, and notes() says on which CPUs.
//
// Consecutive events can form weak groups, as `perf stat -e '{a,b,c}:W'`: members are
// opened with the leader's fd, and where the kernel refuses a member (EINVAL) the group
// on that CPU is reopened as independent events.
//
// Example:
//   perfscale::EventGrid grid({attrs, *perfscale::OnlineCpus()},
//                             perfscale::GridOrder::kCpuMajor);
//   if (absl::Status s = grid.Open(); !s.ok()) return s;  // nothing left open
//   grid.Enable(); grid.Read(); grid.Disable(); grid.Close();
#ifndef PERFSCALE_BENCHMARKS_EVENT_OPEN_EVENT_GRID_H_
#define PERFSCALE_BENCHMARKS_EVENT_OPEN_EVENT_GRID_H_

#include <linux/perf_event.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "benchmarks/event_open/cpu_workers.h"
#include "lib/cpu_set.h"
#include "lib/perf_event.h"

namespace perfscale {

enum class GridOrder { kEventMajor, kCpuMajor, kParallel };

// "event_major", "cpu_major", "parallel".
absl::StatusOr<GridOrder> ParseGridOrder(absl::string_view name);
const char* GridOrderName(GridOrder order);

struct GridSpec {
  // Opened on every CPU, system-wide (pid -1), in this order.
  std::vector<perf_event_attr> events;
  std::vector<int> cpus;
  // 1: independent events; N > 1: events [0,N), [N,2N)... form weak groups.
  int group_size = 1;
};

// What a grid had to work around. The benchmark says so in its label.
struct GridNotes {
  std::vector<int> affinity_refused;  // CPUs the opener could not move to
  std::string refusal;                // the first refusal's message
  int weak_group_fallbacks = 0;       // (group, CPU) pairs reopened without the group
};

class EventGrid {
 public:
  // How the opener moves onto a CPU for cpu_major; tests substitute one that refuses.
  using Pin = std::function<absl::StatusOr<ScopedAffinity>(int cpu)>;

  // `workers` is required for kParallel: one worker per entry of spec.cpus, same order.
  EventGrid(GridSpec spec, GridOrder order, CpuWorkers* workers = nullptr, Pin pin = nullptr);
  EventGrid(const EventGrid&) = delete;
  EventGrid& operator=(const EventGrid&) = delete;
  ~EventGrid() = default;  // whatever is still open is closed

  // Opens events.size() x cpus.size() fds. On failure every fd it opened is closed again.
  absl::Status Open();
  absl::Status Enable();
  // Reads every counter; returns the sum (so the reads cannot be optimized away).
  absl::StatusOr<uint64_t> Read();
  absl::Status Disable();
  // Closes every fd, in the grid's order.
  void Close();

  // One opened (or not yet opened) event and the CPU it is for.
  struct Entry {
    PerfEvent event;
    int cpu;
  };
  // Entry [cpu_index * events + event]; empty until Open.
  const std::vector<Entry>& entries() const { return entries_; }
  size_t open_fds() const;
  const GridNotes& notes() const { return notes_; }
  const GridSpec& spec() const { return spec_; }

 private:
  using Op = std::function<absl::Status(int cpu_index, int event)>;
  absl::Status ForEach(const Op& op);
  absl::Status OpenOne(int cpu_index, int event);
  absl::Status BreakGroup(int cpu_index, int event);
  PerfEvent& at(int cpu_index, int event);
  void NoteRefusal(int cpu, const absl::Status& status);

  const GridSpec spec_;
  const GridOrder order_;
  CpuWorkers* const workers_;
  const Pin pin_;
  const int num_events_;
  const int num_cpus_;
  std::vector<Entry> entries_;
  // Per (group, CPU index): the group fell back to independent events there. chars, not
  // vector<bool>, because parallel workers write neighbouring entries.
  std::vector<char> broken_;
  std::vector<uint64_t> sums_;  // per CPU index, for Read
  std::atomic<int> fallbacks_{0};
  GridNotes notes_;
};

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_EVENT_OPEN_EVENT_GRID_H_
