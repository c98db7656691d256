// Threads that exist only to be there while something else is measured: parked ones
// that block in the kernel (futex wait, like perf bench's "passive" threads) and
// spinning ones that keep a CPU busy in user space ("active"). They inherit whatever
// inheritable perf events the creating thread has, which is the point. Destruction
// releases and joins them all.
//
// Example:
//   absl::StatusOr<std::unique_ptr<perfscale::BackgroundThreads>> passive =
//       perfscale::BackgroundThreads::Start(perfscale::BackgroundThreads::kParked, 8);
#ifndef PERFSCALE_LIB_BACKGROUND_THREADS_H_
#define PERFSCALE_LIB_BACKGROUND_THREADS_H_

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace perfscale {

class BackgroundThreads {
 public:
  enum Kind { kParked, kSpinning };

  // Starts `count` threads. When `cpus` is non-empty, thread i is pinned to
  // cpus[i % cpus.size()] from its first instruction (pthread attr affinity). On a
  // failed pthread_create the ones already started are released and joined.
  static absl::StatusOr<std::unique_ptr<BackgroundThreads>> Start(
      Kind kind, int count, const std::vector<int>& cpus = {});

  BackgroundThreads(const BackgroundThreads&) = delete;
  BackgroundThreads& operator=(const BackgroundThreads&) = delete;
  ~BackgroundThreads();

  int size() const { return static_cast<int>(members_.size()); }
  // The threads' kernel ids, once each has started and said its own (Start does not wait
  // for that: waiting would change where the scheduler puts the next thread);
  // DeadlineExceeded when one has not within `timeout`.
  absl::StatusOr<std::vector<pid_t>> Tids(absl::Duration timeout) const;
  // Releases and joins every thread; idempotent.
  void Stop();

 private:
  struct Member {
    BackgroundThreads* group;
    std::atomic<pid_t> tid{0};
    pthread_t thread;
  };

  explicit BackgroundThreads(Kind kind) : kind_(kind) {}
  static void* Parked(void* member);
  static void* Spinning(void* member);

  Kind kind_;
  // A plain int for the futex word; only touched through atomic builtins.
  alignas(64) int released_ = 0;
  std::vector<std::unique_ptr<Member>> members_;
};

}  // namespace perfscale

#endif  // PERFSCALE_LIB_BACKGROUND_THREADS_H_
