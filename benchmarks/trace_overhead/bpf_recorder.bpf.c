// The kernel side of the BPF recorder (bpf_recorder.h): what `perf lock contention
// --use-bpf` does, for the trace_overhead family's sets. Each program pairs a task's
// begin event with its end event (contention_begin/end, sys_enter/exit, switched out/in)
// and adds the time between them to a per-key count, total, maximum and log2 histogram
// in a hash map; nothing is written per event. The user side reads the maps after the
// run. Only the programs of the recorded set are loaded (the user side turns the others'
// autoload off), and with filter_tasks only the tracked processes count: the benchmark's
// own, and those they fork while recording.
//
// Built with clang's BPF target against the running kernel's BTF (vmlinux.h from bpftool
// btf dump); CO-RE relocations make the object load on other kernels too.
// clang-format off: vmlinux.h must come first, it defines the types the others use.
#include "vmlinux.h"
// clang-format on

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf_recorder_abi.h"

char LICENSE[] SEC("license") = "GPL";

// Set before load by the user side.
const volatile bool filter_tasks = false;

struct pending_wait {
  __u64 start_ns;
  __u64 object;
  __s32 stack_id;
  __u32 flags;
};

// A task's open waits, innermost last.
struct pending {
  struct pending_wait waits[PERFSCALE_BPF_NEST];
  __u32 depth;
};

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32);  // tid
  __type(value, struct pending);
} pending_by_task SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, PERFSCALE_BPF_MAX_KEYS);
  __type(key, struct perfscale_bpf_key);
  __type(value, struct perfscale_bpf_value);
} aggregates SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_STACK_TRACE);
  __uint(max_entries, 4096);
  __uint(key_size, sizeof(__u32));
  __uint(value_size, PERFSCALE_BPF_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct perfscale_bpf_totals);
} totals SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __type(key, __u32);  // tgid
  __type(value, __u8);
} tracked SEC(".maps");

// A new key starts from this (a map value, not 300 bytes of BPF stack).
struct perfscale_bpf_value zero_value = {};

static __always_inline struct perfscale_bpf_totals *my_totals(void) {
  __u32 zero = 0;
  return bpf_map_lookup_elem(&totals, &zero);
}

static __always_inline bool is_tracked(__u32 tgid) {
  return !filter_tasks || bpf_map_lookup_elem(&tracked, &tgid) != NULL;
}

// One tracepoint hit that involves a tracked task (the ring recorder's samples/op).
static __always_inline void count_hit(void) {
  struct perfscale_bpf_totals *sums = my_totals();
  if (sums) sums->events++;
}

static __always_inline __u32 bucket_of(__u64 ns) {
  __u32 bucket = 0;
  if (ns >> 16) {
    ns >>= 16;
    bucket += 16;
  }
  if (ns >> 8) {
    ns >>= 8;
    bucket += 8;
  }
  if (ns >> 4) {
    ns >>= 4;
    bucket += 4;
  }
  if (ns >> 2) {
    ns >>= 2;
    bucket += 2;
  }
  if (ns >> 1) bucket += 1;
  if (bucket >= PERFSCALE_BPF_BUCKETS) bucket = PERFSCALE_BPF_BUCKETS - 1;
  return bucket;
}

static __always_inline void add_wait(struct perfscale_bpf_totals *sums,
                                     const struct pending_wait *wait, __u64 now) {
  struct perfscale_bpf_key key = {
      .object = wait->object, .stack_id = wait->stack_id, .flags = wait->flags};
  struct perfscale_bpf_value *value = bpf_map_lookup_elem(&aggregates, &key);
  if (!value) {
    bpf_map_update_elem(&aggregates, &key, &zero_value, BPF_NOEXIST);
    value = bpf_map_lookup_elem(&aggregates, &key);
    if (!value) {
      sums->dropped++;
      return;
    }
  }
  __u64 ns = now - wait->start_ns;
  __sync_fetch_and_add(&value->count, 1);
  __sync_fetch_and_add(&value->total_ns, ns);
  if (ns > value->max_ns) value->max_ns = ns;
  __u32 bucket = bucket_of(ns);
  if (bucket < PERFSCALE_BPF_BUCKETS) __sync_fetch_and_add(&value->buckets[bucket], 1);
  sums->pairs++;
}

