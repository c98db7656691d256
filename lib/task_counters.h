// Counts what the benchmark's own tasks cause in the kernel: IPIs they send, cross-CPU
// function calls they queue, kernel lock contention and the time they wait for it,
// context switches, CPU migrations and page faults. Only the calling thread and the
// threads and processes it creates *after* Open are counted (perf_event_open with
// pid 0 and inherit), plus the threads that Options::existing_tasks names (each its own
// events), never the rest of the machine, so another process flooding the machine with
// IPIs does not change the figures.
//
// Sources (each counter falls back on its own; sources() says which one it used):
// - ipis_sent: counting events on ipi:ipi_send_cpu (one hit = one IPI) and
//   ipi:ipi_send_cpumask, the latter opened once per target CPU with the filter
//   "cpumask & CPUS{n}" (Linux 6.6+), so each hit counts one target. Where the filter
//   is refused, ipi_mask_calls counts cpumask calls (one call = one or more IPIs).
// - xcalls: csd:csd_queue_cpu (one cross-CPU function call queued, IPI or not).
// - lock_contended, lock_wait: lock:contention_begin/end sampled (time, tid, lock
//   address) into one small ring buffer per CPU, drained at each read and paired per
//   task the way `perf lock contention` pairs them (lib/lock_contention.h).
// - syscalls (only when Options::count_syscalls asks): raw_syscalls:sys_enter. Each
//   counting event on it adds work to every syscall of the counted tasks, so it is for
//   sizing a slowdown that scales with syscalls (tools/perfscale inject), not for timing.
// - ctx_switches, cpu_migrations, page_faults: software counting events; without
//   perf permission, ctx_switches and page_faults come from getrusage (this process
//   and reaped children) and cpu_migrations is unavailable.
// Each counting event stands alone (an inherited group misses a new task's first time
// slice: task_counters.cc, AddCounter); Start and Stop read them one after another.
//
// Example:
//   std::unique_ptr<perfscale::TaskCounters> counters = perfscale::TaskCounters::Open();
//   ... create the benchmark's threads ...
//   counters->Start();
//   for (auto _ : state) { ... }
//   absl::StatusOr<perfscale::TaskCounts> counts = counters->Stop();
#ifndef PERFSCALE_LIB_TASK_COUNTERS_H_
#define PERFSCALE_LIB_TASK_COUNTERS_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lib/lock_contention.h"
#include "lib/perf_event.h"
#include "lib/ring_buffer.h"

namespace perfscale {

// The counters, by the name prefix every family reports (`<name>/op`, `<name>/fd`, ...).
enum class TaskCounter {
  kIpisSent,
  kIpiMaskCalls,
  kXcalls,
  kLockContended,
  kLockWait,
  kCtxSwitches,
  kCpuMigrations,
  kPageFaults,
  kSyscalls,
};

// What the counted tasks caused between Start and Stop.
struct TaskCounts {
  uint64_t ipis_sent = 0;
  uint64_t ipi_mask_calls = 0;  // only where per-target counting is refused
  uint64_t xcalls = 0;
  uint64_t lock_contended = 0;
  uint64_t lock_wait_ns = 0;
  uint64_t lock_records_lost = 0;  // lock samples the ring buffers had no room for
  uint64_t ctx_switches = 0;
  uint64_t cpu_migrations = 0;
  uint64_t page_faults = 0;
  uint64_t syscalls = 0;  // only with Options::count_syscalls
  TaskCounts& operator+=(const TaskCounts& other);
  uint64_t Count(TaskCounter counter) const;  // lock_wait in ns
};

inline constexpr TaskCounter kAllTaskCounters[] = {
    TaskCounter::kIpisSent,      TaskCounter::kIpiMaskCalls, TaskCounter::kXcalls,
    TaskCounter::kLockContended, TaskCounter::kLockWait,     TaskCounter::kCtxSwitches,
    TaskCounter::kCpuMigrations, TaskCounter::kPageFaults,   TaskCounter::kSyscalls,
};
const char* TaskCounterName(TaskCounter counter);  // "ipis_sent", ..., "lock_wait_us"

// Where one counter comes from, or, when `available` is false, why it is missing.
struct CounterSource {
  TaskCounter counter;
  bool available = false;
  std::string source;
};

class TaskCounters {
 public:
  struct Options {
    // Data pages per CPU for the lock samples (32 bytes each), a power of two.
    uint64_t lock_ring_pages = 16;
    bool count_syscalls = false;
    // Threads (ids from gettid) that exist already and are counted too, with what they
    // create later: a counting pass that reuses the timed pass's threads rather than
    // making its own (BM_UprobeHit: docs/counters-pass.md).
    std::vector<pid_t> existing_tasks;
  };
  // Opens everything it can on the calling thread, with inherit; never fails: what it
  // could not open is in sources() with the reason.
  static std::unique_ptr<TaskCounters> Open(const Options& options);
  static std::unique_ptr<TaskCounters> Open() { return Open(Options{}); }
  // The events Open opens on each counted task at most (an fd each): the calling thread's
  // children inherit copies without fds, but every existing task has its own.
  static uint64_t EventsPerTask(const Options& options);

