// CPU lists as the kernel writes them ("0-3,5,8-9"), the online and possible CPUs, and
// a scoped affinity that moves the calling thread and always restores its old mask.
//
// Masks are sized for the kernel's CPU count (the possible CPUs), not glibc's fixed 1024
// bits, so sched_getaffinity works on machines with more than 1024 CPUs.
//
// Example:
//   for (int cpu : *perfscale::OnlineCpus()) {
//     absl::StatusOr<perfscale::ScopedAffinity> pin = perfscale::ScopedAffinity::PinTo(cpu);
//     ... open this CPU's events here: the IPI becomes a local call ...
//   }  // the original mask is back
#ifndef PERFSCALE_LIB_CPU_SET_H_
#define PERFSCALE_LIB_CPU_SET_H_

#include <sched.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace perfscale {

// Largest CPU number accepted from text; beyond what any kernel supports (NR_CPUS 8192).
inline constexpr int kMaxCpuNumber = 65535;

// Parses the kernel's list format: comma-separated CPUs or inclusive ranges, optional
// trailing newline. Returns them sorted and deduplicated. Empty text is an empty list
// (the kernel writes that for e.g. an empty isolated set).
absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text);

// The inverse: {0,1,2,3,5} -> "0-3,5".
std::string FormatCpuList(const std::vector<int>& cpus);

absl::StatusOr<std::vector<int>> OnlineCpus();
absl::StatusOr<std::vector<int>> PossibleCpus();

// A dynamically sized cpu_set_t.
class CpuMask {
 public:
  // Room for CPUs 0..max_cpu.
  explicit CpuMask(int max_cpu);
  // Exactly `cpus`; InvalidArgument for a CPU outside 0..kMaxCpuNumber.
  static absl::StatusOr<CpuMask> Of(const std::vector<int>& cpus);
  CpuMask(const CpuMask& other);
  CpuMask& operator=(const CpuMask& other);
  ~CpuMask();

  void Set(int cpu);
  bool IsSet(int cpu) const;
  std::vector<int> Cpus() const;
  size_t size_bytes() const { return size_bytes_; }
  cpu_set_t* raw() { return set_; }
  const cpu_set_t* raw() const { return set_; }

 private:
  int max_cpu_;
  size_t size_bytes_;
  cpu_set_t* set_;
};

// The calling thread's affinity (tid 0) or another task's. Grows the mask until the
// kernel accepts its size.
absl::StatusOr<CpuMask> GetAffinity(pid_t tid = 0);
absl::Status SetAffinity(const CpuMask& mask, pid_t tid = 0);
absl::Status SetAffinity(const std::vector<int>& cpus, pid_t tid = 0);

// Moves the calling thread to `cpus` and restores the previous mask on destruction
// (on the thread that created it; do not hand it to another thread). Move-only.
class ScopedAffinity {
 public:
  static absl::StatusOr<ScopedAffinity> PinTo(int cpu);
  static absl::StatusOr<ScopedAffinity> PinTo(const std::vector<int>& cpus);

  ScopedAffinity(ScopedAffinity&& other) noexcept;
  ScopedAffinity& operator=(ScopedAffinity&& other) noexcept;
  ScopedAffinity(const ScopedAffinity&) = delete;
  ScopedAffinity& operator=(const ScopedAffinity&) = delete;
  ~ScopedAffinity();

  // Restores now; the destructor then does nothing.
  absl::Status Restore();

 private:
  explicit ScopedAffinity(CpuMask original);
  CpuMask original_;
  bool active_;
};

}  // namespace perfscale

#endif  // PERFSCALE_LIB_CPU_SET_H_
