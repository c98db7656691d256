// What must not outlive the process when a user presses Ctrl-C (or a nightly job's
// timeout sends SIGTERM) in the middle of a benchmark: child processes and temporary
// files. Components register them while they exist; the handler installed by the
// benchmarks' main kills and reaps the children, unlinks the files, and exits with
// 128 + signal. Everything here is async-signal-safe: fixed tables of atomics.
//
// Children register through lib/child_process.h, which every forked child goes through;
// temporary paths with ScopedTempPathRegistration while they exist.
//
// Example:
//   perfscale::ScopedTempPathRegistration registered(dir);  // until it is removed
#ifndef PERFSCALE_LIB_INTERRUPT_CLEANUP_H_
#define PERFSCALE_LIB_INTERRUPT_CLEANUP_H_

#include <sys/types.h>

#include <string>

namespace perfscale {

// Installs SIGINT/SIGTERM/SIGHUP handlers that clean up and exit. Call once from main.
void InstallInterruptCleanup();

// Returns false when the table is full (the caller then simply has no protection).
bool RegisterChild(pid_t pid);
void UnregisterChild(pid_t pid);
bool RegisterTempPath(const std::string& path);
void UnregisterTempPath(const std::string& path);

// Runs what the handler would run, without exiting (tests use it).
void RunInterruptCleanupForTest();

class ScopedTempPathRegistration {
 public:
  explicit ScopedTempPathRegistration(std::string path) : path_(std::move(path)) {
    RegisterTempPath(path_);
  }
  ~ScopedTempPathRegistration() { UnregisterTempPath(path_); }
  ScopedTempPathRegistration(const ScopedTempPathRegistration&) = delete;
  ScopedTempPathRegistration& operator=(const ScopedTempPathRegistration&) = delete;

 private:
  std::string path_;
};

}  // namespace perfscale

#endif  // PERFSCALE_LIB_INTERRUPT_CLEANUP_H_
