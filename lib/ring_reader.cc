#include "lib/ring_reader.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <system_error>
#include <utility>

#include "lib/errno_status.h"

namespace perfscale {

absl::Status RingReader::Start(std::function<void()> drain) {
  drain_ = std::move(drain);
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) return ErrnoStatus(errno, "eventfd");
  try {
    thread_ = std::thread([this] { Main(); });
  } catch (const std::system_error& e) {
    return ErrnoStatus(e.code().value(), "start the ring buffer reader thread");
  }
  return absl::OkStatus();
}

void RingReader::Arm(std::vector<int> fds) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    fds_ = std::move(fds);
    armed_ = true;
  }
  armed_or_quit_.notify_one();
}

void RingReader::Main() {
  std::vector<pollfd> fds;
  {
    std::unique_lock<std::mutex> lock(mu_);
    armed_or_quit_.wait(lock, [this] { return armed_ || quit_; });
    if (!armed_) return;
    fds.push_back(pollfd{wake_fd_, POLLIN, 0});
    for (int fd : fds_) fds.push_back(pollfd{fd, POLLIN, 0});
  }
  for (;;) {
    int n = poll(fds.data(), fds.size(), -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::lock_guard<std::mutex> lock(mu_);
      if (error_.ok()) error_ = ErrnoStatus(errno, "poll ring buffers");
      break;
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      // A task-scope event whose task is gone hangs up for good; stop polling it but
      // keep draining its buffer.
      if (fds[i].revents & (POLLHUP | POLLERR | POLLNVAL)) fds[i].fd = -1;
    }
    drain_();
    if (fds[0].revents & POLLIN) break;
  }
  drain_();
}

void RingReader::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  armed_or_quit_.notify_one();
  if (wake_fd_ >= 0) {
    uint64_t one = 1;
    ssize_t n;
    do {
      n = write(wake_fd_, &one, sizeof(one));
    } while (n < 0 && errno == EINTR);
  }
  if (thread_.joinable()) thread_.join();
  if (wake_fd_ >= 0) close(wake_fd_);
  wake_fd_ = -1;
}

absl::Status RingReader::error() {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

RingReader::~RingReader() { Stop(); }

}  // namespace perfscale
