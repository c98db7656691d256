// Synthesis family: how fast `perf record`'s start-up synthesis of /proc can be made with
// N threads, and what funnelling every record through one mutex costs.
//
// Seed: ../shared/seeds/001 (perf record --num-thread-synthesize, Ian Rogers, 2020). On
// loaded 100-core servers synthesis takes seconds; `perf bench internals synthesize -t`
// showed 21.5k records in 127.7 ms with 1 thread (5.9 us/record) and 48.9 ms with 8
// (2.6x), with an atomic counter as the output. perf record writes each record under one
// mutex; the question is what that serialization costs (Amdahl), and what a design
// without it gains.
//
// BM_Synthesize/workload:W/sink:S/strategy:X/workers:N
//   One iteration is one synthesis: the process list (for `system`, /proc scanned inside
//   the timed region as perf does) split into N contiguous chunks, each worker reading
//   /proc the way perf does (status, comm if asked, maps; benchmarks/synthesize/proc_synthesis.h)
//   and emitting real perf ABI records (FORK, COMM, MMAP2, NAMESPACES if asked) into the output
//   with strategy X: `mutex` (one lock around each record's write, perf record's design), `atomic`
//   (a fetch_add reserves the bytes, the copy takes no lock), `per_worker` (private buffers
//   appended at the end, inside the timed region). Workloads: `controlled` is a tree of child
//   processes this benchmark creates
//   (--synth_processes x --synth_threads tasks, each process with --synth_exec_maps
//   executable and --synth_data_maps data mappings of its own), synthesized alone, so
//   the record count is the same on every run; `system` is every process in /proc.
//   Sinks: `memory` (one buffer sized from the workload) or `file` (a nameless file under
//   --synth_dir written with write(2), pwrite(2) for `atomic`; truncated between
//   iterations outside the timed region).
//   Counters: records and bytes per iteration, usecs/record (perf bench's "time per
//   event"), records/s, the workers used, tasks_vanished (tasks that exited mid-read);
//   for `mutex`, mutex_wait_share: the share of the workers' time spent waiting for the
//   lock; the kernel-cost counters per record (ipis_sent/record, ..., ipis_system/record,
//   sys_us/record: bench_support.h).
//
// Manual time: only the synthesis is timed (workers run on other CPUs, so it is wall
// time). Privileges: none to synthesize our own children; other users' maps need root
// (perf leaves out what it cannot read, and so do we: see `tasks_vanished`).
#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "benchmarks/harness/bench_support.h"
#include "benchmarks/harness/family.h"
#include "benchmarks/harness/profile_support.h"
#include "benchmarks/harness/suite_plan.h"
#include "benchmarks/synthesize/parallel_synthesis.h"
#include "benchmarks/synthesize/proc_synthesis.h"
#include "benchmarks/synthesize/process_tree.h"
#include "lib/capabilities.h"
#include "lib/cpu_set.h"
#include "lib/errno_status.h"
#include "lib/flags.h"
#include "lib/kernel_cost.h"
#include "lib/scratch_file.h"

