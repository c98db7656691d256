// A recorder that aggregates in the kernel instead of recording, as `perf lock contention
// --use-bpf` does: BPF programs on a set's tracepoints pair each task's begin and end
// events and keep, per key, a count, the total and longest wait and a log2 histogram in
// BPF maps. Nothing is written per event; the maps are read once, after the run.
//
// Sets (what a key is, what the wait is):
//   lock      lock:contention_begin/end; key: lock address, the kernel stack where it
//             was contended (the caller: the first frame outside the lock code) and the
//             LCB_F_* flags; wait: begin to end (a mutex's spin and sleep are one wait)
//   sched     sched:sched_switch (+ sched_wakeup, counted); key: the tgid switched out
//             and its state; wait: switched out until it runs again
//   syscalls  raw_syscalls:sys_enter/exit; key: the syscall number; wait: enter to exit
// Scope: every task on the machine, or (task_scope) this process's tasks and the
// processes they fork after Open (sched_process_fork follows them from Open on, as
// inherited perf events follow from their open).
//
// Needs kernel BTF (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF), BPF tracing
// programs (tp_btf, Linux 5.5+) and root or CAP_BPF with CAP_PERFMON: where one is missing,
// Open returns a status that says which (FailedPrecondition, PermissionDenied), for a skip.
// Stop and the destructor detach the programs and close every program, map and link fd,
// so the kernel frees them all.
//
// Example:
//   perfscale::BpfRecorderOptions options;
//   options.set = "lock";
//   absl::StatusOr<std::unique_ptr<perfscale::BpfRecorder>> recorder =
//       perfscale::BpfRecorder::Open(options);
//   (*recorder)->Enable();  ... workload ...
//   absl::StatusOr<perfscale::BpfStats> stats = (*recorder)->Stop();
#ifndef PERFSCALE_BENCHMARKS_TRACE_OVERHEAD_BPF_RECORDER_H_
#define PERFSCALE_BENCHMARKS_TRACE_OVERHEAD_BPF_RECORDER_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct perfscale_bpf_recorder;
struct bpf_link;

namespace perfscale {

inline constexpr int kBpfBuckets = 32;  // log2 ns buckets: b holds [2^b, 2^(b+1)) ns

// From one libbpf message, the verifier's refusal of a program: "the verifier refused
// program 'NAME': LAST LINE OF ITS LOG", or "" for any other message. libbpf prints a
// refused program's whole log as one message between -- BEGIN PROG LOAD LOG -- and
// -- END PROG LOAD LOG --; its last line is the verifier's reason (on Linux 5.10, say,
// a helper or a tracepoint that kernel lacks).
std::string VerifierRefusal(const std::string& libbpf_message);

// OK when the running kernel has tracepoint `name` (sched_switch, contention_begin) with
// at least `wanted` arguments; else FailedPrecondition naming `what` the recorder needs,
// the release it came with (`since`) and what this kernel has. Without it a load fails
// with the verifier's "invalid bpf_context access" or libbpf's ESRCH, which name neither.
absl::Status NeedTracepoint(const char* name, int wanted, const char* what, const char* since);

struct BpfRecorderOptions {
  std::string set;  // lock, sched or syscalls
  bool task_scope = false;
};

// One key's aggregate.
struct BpfKeyStats {
  uint64_t object = 0;  // lock address, tgid or syscall number
  int32_t stack_id = -1;
  uint32_t flags = 0;
  std::string caller;  // lock: the symbol that contended (from /proc/kallsyms), else ""
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t max_ns = 0;
  std::array<uint64_t, kBpfBuckets> buckets{};
};

struct BpfStats {
  uint64_t events = 0;    // tracepoint hits the programs counted (after the task filter)
  uint64_t pairs = 0;     // waits aggregated
  uint64_t dropped = 0;   // waits lost: the key map was full
  uint64_t unpaired = 0;  // ends without a begin (waits begun before the run), deep nests
  uint64_t wakeups = 0;   // sched: sched_wakeup hits
  uint64_t total_ns = 0;
  uint64_t max_ns = 0;
  std::array<uint64_t, kBpfBuckets> buckets{};  // over every key
  std::vector<BpfKeyStats> keys;                // by total wait, longest first
  uint64_t map_bytes = 0;                       // read from the kernel after the run

  // The upper bound of the histogram bucket that holds quantile q (0..1), in ns; 0
  // without waits.
  uint64_t QuantileNs(double q) const;
};

// Why BPF recording cannot work here (no kernel BTF, a build without the skeleton), or OK.
// Open checks the privileges as it loads.
absl::Status BpfRecorderAvailable();

class BpfRecorder {
 public:
  static absl::StatusOr<std::unique_ptr<BpfRecorder>> Open(const BpfRecorderOptions& options);

  BpfRecorder(const BpfRecorder&) = delete;
  BpfRecorder& operator=(const BpfRecorder&) = delete;
  ~BpfRecorder();

  // Attaches the set's programs: aggregation starts.
  absl::Status Enable();
  // Detaches, reads the maps and frees everything. Only the first call does work.
  absl::StatusOr<BpfStats> Stop();

  // The kernel's ids of the loaded programs and maps (for tests: after Stop, none of
  // them exists any more).
  const std::vector<uint32_t>& program_ids() const { return program_ids_; }
  const std::vector<uint32_t>& map_ids() const { return map_ids_; }

 private:
  explicit BpfRecorder(BpfRecorderOptions options) : options_(std::move(options)) {}
  absl::StatusOr<BpfStats> ReadMaps() const;
  void Destroy();

  BpfRecorderOptions options_;
  perfscale_bpf_recorder* skeleton_ = nullptr;
  std::vector<bpf_link*> links_;
  std::vector<uint32_t> program_ids_;
  std::vector<uint32_t> map_ids_;
  bool stopped_ = false;
};

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_TRACE_OVERHEAD_BPF_RECORDER_H_
