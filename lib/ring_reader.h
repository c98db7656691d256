// The thread that drains perf ring buffers: it sleeps in poll() on the events' fds until
// the kernel wakes it (a buffer reached its watermark) and then calls `drain`; Stop()
// wakes it for one last drain and joins it.
//
// It is started before the events are opened and armed with their fds afterwards: a
// thread created after an inherited event is opened would inherit it and be recorded
// itself.
//
// Example:
//   perfscale::RingReader reader;
//   if (absl::Status s = reader.Start([&] { DrainAll(); }); !s.ok()) return s;
//   ... open the events, map their buffers ...
//   reader.Arm(fds);
//   ... the workload ...
//   (disable the events, so every record is in a buffer)
//   reader.Stop();  // drained one last time and joined
#ifndef PERFSCALE_LIB_RING_READER_H_
#define PERFSCALE_LIB_RING_READER_H_

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"

namespace perfscale {

class RingReader {
 public:
  RingReader() = default;
  RingReader(const RingReader&) = delete;
  RingReader& operator=(const RingReader&) = delete;
  ~RingReader();

  // Starts the thread, which waits for Arm. `drain` runs on it only.
  absl::Status Start(std::function<void()> drain);
  // The fds to poll; the thread starts draining.
  void Arm(std::vector<int> fds);
  // Wakes the thread, lets it drain once more (only if armed), joins it. Idempotent.
  void Stop();
  // The first poll error, once stopped.
  absl::Status error();

 private:
  void Main();

  std::function<void()> drain_;
  int wake_fd_ = -1;  // eventfd: drain one last time and exit
  std::thread thread_;
  // std::mutex rather than absl::Mutex: ThreadSanitizer sees through libstdc++'s
  // pthread calls, not through a prebuilt abseil.
  std::mutex mu_;
  std::condition_variable armed_or_quit_;
  std::vector<int> fds_;  // guarded by mu_ until armed
  bool armed_ = false;    // guarded by mu_
  bool quit_ = false;     // guarded by mu_
  absl::Status error_;    // guarded by mu_
};

}  // namespace perfscale

#endif  // PERFSCALE_LIB_RING_READER_H_