  TaskCounters(const TaskCounters&) = delete;
  TaskCounters& operator=(const TaskCounters&) = delete;
  ~TaskCounters();

  absl::Status Start();
  // Waits first for this process's exiting threads to finish (lib/thread_exit.h): a
  // thread joined just before still owes its counts.
  absl::StatusOr<TaskCounts> Stop();

  bool available(TaskCounter counter) const;
  const std::vector<CounterSource>& sources() const { return sources_; }

 private:
  struct Totals {
    std::vector<uint64_t> values;  // by counter index
    uint64_t rusage_switches = 0;
    uint64_t rusage_faults = 0;
  };
  struct LockRing {
    PerfEvent begin;
    PerfEvent end;
    RingBuffer ring;
    std::vector<PerfEvent> existing;  // begin and end of each existing task, into `ring`
  };
  TaskCounters() = default;
  // Opens one inherited counting event per counted task (the calling thread and each
  // existing task); its index in counters_, or -1 and why_not.
  int AddCounter(const perf_event_attr& attr, const char* what, std::string* why_not);
  void OpenIpiCounters();
  void OpenLockRings(const Options& options);
  void OpenSyscallCounter(const Options& options);
  void SetSource(TaskCounter counter, bool available, std::string source);
  absl::StatusOr<Totals> Read();
  // Drains every lock ring; keeps the samples only when `keep`.
  void DrainLocks(bool keep, std::vector<LockSample>* samples, uint64_t* lost);

  std::vector<pid_t> tasks_;                      // 0 (the calling thread), then existing_tasks
  std::vector<std::vector<PerfEvent>> counters_;  // by index: one event per task, summed
  int ipi_cpu_index_ = -1;
  std::vector<int> ipi_mask_target_indexes_;  // one per target CPU
  int ipi_mask_calls_index_ = -1;
  int xcalls_index_ = -1;
  int switches_index_ = -1;
  int migrations_index_ = -1;
  int faults_index_ = -1;
  int syscalls_index_ = -1;
  std::vector<LockRing> lock_rings_;
  uint16_t lock_begin_id_ = 0;
  uint16_t lock_end_id_ = 0;
  std::vector<CounterSource> sources_;
  Totals start_;
};

// The tracepoints TaskCounters::Open opens with its default Options (not
// raw_syscalls:sys_enter: see TracepointKeepAlive, lib/tracepoint_keep_alive.h), for
// TracepointKeepAlive::Open.
std::vector<std::string> CountingTracepoints();

}  // namespace perfscale

#endif  // PERFSCALE_LIB_TASK_COUNTERS_H_