// A wait on `object` begins for task `tid`. A second begin on the object already
// innermost is the same wait going on (a mutex reports spinning, then sleeping).
static __always_inline void begin_wait(__u32 tid, __u64 object, __s32 stack_id, __u32 flags) {
  struct perfscale_bpf_totals *sums = my_totals();
  if (!sums) return;
  struct pending *open = bpf_map_lookup_elem(&pending_by_task, &tid);
  if (!open) {
    struct pending fresh = {};
    bpf_map_update_elem(&pending_by_task, &tid, &fresh, BPF_NOEXIST);
    open = bpf_map_lookup_elem(&pending_by_task, &tid);
    if (!open) {
      sums->unpaired++;
      return;
    }
  }
  __u32 depth = open->depth;
  if (depth > 0 && depth <= PERFSCALE_BPF_NEST &&
      open->waits[(depth - 1) & (PERFSCALE_BPF_NEST - 1)].object == object) {
    return;
  }
  if (depth >= PERFSCALE_BPF_NEST) {
    sums->unpaired++;
    return;
  }
  struct pending_wait *wait = &open->waits[depth & (PERFSCALE_BPF_NEST - 1)];
  wait->start_ns = bpf_ktime_get_ns();
  wait->object = object;
  wait->stack_id = stack_id;
  wait->flags = flags;
  open->depth = depth + 1;
}

// The wait on `object` ends for task `tid`; match_any ends the innermost whatever it is
// (a syscall's exit, a task switched back in).
static __always_inline void end_wait(__u32 tid, __u64 object, bool match_any) {
  __u64 now = bpf_ktime_get_ns();
  struct perfscale_bpf_totals *sums = my_totals();
  if (!sums) return;
  struct pending *open = bpf_map_lookup_elem(&pending_by_task, &tid);
  if (!open || open->depth == 0 || open->depth > PERFSCALE_BPF_NEST) {
    sums->unpaired++;
    return;
  }
  // The mask keeps the index provably in bounds for the verifier (NEST is a power of
  // two; depth was checked above).
  __u32 top = (open->depth - 1) & (PERFSCALE_BPF_NEST - 1);
  if (!match_any && open->waits[top].object != object) {
    sums->unpaired++;
    return;
  }
  add_wait(sums, &open->waits[top], now);
  open->depth = top;
}

SEC("tp_btf/contention_begin")
int BPF_PROG(on_contention_begin, void *lock, unsigned int flags) {
  __u64 id = bpf_get_current_pid_tgid();
  if (!is_tracked(id >> 32)) return 0;
  count_hit();
  __s32 stack_id = bpf_get_stackid(ctx, &stacks, 0);
  begin_wait((__u32)id, (__u64)lock, stack_id < 0 ? -1 : stack_id, flags);
  return 0;
}

SEC("tp_btf/contention_end")
int BPF_PROG(on_contention_end, void *lock, int ret) {
  __u64 id = bpf_get_current_pid_tgid();
  if (!is_tracked(id >> 32)) return 0;
  count_hit();
  end_wait((__u32)id, (__u64)lock, false);
  return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(on_sys_enter, struct pt_regs *regs, long syscall) {
  __u64 id = bpf_get_current_pid_tgid();
  if (!is_tracked(id >> 32)) return 0;
  count_hit();
  begin_wait((__u32)id, (__u64)syscall, -1, 0);
  return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(on_sys_exit, struct pt_regs *regs, long ret) {
  __u64 id = bpf_get_current_pid_tgid();
  if (!is_tracked(id >> 32)) return 0;
  count_hit();
  end_wait((__u32)id, 0, true);
  return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
             unsigned int prev_state) {
  __u32 prev_tgid = BPF_CORE_READ(prev, tgid);
  __u32 next_tgid = BPF_CORE_READ(next, tgid);
  bool prev_tracked = is_tracked(prev_tgid);
  bool next_tracked = is_tracked(next_tgid);
  if (prev_tracked || next_tracked) count_hit();
  if (prev_tracked) begin_wait(BPF_CORE_READ(prev, pid), prev_tgid, -1, prev_state);
  if (next_tracked) end_wait(BPF_CORE_READ(next, pid), 0, true);
  return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_sched_wakeup, struct task_struct *task) {
  if (!is_tracked(BPF_CORE_READ(task, tgid))) return 0;
  struct perfscale_bpf_totals *sums = my_totals();
  if (sums) {
    sums->events++;
    sums->wakeups++;
  }
  return 0;
}

// Task scope: a process forked by a tracked one is tracked too (what inherit does for
// the ring recorder's events).
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_process_fork, struct task_struct *parent, struct task_struct *child) {
  __u32 parent_tgid = BPF_CORE_READ(parent, tgid);
  if (!filter_tasks || !bpf_map_lookup_elem(&tracked, &parent_tgid)) return 0;
  __u32 child_tgid = BPF_CORE_READ(child, tgid);
  __u8 yes = 1;
  bpf_map_update_elem(&tracked, &child_tgid, &yes, BPF_ANY);
  return 0;
}
