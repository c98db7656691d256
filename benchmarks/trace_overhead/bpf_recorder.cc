#include "benchmarks/trace_overhead/bpf_recorder.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "benchmarks/trace_overhead/bpf_recorder_abi.h"
#include "lib/errno_status.h"
#include "lib/symbols.h"

// After the ABI: the skeleton names its global variables' types without defining them.
#include "benchmarks/trace_overhead/bpf_recorder.skel.h"

#ifndef PERFSCALE_BPF_SKELETON_UNAVAILABLE
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <sys/utsname.h>
#endif

namespace perfscale {
namespace {

static_assert(kBpfBuckets == PERFSCALE_BPF_BUCKETS);

}  // namespace

std::string VerifierRefusal(const std::string& libbpf_message) {
  constexpr absl::string_view kBegin = "-- BEGIN PROG LOAD LOG --";
  constexpr absl::string_view kEnd = "-- END PROG LOAD LOG --";
  absl::string_view message = libbpf_message;
  size_t begin = message.find(kBegin);
  if (begin == absl::string_view::npos) return "";
  // "libbpf: prog 'NAME': -- BEGIN ...": the name is the last quoted word before it.
  absl::string_view head = message.substr(0, begin);
  size_t close = head.rfind('\'');
  size_t open = close == absl::string_view::npos || close == 0 ? absl::string_view::npos
                                                               : head.rfind('\'', close - 1);
  std::string program =
      open == absl::string_view::npos ? "?" : std::string(head.substr(open + 1, close - open - 1));
  absl::string_view log = message.substr(begin + kBegin.size());
  log = log.substr(0, std::min(log.size(), log.find(kEnd)));
  std::string last;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    // The verifier's closing statistics are not its reason.
    if (!line.empty() && !absl::StartsWith(line, "processed ")) last = std::string(line);
  }
  return absl::StrCat("the verifier refused program '", program,
                      "': ", last.empty() ? "(an empty log)" : last);
}

uint64_t BpfStats::QuantileNs(double q) const {
  uint64_t total = 0;
  for (uint64_t n : buckets) total += n;
  if (total == 0) return 0;
  double wanted = q * static_cast<double>(total);
  uint64_t seen = 0;
  for (int b = 0; b < kBpfBuckets; ++b) {
    seen += buckets[b];
    if (static_cast<double>(seen) >= wanted && seen > 0) return uint64_t{2} << b;
  }
  return uint64_t{2} << (kBpfBuckets - 1);
}

#ifdef PERFSCALE_BPF_SKELETON_UNAVAILABLE

absl::Status BpfRecorderAvailable() {
  return absl::FailedPreconditionError(
      absl::StrCat("BPF recording was not built: ", PERFSCALE_BPF_SKELETON_UNAVAILABLE));
}

absl::StatusOr<std::unique_ptr<BpfRecorder>> BpfRecorder::Open(const BpfRecorderOptions&) {
  return BpfRecorderAvailable();
}
absl::Status NeedTracepoint(const char*, int, const char*, const char*) {
  return BpfRecorderAvailable();
}
BpfRecorder::~BpfRecorder() = default;
absl::Status BpfRecorder::Enable() { return BpfRecorderAvailable(); }
absl::StatusOr<BpfStats> BpfRecorder::Stop() { return BpfRecorderAvailable(); }
absl::StatusOr<BpfStats> BpfRecorder::ReadMaps() const { return BpfRecorderAvailable(); }
void BpfRecorder::Destroy() {}

#else  // the skeleton was built

