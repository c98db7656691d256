// A pool of worker threads, one per CPU of a list, each pinned to its CPU, that run one
// job on every CPU at once and report back. Used to set up per-CPU perf events in
// parallel (the next step the event-open seed names): each worker opens its own CPU's
// events locally, so no opener waits on another CPU's IPIs.
//
// Pinning is an optimization: where the kernel refuses a worker's affinity (cpuset,
// isolated CPU) the worker runs unpinned and unpinned_cpus() says which.
//
// Example:
//   absl::StatusOr<std::unique_ptr<perfscale::CpuWorkers>> workers =
//       perfscale::CpuWorkers::Start(*perfscale::OnlineCpus());
//   absl::Status done = (*workers)->RunOnEach([&](int index) {
//     return OpenEventsOn((*workers)->cpu(index));
//   });
//   // the destructor stops and joins the workers
#ifndef PERFSCALE_BENCHMARKS_EVENT_OPEN_CPU_WORKERS_H_
#define PERFSCALE_BENCHMARKS_EVENT_OPEN_CPU_WORKERS_H_

#include <pthread.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace perfscale {

class CpuWorkers {
 public:
  // How a worker pins itself to `cpu` (the calling thread). Tests substitute one that
  // refuses; the default is sched_setaffinity.
  using PinSelf = std::function<absl::Status(int cpu)>;
  using Job = std::function<absl::Status(int index)>;

  // Starts one worker per entry of `cpus` and waits until each has tried to pin itself.
  // On a failed pthread_create the ones already started are stopped and joined.
  static absl::StatusOr<std::unique_ptr<CpuWorkers>> Start(const std::vector<int>& cpus,
                                                           PinSelf pin = nullptr);

  CpuWorkers(const CpuWorkers&) = delete;
  CpuWorkers& operator=(const CpuWorkers&) = delete;
  ~CpuWorkers();

  // Runs job(i) on worker i for every worker concurrently and returns once all have
  // returned: the first error by worker index, else OK. Not reentrant.
  absl::Status RunOnEach(const Job& job);

  int size() const { return static_cast<int>(cpus_.size()); }
  int cpu(int index) const { return cpus_[static_cast<size_t>(index)]; }
  // CPUs whose worker could not be pinned, and the first refusal's message.
  const std::vector<int>& unpinned_cpus() const { return unpinned_; }
  const std::string& refusal() const { return refusal_; }

 private:
  struct Slot {
    CpuWorkers* pool;
    int index;
  };
  explicit CpuWorkers(std::vector<int> cpus, PinSelf pin);
  static void* Main(void* slot);
  void Stop();

  const std::vector<int> cpus_;
  const PinSelf pin_;
  std::vector<Slot> slots_;
  std::vector<pthread_t> threads_;
  std::vector<int> unpinned_;
  std::string refusal_;

  // Everything below is guarded by mu_.
  std::mutex mu_;
  std::condition_variable to_workers_;
  std::condition_variable to_caller_;
  int pin_reports_ = 0;
  uint64_t generation_ = 0;  // bumped once per RunOnEach
  int running_ = 0;
  bool stopping_ = false;
  const Job* job_ = nullptr;
  std::vector<absl::Status> results_;
  std::vector<absl::Status> pin_results_;
};

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_EVENT_OPEN_CPU_WORKERS_H_
