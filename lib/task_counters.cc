#include "lib/task_counters.h"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "lib/cpu_set.h"
#include "lib/errno_status.h"
#include "lib/perf_attr.h"
#include "lib/thread_exit.h"
#include "lib/tracefs.h"

namespace perfscale {
namespace {

// Counting on the calling task and everything it creates later, user and kernel.
perf_event_attr Inherited(perf_event_attr attr) {
  attr.inherit = 1;
  attr.exclude_kernel = 0;
  attr.exclude_hv = 1;
  return attr;
}

std::string Reason(const absl::Status& status) { return std::string(status.message()); }

// Each counter's name and field, in TaskCounter's order.
struct CounterInfo {
  TaskCounter counter;
  const char* name;
  uint64_t TaskCounts::*field;
};
constexpr CounterInfo kCounterInfo[] = {
    {TaskCounter::kIpisSent, "ipis_sent", &TaskCounts::ipis_sent},
    {TaskCounter::kIpiMaskCalls, "ipi_mask_calls", &TaskCounts::ipi_mask_calls},
    {TaskCounter::kXcalls, "xcalls", &TaskCounts::xcalls},
    {TaskCounter::kLockContended, "lock_contended", &TaskCounts::lock_contended},
    {TaskCounter::kLockWait, "lock_wait_us", &TaskCounts::lock_wait_ns},
    {TaskCounter::kCtxSwitches, "ctx_switches", &TaskCounts::ctx_switches},
    {TaskCounter::kCpuMigrations, "cpu_migrations", &TaskCounts::cpu_migrations},
    {TaskCounter::kPageFaults, "page_faults", &TaskCounts::page_faults},
    {TaskCounter::kSyscalls, "syscalls", &TaskCounts::syscalls},
};
static_assert(std::size(kCounterInfo) == std::size(kAllTaskCounters));
static_assert(
    [] {
      for (size_t i = 0; i < std::size(kCounterInfo); ++i) {
        if (static_cast<size_t>(kCounterInfo[i].counter) != i) return false;
      }
      return true;
    }(),
    "kCounterInfo is in TaskCounter's order");

const CounterInfo& Info(TaskCounter counter) { return kCounterInfo[static_cast<size_t>(counter)]; }

}  // namespace

TaskCounts& TaskCounts::operator+=(const TaskCounts& other) {
  for (const CounterInfo& info : kCounterInfo) this->*info.field += other.*info.field;
  lock_records_lost += other.lock_records_lost;
  return *this;
}

uint64_t TaskCounts::Count(TaskCounter counter) const { return this->*Info(counter).field; }

const char* TaskCounterName(TaskCounter counter) { return Info(counter).name; }

std::unique_ptr<TaskCounters> TaskCounters::Open(const Options& options) {
  std::unique_ptr<TaskCounters> counters(new TaskCounters());
  counters->tasks_.push_back(0);
  counters->tasks_.insert(counters->tasks_.end(), options.existing_tasks.begin(),
                          options.existing_tasks.end());
  struct Software {
    TaskCounter counter;
    uint64_t config;
    int* index;
    const char* source;
  };
  const Software software[] = {
      {TaskCounter::kCtxSwitches, PERF_COUNT_SW_CONTEXT_SWITCHES, &counters->switches_index_,
       "software event context-switches"},
      {TaskCounter::kCpuMigrations, PERF_COUNT_SW_CPU_MIGRATIONS, &counters->migrations_index_,
       "software event cpu-migrations"},
      {TaskCounter::kPageFaults, PERF_COUNT_SW_PAGE_FAULTS, &counters->faults_index_,
       "software event page-faults"},
  };
  for (const Software& event : software) {
    std::string why_not;
    *event.index =
        counters->AddCounter(Inherited(SoftwareAttr(event.config)), event.source, &why_not);
    if (*event.index >= 0) {
      counters->SetSource(event.counter, true, event.source);
    } else if (event.counter == TaskCounter::kCpuMigrations) {
      counters->SetSource(event.counter, false, why_not);
    } else {
      counters->SetSource(event.counter, true,
                          absl::StrCat("getrusage (this process and reaped children; ",
                                       event.source, " refused: ", why_not, ")"));
    }
  }
  counters->OpenIpiCounters();
  counters->OpenLockRings(options);
  counters->OpenSyscallCounter(options);
  return counters;
}

uint64_t TaskCounters::EventsPerTask(const Options& options) {
  absl::StatusOr<std::vector<int>> cpus = OnlineCpus();
  const uint64_t n = cpus.ok() ? cpus->size() : 1;
  // 3 software events, ipi_send_cpu, csd_queue_cpu, ipi_send_cpumask per target CPU, a
  // begin and an end lock event per CPU, and raw_syscalls:sys_enter if asked.
  return 5 + n + 2 * n + (options.count_syscalls ? 1 : 0);
}

TaskCounters::~TaskCounters() = default;

int TaskCounters::AddCounter(const perf_event_attr& attr, const char* what, std::string* why_not) {
  // Alone, not in a group: an inherited group does not count in a new task until its
  // first context switch (Linux 6.18: of 1000 getppid() a thread made at its start, a
  // group member counted 1-2 in 37 of 40 runs, the same event alone all 1000 in 40 of 40).
  std::vector<PerfEvent> events;
  for (pid_t task : tasks_) {
    absl::StatusOr<PerfEvent> counter = PerfEvent::Open(attr, task, -1);
    if (!counter.ok()) {
      *why_not = task == 0
                     ? absl::StrCat(what, ": ", Reason(counter.status()))
                     : absl::StrCat(what, " on thread ", task, ": ", Reason(counter.status()));
      return -1;
    }
    events.push_back(*std::move(counter));
  }
  counters_.push_back(std::move(events));
  return static_cast<int>(counters_.size()) - 1;
}

void TaskCounters::OpenSyscallCounter(const Options& options) {
  if (!options.count_syscalls) {
    SetSource(TaskCounter::kSyscalls, false,
              "not asked for (it adds work to every syscall it counts)");
    return;
  }
  std::string why_not;
  absl::StatusOr<uint64_t> id = TracepointId("raw_syscalls:sys_enter");
  if (id.ok()) {
    syscalls_index_ =
        AddCounter(Inherited(TracepointAttr(*id)), "raw_syscalls:sys_enter", &why_not);
  } else {
    why_not = Reason(id.status());
  }
  SetSource(
      TaskCounter::kSyscalls, syscalls_index_ >= 0,
      syscalls_index_ >= 0 ? "tracepoint raw_syscalls:sys_enter (counting, inherited)" : why_not);
}

void TaskCounters::OpenIpiCounters() {
  std::string why_not;
  absl::StatusOr<uint64_t> cpu_id = TracepointId("ipi:ipi_send_cpu");
  absl::StatusOr<uint64_t> mask_id = TracepointId("ipi:ipi_send_cpumask");
  absl::StatusOr<uint64_t> csd_id = TracepointId("csd:csd_queue_cpu");

  if (csd_id.ok()) {
    xcalls_index_ = AddCounter(Inherited(TracepointAttr(*csd_id)), "csd:csd_queue_cpu", &why_not);
  } else {
    why_not = Reason(csd_id.status());
  }
  SetSource(TaskCounter::kXcalls, xcalls_index_ >= 0,
            xcalls_index_ >= 0 ? "tracepoint csd:csd_queue_cpu (counting, inherited)" : why_not);

  if (!cpu_id.ok() || !mask_id.ok()) {
    // Kernels before 6.4 have neither; /proc/interrupts (ipis_system) still counts.
    std::string missing = Reason(cpu_id.ok() ? mask_id.status() : cpu_id.status());
    SetSource(TaskCounter::kIpisSent, false, missing);
    SetSource(TaskCounter::kIpiMaskCalls, false, missing);
    return;
  }
  ipi_cpu_index_ = AddCounter(Inherited(TracepointAttr(*cpu_id)), "ipi:ipi_send_cpu", &why_not);
  if (ipi_cpu_index_ < 0) {
    SetSource(TaskCounter::kIpisSent, false, why_not);
    SetSource(TaskCounter::kIpiMaskCalls, false, why_not);
    return;
  }
  // One cpumask event per target CPU, filtered on that CPU, so a call that interrupts k
  // CPUs counts k. The filter must be set before any child inherits the event.
  absl::StatusOr<std::vector<int>> cpus = OnlineCpus();
  std::string filter_refused = cpus.ok() ? "" : Reason(cpus.status());
  int unfiltered_index = -1;  // a cpumask member whose filter was refused
  if (cpus.ok()) {
    for (int cpu : *cpus) {
      int index =
          AddCounter(Inherited(TracepointAttr(*mask_id)), "ipi:ipi_send_cpumask", &filter_refused);
      if (index < 0) break;
      std::string filter = absl::StrCat("cpumask & CPUS{", cpu, "}");
      for (const PerfEvent& event : counters_.back()) {
        if (ioctl(event.fd(), PERF_EVENT_IOC_SET_FILTER, filter.c_str()) != 0) {
          filter_refused = absl::StrCat("filter '", filter, "' refused (", std::strerror(errno),
                                        "; cpumask filters need Linux 6.6+)");
          unfiltered_index = index;
          break;
        }
      }
      if (unfiltered_index >= 0) break;
      ipi_mask_target_indexes_.push_back(index);
    }
  }
  if (filter_refused.empty()) {
    SetSource(TaskCounter::kIpisSent, true,
              "tracepoints ipi:ipi_send_cpu + ipi:ipi_send_cpumask, one counting event per "
              "target CPU (filter cpumask & CPUS{n}), inherited");
    SetSource(TaskCounter::kIpiMaskCalls, false, "not needed: ipis_sent counts every target");
    return;
  }
  // Per-target counters opened before the refusal stay open, unread (closing them would
  // move the indexes after them), and the unfiltered one counts calls instead.
  ipi_mask_target_indexes_.clear();
  ipi_mask_calls_index_ = unfiltered_index;
  std::string calls_why_not = filter_refused;
  SetSource(TaskCounter::kIpisSent, true,
            absl::StrCat("tracepoint ipi:ipi_send_cpu only (single-target IPIs); multi-target "
                         "sends are in ipi_mask_calls: ",
                         filter_refused));
  SetSource(TaskCounter::kIpiMaskCalls, ipi_mask_calls_index_ >= 0,
            ipi_mask_calls_index_ >= 0
                ? "tracepoint ipi:ipi_send_cpumask, calls (each one or more IPIs), inherited"
                : calls_why_not);
}

void TaskCounters::OpenLockRings(const Options& options) {
  auto unavailable = [this](const std::string& why) {
    lock_rings_.clear();
    SetSource(TaskCounter::kLockContended, false, why);
    SetSource(TaskCounter::kLockWait, false, why);
  };
  absl::StatusOr<uint64_t> begin_id = TracepointId("lock:contention_begin");
  if (!begin_id.ok()) return unavailable(Reason(begin_id.status()));
  absl::StatusOr<uint64_t> end_id = TracepointId("lock:contention_end");
  if (!end_id.ok()) return unavailable(Reason(end_id.status()));
  lock_begin_id_ = static_cast<uint16_t>(*begin_id);
  lock_end_id_ = static_cast<uint16_t>(*end_id);
  absl::StatusOr<std::vector<int>> cpus = OnlineCpus();
  if (!cpus.ok()) return unavailable(Reason(cpus.status()));
  // An inherited event can only be mmap'd when bound to a CPU: one ring per CPU, the end
  // event writing into the begin event's ring.
  for (int cpu : *cpus) {
    perf_event_attr attr = Inherited(TracepointAttr(*begin_id));
    attr.sample_period = 1;
    attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW;
    // One clock on every CPU: a wait may begin on one CPU and end on another.
    attr.use_clockid = 1;
    attr.clockid = CLOCK_MONOTONIC;
    LockRing ring;
    absl::StatusOr<PerfEvent> begin = PerfEvent::Open(attr, 0, cpu);
    if (!begin.ok()) return unavailable(Reason(begin.status()));
    attr.config = *end_id;
    absl::StatusOr<PerfEvent> end = PerfEvent::Open(attr, 0, cpu);
    if (!end.ok()) return unavailable(Reason(end.status()));
    absl::StatusOr<RingBuffer> mapped = RingBuffer::Map(begin->fd(), options.lock_ring_pages);
    if (!mapped.ok()) return unavailable(Reason(mapped.status()));
    if (ioctl(end->fd(), PERF_EVENT_IOC_SET_OUTPUT, begin->fd()) != 0) {
      return unavailable(Reason(ErrnoStatus(errno, "PERF_EVENT_IOC_SET_OUTPUT (lock ring)")));
    }
    // An existing task's samples on this CPU go into the same ring.
    for (size_t t = 1; t < tasks_.size(); ++t) {
      for (uint64_t id : {*begin_id, *end_id}) {
        attr.config = id;
        absl::StatusOr<PerfEvent> event = PerfEvent::Open(attr, tasks_[t], cpu);
        if (!event.ok()) {
          return unavailable(absl::StrCat("thread ", tasks_[t], ": ", Reason(event.status())));
        }
        if (ioctl(event->fd(), PERF_EVENT_IOC_SET_OUTPUT, begin->fd()) != 0) {
          return unavailable(Reason(ErrnoStatus(errno, "PERF_EVENT_IOC_SET_OUTPUT (lock ring)")));
        }
        ring.existing.push_back(*std::move(event));
      }
    }
    ring.begin = *std::move(begin);
    ring.end = *std::move(end);
    ring.ring = *std::move(mapped);
    lock_rings_.push_back(std::move(ring));
  }
  std::string source = absl::StrCat(
      "tracepoints lock:contention_begin/end sampled (tid, time, lock address) into one ",
      options.lock_ring_pages, "-page ring per CPU, inherited; paired per task like perf lock");
  SetSource(TaskCounter::kLockContended, true, source);
  SetSource(TaskCounter::kLockWait, true, source);
}

void TaskCounters::SetSource(TaskCounter counter, bool available, std::string source) {
  for (CounterSource& existing : sources_) {
    if (existing.counter == counter) {
      existing.available = available;
      existing.source = std::move(source);
      return;
    }
  }
  sources_.push_back(CounterSource{counter, available, std::move(source)});
}

bool TaskCounters::available(TaskCounter counter) const {
  for (const CounterSource& source : sources_) {
    if (source.counter == counter) return source.available;
  }
  return false;
}

absl::StatusOr<TaskCounters::Totals> TaskCounters::Read() {
  Totals totals;
  totals.values.reserve(counters_.size());
  for (const std::vector<PerfEvent>& counter : counters_) {
    uint64_t sum = 0;
    for (const PerfEvent& event : counter) {
      uint64_t value = 0;
      ssize_t n = read(event.fd(), &value, sizeof(value));
      if (n < 0) return ErrnoStatus(errno, "read the attribution counters");
      if (n != sizeof(value)) return absl::InternalError("attribution counter read was short");
      sum += value;
    }
    totals.values.push_back(sum);
  }
  rusage self{}, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  totals.rusage_switches = static_cast<uint64_t>(self.ru_nvcsw + self.ru_nivcsw +
                                                 children.ru_nvcsw + children.ru_nivcsw);
  totals.rusage_faults = static_cast<uint64_t>(self.ru_minflt + self.ru_majflt +
                                               children.ru_minflt + children.ru_majflt);
  return totals;
}

void TaskCounters::DrainLocks(bool keep, std::vector<LockSample>* samples, uint64_t* lost) {
  for (LockRing& ring : lock_rings_) {
    absl::StatusOr<RingBuffer::Consumed> consumed =
        ring.ring.Consume([&](const perf_event_header& header, absl::Span<const uint8_t> record) {
          if (!keep) return;
          if (header.type == PERF_RECORD_LOST) {
            // PERF_RECORD_LOST: the header, the event id, then how many records were lost.
            uint64_t lost_now = 0;
            if (record.size() >= sizeof(header) + 16) {
              std::memcpy(&lost_now, record.data() + sizeof(header) + 8, sizeof(lost_now));
            }
            *lost += lost_now;
            return;
          }
          absl::StatusOr<LockSample> sample = ParseLockSample(record, lock_begin_id_, lock_end_id_);
          if (sample.ok()) samples->push_back(*sample);
        });
    // A corrupt ring was reset by Consume; what it held is lost, and said so.
    if (!consumed.ok() && keep) ++*lost;
  }
}

absl::Status TaskCounters::Start() {
  DrainLocks(/*keep=*/false, nullptr, nullptr);
  absl::StatusOr<Totals> totals = Read();
  if (!totals.ok()) return totals.status();
  start_ = *std::move(totals);
  return absl::OkStatus();
}

absl::StatusOr<TaskCounts> TaskCounters::Stop() {
  // A thread joined just now may not have folded its counts into ours yet.
  if (absl::Status settled = WaitForExitingThreads(absl::Seconds(5)); !settled.ok()) {
    return settled;
  }
  absl::StatusOr<Totals> end = Read();
  if (!end.ok()) return end.status();
  auto delta = [&](int index) -> uint64_t {
    if (index < 0 || static_cast<size_t>(index) >= end->values.size() ||
        static_cast<size_t>(index) >= start_.values.size()) {
      return 0;
    }
    return end->values[static_cast<size_t>(index)] - start_.values[static_cast<size_t>(index)];
  };
  TaskCounts counts;
  counts.ipis_sent = delta(ipi_cpu_index_);
  for (int index : ipi_mask_target_indexes_) counts.ipis_sent += delta(index);
  counts.ipi_mask_calls = delta(ipi_mask_calls_index_);
  counts.xcalls = delta(xcalls_index_);
  counts.ctx_switches =
      switches_index_ >= 0 ? delta(switches_index_) : end->rusage_switches - start_.rusage_switches;
  counts.cpu_migrations = delta(migrations_index_);
  counts.syscalls = delta(syscalls_index_);
  counts.page_faults =
      faults_index_ >= 0 ? delta(faults_index_) : end->rusage_faults - start_.rusage_faults;
  if (!lock_rings_.empty()) {
    std::vector<LockSample> samples;
    DrainLocks(/*keep=*/true, &samples, &counts.lock_records_lost);
    LockWaits waits = PairLockContention(std::move(samples));
    counts.lock_contended = waits.contended;
    counts.lock_wait_ns = waits.wait_ns;
  }
  return counts;
}

std::vector<std::string> CountingTracepoints() {
  return {"csd:csd_queue_cpu", "ipi:ipi_send_cpu", "ipi:ipi_send_cpumask", "lock:contention_begin",
          "lock:contention_end"};
}

}  // namespace perfscale
