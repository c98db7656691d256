#include "benchmarks/event_open/cpu_workers.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "lib/cpu_set.h"
#include "lib/errno_status.h"

namespace perfscale {

CpuWorkers::CpuWorkers(std::vector<int> cpus, PinSelf pin)
    : cpus_(std::move(cpus)), pin_(std::move(pin)) {
  results_.resize(cpus_.size());
  pin_results_.resize(cpus_.size());
}

absl::StatusOr<std::unique_ptr<CpuWorkers>> CpuWorkers::Start(const std::vector<int>& cpus,
                                                              PinSelf pin) {
  if (!pin) pin = [](int cpu) { return SetAffinity(std::vector<int>{cpu}); };
  std::unique_ptr<CpuWorkers> pool(new CpuWorkers(cpus, std::move(pin)));
  // Sized before any thread starts: workers hold pointers into it.
  pool->slots_.reserve(cpus.size());
  for (size_t i = 0; i < cpus.size(); ++i) {
    pool->slots_.push_back(Slot{pool.get(), static_cast<int>(i)});
  }
  pool->threads_.reserve(cpus.size());
  for (size_t i = 0; i < cpus.size(); ++i) {
    pthread_t thread;
    int err = pthread_create(&thread, nullptr, &CpuWorkers::Main, &pool->slots_[i]);
    if (err != 0) {
      pool->Stop();
      return ErrnoStatus(err, absl::StrCat("pthread_create (worker for CPU ", cpus[i], ")"));
    }
    pool->threads_.push_back(thread);
  }
  std::unique_lock<std::mutex> lock(pool->mu_);
  pool->to_caller_.wait(lock, [&] { return pool->pin_reports_ == pool->size(); });
  for (size_t i = 0; i < cpus.size(); ++i) {
    const absl::Status& pinned = pool->pin_results_[i];
    if (pinned.ok()) continue;
    pool->unpinned_.push_back(cpus[i]);
    if (pool->refusal_.empty()) pool->refusal_ = std::string(pinned.message());
  }
  return pool;
}

void* CpuWorkers::Main(void* arg) {
  Slot* slot = static_cast<Slot*>(arg);
  CpuWorkers* pool = slot->pool;
  absl::Status pinned = pool->pin_(pool->cpu(slot->index));
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(pool->mu_);
  pool->pin_results_[static_cast<size_t>(slot->index)] = std::move(pinned);
  ++pool->pin_reports_;
  pool->to_caller_.notify_all();
  for (;;) {
    pool->to_workers_.wait(lock, [&] { return pool->stopping_ || pool->generation_ != seen; });
    if (pool->stopping_) return nullptr;
    seen = pool->generation_;
    const Job* job = pool->job_;
    lock.unlock();
    absl::Status result = (*job)(slot->index);
    lock.lock();
    pool->results_[static_cast<size_t>(slot->index)] = std::move(result);
    if (--pool->running_ == 0) pool->to_caller_.notify_all();
  }
}

absl::Status CpuWorkers::RunOnEach(const Job& job) {
  std::unique_lock<std::mutex> lock(mu_);
  job_ = &job;
  running_ = size();
  for (absl::Status& result : results_) result = absl::OkStatus();
  ++generation_;
  to_workers_.notify_all();
  to_caller_.wait(lock, [&] { return running_ == 0; });
  job_ = nullptr;
  for (const absl::Status& result : results_) {
    if (!result.ok()) return result;
  }
  return absl::OkStatus();
}

void CpuWorkers::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  to_workers_.notify_all();
  for (pthread_t thread : threads_) pthread_join(thread, nullptr);
  threads_.clear();
}

CpuWorkers::~CpuWorkers() { Stop(); }

}  // namespace perfscale