namespace perfscale {
namespace {

Flag& workers_flag = DefineFlag("synth_workers", "",
                                "synthesis workers (default: 1..2x the online CPUs; at most 1024)");
Flag& strategy_flag = DefineFlag("synth_strategy", "mutex,atomic,per_worker",
                                 "how records reach the output: mutex, atomic, per_worker");
Flag& workload_flag =
    DefineFlag("synth_workload", "controlled,system",
               "what is synthesized: controlled (a child process tree) or system (all of /proc)");
Flag& sink_flag = DefineFlag("synth_sink", "memory,file",
                             "where records go: memory, or file (write(2) under --synth_dir)");
Flag& processes_flag = DefineFlag("synth_processes", "100", "processes of the controlled workload");
Flag& tree_threads_flag = DefineFlag(
    "synth_threads", "10", "tasks per process of the controlled workload, main thread included");
Flag& exec_maps_flag =
    DefineFlag("synth_exec_maps", "16", "executable mappings each controlled process adds");
Flag& data_maps_flag = DefineFlag("synth_data_maps", "16",
                                  "data mappings each controlled process adds (synthesized "
                                  "only with --synth_data)");
Flag& data_flag = DefineBoolFlag("synth_data", false,
                                 "also synthesize readable data mappings (perf record --data)");
Flag& namespaces_flag = DefineBoolFlag(
    "synth_namespaces", false, "also synthesize NAMESPACES records (perf record --namespaces)");
Flag& comm_flag = DefineFlag(
    "synth_comm", "status",
    "where COMM names come from: status (its Name: line, as perf) or comm (the comm file)");
Flag& dir_flag =
    DefineFlag("synth_dir", "", "directory for the file sink (default: $TMPDIR or /tmp)");

struct Settings {
  ProcessTreeSpec tree;
  SynthesisOptions synthesis;
  std::string dir;
};

struct Params {
  bool controlled;
  OutputSink sink;
  OutputStrategy strategy;
  int workers;
};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The memory sink holds one iteration's output, so its size comes from the workload, not
// a fixed reservation (1 GiB once skipped every run under a low `ulimit -v`): an untimed
// synthesis into a buffer that doubles until the output fits, then room for twice what
// it took (the system workload changes between iterations). Where the address space
// runs out first, the reason suggests the file sink.
absl::StatusOr<std::unique_ptr<ParallelSynthesizer>> CreateSized(ParallelSynthesisOptions options,
                                                                 const std::vector<pid_t>& pids) {
  if (options.sink != OutputSink::kMemory) return ParallelSynthesizer::Create(options);
  auto create = [&options]() -> absl::StatusOr<std::unique_ptr<ParallelSynthesizer>> {
    absl::StatusOr<std::unique_ptr<ParallelSynthesizer>> synth =
        ParallelSynthesizer::Create(options);
    if (synth.ok()) return synth;
    return WithMessage(
        synth.status(),
        absl::StrCat(synth.status().message(), "; with this little memory, use --synth_sink=file"));
  };
  options.memory_capacity = size_t{1} << 20;
  for (;;) {
    absl::StatusOr<std::unique_ptr<ParallelSynthesizer>> synth = create();
    if (!synth.ok()) return synth;
    absl::StatusOr<SynthesisRunStats> sizing = (*synth)->Run(pids);
    if (sizing.ok()) {
      size_t needed = 2 * static_cast<size_t>(sizing->counts.bytes);
      if (needed <= options.memory_capacity) return synth;
      options.memory_capacity = needed;
      return create();
    }
    if (!IsMemoryOutputFull(sizing.status())) return sizing.status();
    options.memory_capacity *= 2;
  }
}

void BM_Synthesize(benchmark::State& state, Params params, Settings settings) {
  // The tree lives as long as this function: on every return path it is killed and
  // reaped, before the next benchmark starts.
  std::unique_ptr<ProcessTree> tree;
  std::vector<pid_t> pids;
  // Defaults that do not fit this environment's thread limits skip with the reason
  // (values given explicitly were already rejected at registration).
  uint64_t threads_needed = static_cast<uint64_t>(params.workers);
  if (params.controlled) {
    threads_needed += static_cast<uint64_t>(settings.tree.processes) *
                      static_cast<uint64_t>(settings.tree.threads);
  }
  if (SkipIfError(state, ProbeCapabilities().RequireThreads(threads_needed))) return;
  if (params.controlled) {
    absl::StatusOr<std::unique_ptr<ProcessTree>> started = ProcessTree::Start(settings.tree);
    if (SkipIfError(state, started.status())) return;
    tree = *std::move(started);
    pids = tree->pids();
  }
  ParallelSynthesisOptions options;
  options.strategy = params.strategy;
  options.sink = params.sink;
  options.workers = params.workers;
  options.synthesis = settings.synthesis;
  options.file_dir = settings.dir;
  std::vector<pid_t> sizing_pids = pids;
  if (!params.controlled) {
    absl::StatusOr<std::vector<pid_t>> all = ListProcessIds();
    if (SkipIfError(state, all.status())) return;
    sizing_pids = *std::move(all);
  }
  absl::StatusOr<std::unique_ptr<ParallelSynthesizer>> synth = CreateSized(options, sizing_pids);
  if (SkipIfError(state, synth.status())) return;

  uint64_t records = 0, bytes = 0, tasks_vanished = 0;
  double seconds = 0, worker_seconds = 0, wait_seconds = 0;
  int workers_used = 0;
  // After the controlled tree: its processes are what is read, idle while timed, and are
  // not the benchmark's work. The workers are created inside the timed region, so they
  // inherit the attribution counters.
  KernelCostMeter meter = BenchmarkMeter();
  if (!StartOrSkip(state, meter)) return;
  for (auto _ : state) {
    if (SkipIfError(state, (*synth)->Reset())) return;
    auto start = std::chrono::steady_clock::now();
    if (!params.controlled) {
      absl::StatusOr<std::vector<pid_t>> all = ListProcessIds();
      if (SkipIfError(state, all.status())) return;
      pids = *std::move(all);
    }
    absl::StatusOr<SynthesisRunStats> stats = (*synth)->Run(pids);
    double elapsed = SecondsSince(start);
    if (SkipIfError(state, stats.status())) return;
    state.SetIterationTime(elapsed);
    seconds += elapsed;
    records += stats->counts.records;
    bytes += stats->counts.bytes;
    tasks_vanished += stats->counts.tasks_vanished;
    worker_seconds += stats->worker_seconds;
    wait_seconds += stats->lock_wait_seconds;
    workers_used = stats->workers;
  }
  if (records == 0) {
    state.SkipWithError("ERROR: the synthesis produced no records");
    return;
  }
  const double total = static_cast<double>(records);
  state.counters["records"] = benchmark::Counter(total, benchmark::Counter::kAvgIterations);
  state.counters["bytes"] =
      benchmark::Counter(static_cast<double>(bytes), benchmark::Counter::kAvgIterations);
  // Not "skipped": in Google Benchmark's JSON that is a skipped benchmark.
  state.counters["tasks_vanished"] =
      benchmark::Counter(static_cast<double>(tasks_vanished), benchmark::Counter::kAvgIterations);
  state.counters["usecs/record"] = seconds * 1e6 / total;
  state.counters["records/s"] = benchmark::Counter(total, benchmark::Counter::kIsRate);
  state.counters["workers"] = workers_used;
  if (params.strategy == OutputStrategy::kMutex && worker_seconds > 0) {
    state.counters["mutex_wait_share"] = wait_seconds / worker_seconds;
  }
  ReportKernelCost(state, meter, total, "record");
}

absl::StatusOr<int> IntFlag(const Flag& flag, int64_t min, int64_t max) {
  absl::StatusOr<int64_t> value = ParseInt(flag.value(), min, max);
  if (!value.ok()) return flag.Annotate(value.status());
  return static_cast<int>(*value);
}

std::vector<int64_t> DefaultWorkers(int cpus) {
  std::vector<int64_t> workers;
  if (QuickRun()) {
    workers.push_back(1);
    if (cpus > 1) workers.push_back(cpus);
    return workers;
  }
  // Every count on small machines; powers of two plus the CPU count and twice it on big
  // ones, so the list stays short.
  if (2 * cpus <= 8) {
    for (int w = 1; w <= 2 * cpus; ++w) workers.push_back(w);
    return workers;
  }
  for (int w = 1; w < 2 * cpus; w *= 2) {
    workers.push_back(w);
    if (w < cpus && 2 * w > cpus) workers.push_back(cpus);
  }
  workers.push_back(2 * cpus);
  return workers;
}

absl::Status RegisterSynthesizeFamily() {
  int cpus = PlannedCpuCount();
  Capabilities caps = ProbeCapabilities();

  std::vector<int64_t> workers = DefaultWorkers(cpus);
  if (!workers_flag.value().empty()) {
    absl::StatusOr<std::vector<int64_t>> parsed =
        ParseIntList(workers_flag.value(), 1, kMaxSynthesisWorkers);
    if (!parsed.ok()) return workers_flag.Annotate(parsed.status());
    workers = *parsed;
  }
  int64_t max_workers = 0;
  for (int64_t w : workers) max_workers = std::max(max_workers, w);
  if (absl::Status fits = caps.RequireThreads(static_cast<uint64_t>(max_workers));
      !fits.ok() && workers_flag.is_set()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--synth_workers=", max_workers, ": ", fits.message()));
  }
  absl::StatusOr<std::vector<std::string>> strategies =
      ParseChoiceList(strategy_flag.value(), {"mutex", "atomic", "per_worker"});
  if (!strategies.ok()) return strategy_flag.Annotate(strategies.status());
  absl::StatusOr<std::vector<std::string>> workloads =
      ParseChoiceList(workload_flag.is_set() || !QuickRun() ? workload_flag.value() : "controlled",
                      {"controlled", "system"});
  if (!workloads.ok()) return workload_flag.Annotate(workloads.status());
  absl::StatusOr<std::vector<std::string>> sinks = ParseChoiceList(
      sink_flag.is_set() || !QuickRun() ? sink_flag.value() : "memory", {"memory", "file"});
  if (!sinks.ok()) return sink_flag.Annotate(sinks.status());

  Settings settings;
  absl::StatusOr<int> processes = IntFlag(processes_flag, 1, kMaxTreeProcesses);
  if (!processes.ok()) return processes.status();
  absl::StatusOr<int> threads = IntFlag(tree_threads_flag, 1, kMaxTreeThreads);
  if (!threads.ok()) return threads.status();
  absl::StatusOr<int> exec_maps = IntFlag(exec_maps_flag, 0, kMaxTreeMappings);
  if (!exec_maps.ok()) return exec_maps.status();
  absl::StatusOr<int> data_maps = IntFlag(data_maps_flag, 0, kMaxTreeMappings);
  if (!data_maps.ok()) return data_maps.status();
  settings.tree.processes = *processes;
  settings.tree.threads = *threads;
  settings.tree.exec_mappings = *exec_maps;
  settings.tree.data_mappings = *data_maps;
  bool controlled = false;
  for (const std::string& w : *workloads) controlled |= w == "controlled";
  if (controlled) {
    if (absl::Status valid = ProcessTree::Validate(settings.tree); !valid.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--synth_exec_maps=", *exec_maps,
                                                     " --synth_data_maps=", *data_maps, ": ",
                                                     valid.message()));
    }
    // The tree's tasks and the workers exist at the same time.
    uint64_t tasks = static_cast<uint64_t>(*processes) * static_cast<uint64_t>(*threads);
    bool sized_by_user =
        processes_flag.is_set() || tree_threads_flag.is_set() || workers_flag.is_set();
    if (absl::Status fits = caps.RequireThreads(tasks + static_cast<uint64_t>(max_workers));
        !fits.ok() && sized_by_user) {
      return absl::InvalidArgumentError(
          absl::StrCat("--synth_processes=", *processes, " --synth_threads=", *threads, " (", tasks,
                       " tasks) with --synth_workers up to ", max_workers, ": ", fits.message()));
    }
  }