namespace {

constexpr char kKernelBtf[] = "/sys/kernel/btf/vmlinux";

// Where the lock code ends in a contended stack: the first frame whose symbol is none
// of these is the caller (perf lock contention skips its lock functions the same way).
// Prefixes, not substrings: clock_nanosleep and blk_* are callers.
bool IsLockMachinery(absl::string_view symbol) {
  for (absl::string_view prefix :
       {"_raw_",       "raw_",      "do_raw_",       "queued_",   "native_queued_", "__pv_queued_",
        "__mutex_",    "mutex_",    "__ww_mutex",    "ww_mutex_", "rt_mutex",       "__rt_mutex",
        "rt_spin",     "rwsem_",    "__rwsem",       "down_",     "__down",         "up_",
        "percpu_down", "percpu_up", "__percpu_down", "osq_",      "__traceiter_",   "trace_",
        "bpf_",        "__bpf_",    "lock_",         "__lock_"}) {
    if (absl::StartsWith(symbol, prefix)) return true;
  }
  return absl::StrContains(symbol, "_slowpath") || absl::StrContains(symbol, "contention");
}

// libbpf's messages, kept so that a refused load says why (the verifier's last words)
// instead of printing to stderr in the middle of a benchmark run.
std::mutex log_mutex;
std::string* last_log = new std::string;
// The last program the verifier refused, and its log's last line: libbpf's final message
// ("failed to load BPF skeleton ...: -13") names neither.
std::string* refused_program = new std::string;

int KeepLibbpfMessage(enum libbpf_print_level level, const char* format, va_list args) {
  if (level == LIBBPF_DEBUG) return 0;
  char text[8192];
  vsnprintf(text, sizeof(text), format, args);
  std::string line = text;
  while (!line.empty() && line.back() == '\n') line.pop_back();
  std::lock_guard<std::mutex> lock(log_mutex);
  if (std::string refused = VerifierRefusal(line); !refused.empty()) *refused_program = refused;
  *last_log = line;
  return 0;
}

std::string TakeLibbpfMessage() {
  std::lock_guard<std::mutex> lock(log_mutex);
  std::string message = std::exchange(*last_log, "");
  std::string refused = std::exchange(*refused_program, "");
  return refused.empty() ? message : absl::StrCat(message, "; ", refused);
}

absl::Status LibbpfStatus(int err, absl::string_view what) {
  int code = err < 0 ? -err : err;
  std::string message = TakeLibbpfMessage();
  // EPERM is the privilege check; EACCES from a load is the verifier refusing.
  if (code == EPERM) {
    return absl::PermissionDeniedError(
        absl::StrCat(what,
                     ": loading BPF tracing programs needs root, or CAP_BPF with "
                     "CAP_PERFMON (",
                     ErrnoStatus(code, "bpf").message(), ")"));
  }
  absl::Status status = ErrnoStatus(code, what);
  return message.empty()
             ? status
             : WithMessage(status, absl::StrCat(status.message(), " (libbpf: ", message, ")"));
}

uint32_t ObjectId(int fd) {
  // Large enough for both bpf_prog_info and bpf_map_info; id is their second field.
  struct {
    uint32_t type;
    uint32_t id;
    char rest[512];
  } info{};
  uint32_t length = sizeof(info);
  if (bpf_obj_get_info_by_fd(fd, &info, &length) != 0) return 0;
  return info.id;
}

}  // namespace

// Read from BTF: typedef btf_trace_NAME is a pointer to a function of the context and
// the tracepoint's arguments.
absl::Status NeedTracepoint(const char* name, int wanted, const char* what, const char* since) {
  btf* vmlinux = btf__load_vmlinux_btf();
  if (vmlinux == nullptr) return absl::OkStatus();  // the load says what is missing
  std::string type_name = absl::StrCat("btf_trace_", name);
  int args = -1;
  int id = btf__find_by_name_kind(vmlinux, type_name.c_str(), BTF_KIND_TYPEDEF);
  const btf_type* type = id > 0 ? btf__type_by_id(vmlinux, id) : nullptr;
  // typedef -> pointer -> function prototype, whose first parameter is the context.
  if (type != nullptr) type = btf__type_by_id(vmlinux, type->type);
  if (type != nullptr && btf_is_ptr(type)) type = btf__type_by_id(vmlinux, type->type);
  if (type != nullptr && btf_is_func_proto(type)) args = btf_vlen(type) - 1;
  btf__free(vmlinux);
  if (id > 0 && (args < 0 || args >= wanted)) return absl::OkStatus();
  struct utsname kernel {};
  uname(&kernel);
  return absl::FailedPreconditionError(
      absl::StrCat("the BPF recorder needs ", what, " (Linux ", since, " and later); this kernel (",
                   kernel.release, ") ",
                   id > 0 ? absl::StrCat("passes ", name, " ", args, " arguments, not ", wanted)
                          : absl::StrCat("has no tracepoint ", name)));
}

