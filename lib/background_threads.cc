#include "lib/background_threads.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "lib/cpu_set.h"
#include "lib/errno_status.h"

namespace perfscale {

void* BackgroundThreads::Parked(void* member) {
  auto* self = static_cast<Member*>(member);
  self->tid.store(static_cast<pid_t>(syscall(SYS_gettid)), std::memory_order_release);
  int* released = &self->group->released_;
  // Loops because futex wakes can be spurious, and the value may already have changed.
  while (__atomic_load_n(released, __ATOMIC_ACQUIRE) == 0) {
    syscall(SYS_futex, released, FUTEX_WAIT, 0, nullptr, nullptr, 0);
  }
  return nullptr;
}

void* BackgroundThreads::Spinning(void* member) {
  auto* self = static_cast<Member*>(member);
  self->tid.store(static_cast<pid_t>(syscall(SYS_gettid)), std::memory_order_release);
  int* released = &self->group->released_;
  while (__atomic_load_n(released, __ATOMIC_RELAXED) == 0) {
  }
  return nullptr;
}

absl::StatusOr<std::unique_ptr<BackgroundThreads>> BackgroundThreads::Start(
    Kind kind, int count, const std::vector<int>& cpus) {
  std::unique_ptr<BackgroundThreads> group(new BackgroundThreads(kind));
  group->members_.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (!cpus.empty()) {
      int cpu = cpus[static_cast<size_t>(i) % cpus.size()];
      CpuMask mask(cpu);
      mask.Set(cpu);
      pthread_attr_setaffinity_np(&attr, mask.size_bytes(), mask.raw());
    }
    auto member = std::make_unique<Member>();
    member->group = group.get();
    int err =
        pthread_create(&member->thread, &attr, kind == kParked ? &Parked : &Spinning, member.get());
    pthread_attr_destroy(&attr);
    if (err != 0) {
      group->Stop();
      return ErrnoStatus(err, absl::StrCat("pthread_create (thread ", i + 1, " of ", count, ")"));
    }
    group->members_.push_back(std::move(member));
  }
  return group;
}

void BackgroundThreads::Stop() {
  __atomic_store_n(&released_, 1, __ATOMIC_RELEASE);
  if (kind_ == kParked) {
    syscall(SYS_futex, &released_, FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
  }
  for (const std::unique_ptr<Member>& member : members_) pthread_join(member->thread, nullptr);
  members_.clear();
}

absl::StatusOr<std::vector<pid_t>> BackgroundThreads::Tids(absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  std::vector<pid_t> tids;
  tids.reserve(members_.size());
  for (const std::unique_ptr<Member>& member : members_) {
    pid_t tid;
    while ((tid = member->tid.load(std::memory_order_acquire)) == 0) {
      if (absl::Now() >= deadline) {
        return absl::DeadlineExceededError(
            absl::StrCat("thread ", tids.size() + 1, " of ", members_.size(), " had not started ",
                         absl::FormatDuration(timeout), " after its creation"));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    tids.push_back(tid);
  }
  return tids;
}

BackgroundThreads::~BackgroundThreads() { Stop(); }

}  // namespace perfscale