  settings.synthesis.data_mmaps = data_flag.bool_value();
  settings.synthesis.namespaces = namespaces_flag.bool_value();
  if (comm_flag.value() == "status") {
    settings.synthesis.comm_source = CommSource::kStatus;
  } else if (comm_flag.value() == "comm") {
    settings.synthesis.comm_source = CommSource::kCommFile;
  } else {
    return comm_flag.Annotate(absl::InvalidArgumentError(
        absl::StrCat("'", comm_flag.value(), "' is not status or comm")));
  }

  settings.dir = dir_flag.value().empty() ? ScratchFile::DefaultDir() : dir_flag.value();
  bool file_sink_runs = false;

  // The system workload's tasks: this machine's processes, plus the kernel threads a
  // bigger machine has per CPU (about 6: cpuhp, migration, ksoftirqd, kworkers).
  absl::StatusOr<std::vector<pid_t>> processes_now = ListProcessIds();
  const double system_tasks =
      (processes_now.ok() ? static_cast<double>(processes_now->size()) : 200.0) +
      6.0 * std::max(0, cpus - static_cast<int>(OnlineCpus().value_or(std::vector<int>{0}).size()));
  for (const std::string& workload : *workloads) {
    for (const std::string& sink : *sinks) {
      for (const std::string& strategy : *strategies) {
        for (int64_t w : workers) {
          Params params{workload == "controlled", *ParseOutputSink(sink),
                        *ParseOutputStrategy(strategy), static_cast<int>(w)};
          std::string name = absl::StrCat("BM_Synthesize/workload:", workload, "/sink:", sink,
                                          "/strategy:", strategy, "/workers:", w);
          file_sink_runs |= sink == "file" && WillRun(name);
          // Each task costs a /proc read (status, maps) shared among the workers; the
          // controlled tree is built once per call of the function.
          const bool is_controlled = params.controlled;
          RegisterPlanned(
              name, TimeMode::kManual,
              [is_controlled, tree = settings.tree, system_tasks, cpus, w](const UnitCosts& u) {
                double tasks = is_controlled ? static_cast<double>(tree.processes) * tree.threads
                                             : system_tasks;
                double setup = is_controlled ? tree.processes * u.process + tasks * u.thread : 0;
                double share = static_cast<double>(std::min<int64_t>(w, cpus));
                return Cost{setup, tasks * u.proc_task / share + w * u.thread, 0};
              },
              BM_Synthesize, params, settings)
              ->Unit(benchmark::kMillisecond);
        }
      }
    }
  }
  if (file_sink_runs) {
    // Fail now, with the flag's name, rather than skip every file benchmark later. The
    // probe file has no name and its directory is gone once Create returns.
    absl::StatusOr<ScratchFile> probe = ScratchFile::Create(settings.dir);
    if (!probe.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--synth_dir=", settings.dir,
                       ": cannot write the file sink there: ", probe.status().message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

PERFSCALE_FAMILY(synthesize, RegisterSynthesizeFamily);

}  // namespace perfscale