absl::Status BpfRecorderAvailable() {
  if (access(kKernelBtf, R_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("BPF recording needs kernel BTF: ", kKernelBtf, " is ",
                     errno == ENOENT ? "missing (CONFIG_DEBUG_INFO_BTF)" : "unreadable"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<BpfRecorder>> BpfRecorder::Open(const BpfRecorderOptions& options) {
  static std::once_flag quiet;
  std::call_once(quiet, [] { libbpf_set_print(KeepLibbpfMessage); });
  if (absl::Status available = BpfRecorderAvailable(); !available.ok()) return available;

  std::unique_ptr<BpfRecorder> recorder(new BpfRecorder(options));
  perfscale_bpf_recorder* skeleton = perfscale_bpf_recorder__open();
  if (skeleton == nullptr) return LibbpfStatus(errno, "opening the BPF recorder");
  recorder->skeleton_ = skeleton;
  auto& programs = skeleton->progs;
  std::vector<bpf_program*> chosen;
  if (options.set == "lock") {
    chosen = {programs.on_contention_begin, programs.on_contention_end};
  } else if (options.set == "sched") {
    chosen = {programs.on_sched_switch, programs.on_sched_wakeup};
  } else if (options.set == "syscalls") {
    chosen = {programs.on_sys_enter, programs.on_sys_exit};
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("BPF recorder: unknown set '", options.set, "' (lock, sched, syscalls)"));
  }
  // What each set's programs read, checked first: the verifier's refusal names no release.
  absl::Status needs = absl::OkStatus();
  if (options.set == "sched") {
    needs = NeedTracepoint("sched_switch", 4, "sched_switch's argument prev_state", "5.18");
  } else if (options.set == "lock") {
    needs = NeedTracepoint("contention_begin", 2, "lock:contention_begin", "5.19");
  }
  if (!needs.ok()) return needs;
  if (options.task_scope) chosen.push_back(programs.on_process_fork);
  bpf_program* every[] = {programs.on_contention_begin, programs.on_contention_end,
                          programs.on_sys_enter,        programs.on_sys_exit,
                          programs.on_sched_switch,     programs.on_sched_wakeup,
                          programs.on_process_fork};
  for (bpf_program* program : every) {
    bool use = std::find(chosen.begin(), chosen.end(), program) != chosen.end();
    bpf_program__set_autoload(program, use);
  }
  skeleton->rodata->filter_tasks = options.task_scope;
  if (int err = perfscale_bpf_recorder__load(skeleton); err != 0) {
    return LibbpfStatus(err, absl::StrCat("loading the BPF recorder for set ", options.set));
  }
  if (options.task_scope) {
    uint32_t tgid = static_cast<uint32_t>(getpid());
    uint8_t yes = 1;
    if (bpf_map_update_elem(bpf_map__fd(skeleton->maps.tracked), &tgid, &yes, BPF_ANY) != 0) {
      return LibbpfStatus(errno, "tracking this process in the BPF recorder");
    }
  }
  for (bpf_program* program : chosen) {
    recorder->program_ids_.push_back(ObjectId(bpf_program__fd(program)));
  }
  if (options.task_scope) {
    // Follows forks from now on, as inherited perf events do from their open: a peer
    // started between Open and Enable is recorded.
    bpf_link* link = bpf_program__attach(programs.on_process_fork);
    if (link == nullptr) return LibbpfStatus(errno, "attaching the BPF fork follower");
    recorder->links_.push_back(link);
  }
  bpf_map* maps[] = {skeleton->maps.pending_by_task,
                     skeleton->maps.aggregates,
                     skeleton->maps.stacks,
                     skeleton->maps.totals,
                     skeleton->maps.tracked,
                     skeleton->maps.rodata,
                     skeleton->maps.bss};
  for (bpf_map* map : maps) recorder->map_ids_.push_back(ObjectId(bpf_map__fd(map)));
  return recorder;
}

BpfRecorder::~BpfRecorder() { Destroy(); }

void BpfRecorder::Destroy() {
  for (bpf_link* link : links_) bpf_link__destroy(link);
  links_.clear();
  if (skeleton_ != nullptr) perfscale_bpf_recorder__destroy(skeleton_);
  skeleton_ = nullptr;
}

absl::Status BpfRecorder::Enable() {
  if (skeleton_ == nullptr) return absl::FailedPreconditionError("BPF recorder already stopped");
  bpf_program* program = nullptr;
  bpf_object__for_each_program(program, skeleton_->obj) {
    if (!bpf_program__autoload(program) || program == skeleton_->progs.on_process_fork) continue;
    bpf_link* link = bpf_program__attach(program);
    if (link == nullptr) {
      return LibbpfStatus(errno,
                          absl::StrCat("attaching BPF program ", bpf_program__name(program)));
    }
    links_.push_back(link);
  }
  return absl::OkStatus();
}

absl::StatusOr<BpfStats> BpfRecorder::Stop() {
  if (stopped_) return absl::FailedPreconditionError("BPF recorder already stopped");
  stopped_ = true;
  for (bpf_link* link : links_) bpf_link__destroy(link);
  links_.clear();
  absl::StatusOr<BpfStats> stats = ReadMaps();
  Destroy();
  return stats;
}

absl::StatusOr<BpfStats> BpfRecorder::ReadMaps() const {
  BpfStats stats;
  int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return LibbpfStatus(cpus, "counting possible CPUs");
  std::vector<perfscale_bpf_totals> per_cpu(static_cast<size_t>(cpus));
  uint32_t zero = 0;
  if (bpf_map_lookup_elem(bpf_map__fd(skeleton_->maps.totals), &zero, per_cpu.data()) != 0) {
    return LibbpfStatus(errno, "reading the BPF recorder's totals");
  }
  stats.map_bytes += per_cpu.size() * sizeof(perfscale_bpf_totals);
  for (const perfscale_bpf_totals& sums : per_cpu) {
    stats.events += sums.events;
    stats.pairs += sums.pairs;
    stats.dropped += sums.dropped;
    stats.unpaired += sums.unpaired;
    stats.wakeups += sums.wakeups;
  }

  int aggregates = bpf_map__fd(skeleton_->maps.aggregates);
  perfscale_bpf_key key{};
  perfscale_bpf_key next{};
  const perfscale_bpf_key* previous = nullptr;
  while (bpf_map_get_next_key(aggregates, previous, &next) == 0) {
    perfscale_bpf_value value{};
    if (bpf_map_lookup_elem(aggregates, &next, &value) == 0) {
      stats.map_bytes += sizeof(next) + sizeof(value);
      BpfKeyStats entry;
      entry.object = next.object;
      entry.stack_id = next.stack_id;
      entry.flags = next.flags;
      entry.count = value.count;
      entry.total_ns = value.total_ns;
      entry.max_ns = value.max_ns;
      for (int b = 0; b < kBpfBuckets; ++b) {
        entry.buckets[b] = value.buckets[b];
        stats.buckets[b] += value.buckets[b];
      }
      stats.total_ns += value.total_ns;
      stats.max_ns = std::max<uint64_t>(stats.max_ns, value.max_ns);
      stats.keys.push_back(entry);
    }
    key = next;
    previous = &key;
  }
  std::sort(stats.keys.begin(), stats.keys.end(),
            [](const BpfKeyStats& a, const BpfKeyStats& b) { return a.total_ns > b.total_ns; });

  if (options_.set == "lock" && !stats.keys.empty()) {
    // Symbolized for the longest waits only: the rest stay ids.
    ProcessSymbolizer& symbols = ProcessSymbolizer::Get();
    int stack_map = bpf_map__fd(skeleton_->maps.stacks);
    for (size_t i = 0; i < stats.keys.size() && i < 16; ++i) {
      BpfKeyStats& entry = stats.keys[i];
      if (entry.stack_id < 0) continue;
      uint64_t frames[PERFSCALE_BPF_STACK_DEPTH] = {};
      uint32_t id = static_cast<uint32_t>(entry.stack_id);
      if (bpf_map_lookup_elem(stack_map, &id, frames) != 0) continue;
      stats.map_bytes += sizeof(frames);
      for (uint64_t frame : frames) {
        if (frame == 0) break;
        std::string name = symbols.Resolve(frame, /*kernel=*/true).symbol;
        if (name != kUnknownSymbol && !IsLockMachinery(name)) {
          entry.caller = name;
          break;
        }
      }
    }
  }
  return stats;
}

#endif  // PERFSCALE_BPF_SKELETON_UNAVAILABLE

}  // namespace perfscale
