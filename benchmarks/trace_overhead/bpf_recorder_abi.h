// What the BPF recorder's kernel side (bpf_recorder.bpf.c) and its user side
// (bpf_recorder.cc) agree on: the aggregation key and value, the totals, and the sizes.
// Included by both, so it uses only the kernel's fixed-width types.
#ifndef PERFSCALE_BENCHMARKS_TRACE_OVERHEAD_BPF_RECORDER_ABI_H_
#define PERFSCALE_BENCHMARKS_TRACE_OVERHEAD_BPF_RECORDER_ABI_H_

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

// Wait times are kept in log2 buckets of nanoseconds: bucket b holds [2^b, 2^(b+1)) ns
// (bucket 0 also holds 0), so 32 buckets reach 4.3 s.
#define PERFSCALE_BPF_BUCKETS 32
// Distinct keys kept (perf lock contention's default map size); beyond it, events are
// counted as dropped.
#define PERFSCALE_BPF_MAX_KEYS 10240
// Kernel frames kept per contention, to find the caller outside the lock code (the walk
// starts inside the tracepoint machinery).
#define PERFSCALE_BPF_STACK_DEPTH 16
// Contentions a task can be inside at once (a mutex's wait_lock spinlock inside the
// mutex's own slow path, for example). A power of two: the BPF side masks indexes with it.
#define PERFSCALE_BPF_NEST 4

// What a key's `object` is, per set.
enum perfscale_bpf_set {
  PERFSCALE_BPF_LOCK = 1,      // object: the lock's address; stack_id: where it was taken
  PERFSCALE_BPF_SCHED = 2,     // object: the tgid switched out; time: until it ran again
  PERFSCALE_BPF_SYSCALLS = 3,  // object: the syscall number; time: enter to exit
};

struct perfscale_bpf_key {
  __u64 object;
  __s32 stack_id;  // lock: kernel stack id in the stack map, -1 when not taken
  __u32 flags;     // lock: the contention_begin flags (LCB_F_*); sched: prev_state
};

struct perfscale_bpf_value {
  __u64 count;
  __u64 total_ns;
  __u64 max_ns;  // updated without atomics: concurrent waits on one key may lose a max
  __u64 buckets[PERFSCALE_BPF_BUCKETS];
};

// Per CPU; the user side sums them.
struct perfscale_bpf_totals {
  __u64 events;    // tracepoint hits the programs saw (after the task filter)
  __u64 pairs;     // begin/end pairs aggregated
  __u64 dropped;   // pairs not aggregated: the key map was full
  __u64 unpaired;  // ends without their begin (the run started inside a wait), nests too deep
  __u64 wakeups;   // sched: sched_wakeup hits
};

#endif  // PERFSCALE_BENCHMARKS_TRACE_OVERHEAD_BPF_RECORDER_ABI_H_
