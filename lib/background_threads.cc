#include "lib/background_threads.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "lib/cpu_set.h"
#include "lib/errno_status.h"

namespace perfscale {

void* BackgroundThreads::Parked(void* self) {
  int* released = &static_cast<BackgroundThreads*>(self)->released_;
  // Loops because futex wakes can be spurious, and the value may already have changed.
  while (__atomic_load_n(released, __ATOMIC_ACQUIRE) == 0) {
    syscall(SYS_futex, released, FUTEX_WAIT, 0, nullptr, nullptr, 0);
  }
  return nullptr;
}

void* BackgroundThreads::Spinning(void* self) {
  int* released = &static_cast<BackgroundThreads*>(self)->released_;
  while (__atomic_load_n(released, __ATOMIC_RELAXED) == 0) {
  }
  return nullptr;
}

absl::StatusOr<std::unique_ptr<BackgroundThreads>> BackgroundThreads::Start(
    Kind kind, int count, const std::vector<int>& cpus) {
  std::unique_ptr<BackgroundThreads> group(new BackgroundThreads(kind));
  group->threads_.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (!cpus.empty()) {
      int cpu = cpus[static_cast<size_t>(i) % cpus.size()];
      CpuMask mask(cpu);
      mask.Set(cpu);
      pthread_attr_setaffinity_np(&attr, mask.size_bytes(), mask.raw());
    }
    pthread_t thread;
    int err = pthread_create(&thread, &attr, kind == kParked ? &Parked : &Spinning, group.get());
    pthread_attr_destroy(&attr);
    if (err != 0) {
      group->Stop();
      return ErrnoStatus(err, absl::StrCat("pthread_create (thread ", i + 1, " of ", count, ")"));
    }
    group->threads_.push_back(thread);
  }
  return group;
}

void BackgroundThreads::Stop() {
  __atomic_store_n(&released_, 1, __ATOMIC_RELEASE);
  if (kind_ == kParked) {
    syscall(SYS_futex, &released_, FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
  }
  for (pthread_t thread : threads_) pthread_join(thread, nullptr);
  threads_.clear();
}

BackgroundThreads::~BackgroundThreads() { Stop(); }

}  // namespace perfscale
