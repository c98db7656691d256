// A joined thread is not yet a finished one. pthread_join returns when the kernel clears
// the thread's tid (exit_mm, early in do_exit); the kernel folds the thread's inherited
// perf counts into the parent's events later (perf_event_exit_task), and the thread
// leaves /proc/self/task last (exit_notify). On a busy or slow-to-schedule machine that
// window is long enough to be seen: a count read, or the tasks listed, straight after a
// join can miss the thread's last counts or still show it. Whoever reads either waits
// here first for the threads that are exiting (PF_EXITING) to be gone.
//
// Example:
//   worker.join();
//   if (absl::Status s = perfscale::WaitForExitingThreads(absl::Seconds(5)); !s.ok()) ...
//   absl::StatusOr<uint64_t> count = event.ReadCount();
#ifndef PERFSCALE_LIB_THREAD_EXIT_H_
#define PERFSCALE_LIB_THREAD_EXIT_H_

#include <sys/types.h>

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace perfscale {

// Whether the text of /proc/PID/task/TID/stat says the task is exiting: PF_EXITING in the
// flags, field 9 (TaskStatField).
absl::StatusOr<bool> StatSaysExiting(absl::string_view stat);

// The ids of this process's threads that are exiting now; a thread that finished between
// the listing and the read of its stat is not one.
absl::StatusOr<std::vector<pid_t>> ExitingThreads();

// Waits until no thread of this process is exiting, or `timeout` passes: then
// DeadlineExceeded, naming the threads still exiting. Returns at once when none is.
absl::Status WaitForExitingThreads(absl::Duration timeout);

}  // namespace perfscale

#endif  // PERFSCALE_LIB_THREAD_EXIT_H_
