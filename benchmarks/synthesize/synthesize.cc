// Synthesis family: how fast `perf record`'s start-up synthesis of /proc can be made with
// N threads, and what funnelling every record through one mutex costs.
//
// Seed: the thread "[PATCH] perf/record: add num-synthesize-threads option" (Ian Rogers,
// 15 Apr 2020; replies to 21 Apr 2020). On loaded 100-core servers synthesis takes
// seconds; `perf bench internals synthesize -t` showed 21.5k records in 127.7 ms with 1
// thread (5.9 us/record) and 48.9 ms with 8 (2.6x), with an atomic counter as the output.
// perf record writes each record under one mutex; the question is what that
// serialization costs (Amdahl), and what a design without it gains.
//
// BM_Synthesize: one iteration is one synthesis. The process list (for the system
// workload, /proc scanned inside the timed region as perf does) is split into N
// contiguous chunks; each worker reads /proc the way perf does (status, comm if asked,
// maps; proc_synthesis.h) and emits real perf ABI records (FORK, COMM, MMAP2,
// NAMESPACES if asked) into the output with one strategy: mutex (one lock around each
// record's write, perf record's design), atomic (a fetch_add reserves the bytes, the copy
// takes no lock) or per_worker (private buffers appended at the end, inside the timed
// region). The controlled workload is a tree of child processes this benchmark creates,
// synthesized alone, so the record count is the same on every run; the system workload is
// every process in /proc. The memory sink is one buffer sized from the workload; the file
// sink a nameless file written with write(2) (pwrite(2) for atomic), truncated between
// iterations outside the timed region. Counters: records and bytes per iteration,
// usecs/record (perf bench's "time per event"), records/s, the workers used,
// tasks_vanished (tasks that exited mid-read); for mutex, mutex_wait_share (the workers'
// time spent waiting for the lock); the kernel-cost counters per record (bench_support.h).
//
// The parameters, their ranges and defaults: the table below, printed by --help.
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
#include "absl/strings/str_join.h"
#include "benchmark/benchmark.h"
#include "benchmarks/harness/bench_support.h"
#include "benchmarks/harness/family.h"
#include "benchmarks/harness/flags.h"
#include "benchmarks/harness/profile_support.h"
#include "benchmarks/harness/suite_plan.h"
#include "benchmarks/synthesize/parallel_synthesis.h"
#include "benchmarks/synthesize/proc_synthesis.h"
#include "benchmarks/synthesize/process_tree.h"
#include "lib/capabilities.h"
#include "lib/cpu_set.h"
#include "lib/errno_status.h"
#include "lib/kernel_cost.h"
#include "lib/scratch_file.h"

namespace perfscale {
namespace {

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

enum class Workload { kControlled, kSystem };

// 1..2x the CPUs: every count on small machines; powers of two plus the CPU count and
// twice it on big ones, so the list stays short.
std::string DefaultWorkers(const FlagEnv& env) {
  const int cpus = env.cpus;
  std::vector<int64_t> workers;
  if (2 * cpus <= 8) {
    for (int w = 1; w <= 2 * cpus; ++w) workers.push_back(w);
  } else {
    for (int w = 1; w < 2 * cpus; w *= 2) {
      workers.push_back(w);
      if (w < cpus && 2 * w > cpus) workers.push_back(cpus);
    }
    workers.push_back(2 * cpus);
  }
  return absl::StrJoin(workers, ",");
}

absl::StatusOr<std::string> ParseDir(absl::string_view text) { return std::string(text); }

struct Flags {
  std::vector<int64_t> workers;
  std::vector<Choice<OutputStrategy>> strategies;
  std::vector<Choice<Workload>> workloads;
  std::vector<Choice<OutputSink>> sinks;
  int processes = 0;
  int threads = 0;
  int exec_maps = 0;
  int data_maps = 0;
  bool data = false;
  bool namespaces = false;
  Choice<CommSource> comm;
  std::string dir;
};

const FlagList<Flags> flags(
    "synthesize",
    {
        IntListFlag(&Flags::workers, "synthesize_workers", 1, kMaxSynthesisWorkers,
                    "synthesis workers")
            .Default("1..2xCPUs (every count up to 8; powers of two, CPUs and 2xCPUs beyond)",
                     DefaultWorkers)
            .Quick("1,CPUs", [](const FlagEnv& env) { return absl::StrCat("1,", env.cpus); }),
        ChoiceListFlag(&Flags::strategies, "synthesize_strategy",
                       ChoicesOf({OutputStrategy::kMutex, OutputStrategy::kAtomic,
                                  OutputStrategy::kPerWorker},
                                 OutputStrategyName),
                       "how records reach the output: mutex (a lock per record, perf record), "
                       "atomic (a fetch_add reserves the bytes), per_worker (private buffers)")
            .Default("mutex,atomic,per_worker"),
        ChoiceListFlag(&Flags::workloads, "synthesize_workload",
                       ChoiceTable<Workload>{{"controlled", Workload::kControlled},
                                             {"system", Workload::kSystem}},
                       "what is synthesized: controlled (a child process tree) or system (all "
                       "of /proc)")
            .Default("controlled,system")
            .Quick("controlled"),
        ChoiceListFlag(&Flags::sinks, "synthesize_sink",
                       ChoicesOf({OutputSink::kMemory, OutputSink::kFile}, OutputSinkName),
                       "where records go: memory, or file (write(2) under --synthesize_dir)")
            .Default("memory,file")
            .Quick("memory"),
        IntFlag(&Flags::processes, "synthesize_processes", 1, kMaxTreeProcesses,
                "processes of the controlled workload")
            .Default("100"),
        IntFlag(&Flags::threads, "synthesize_threads", 1, kMaxTreeThreads,
                "tasks per process of the controlled workload, main thread included")
            .Default("10"),
        IntFlag(&Flags::exec_maps, "synthesize_exec_maps", 0, kMaxTreeMappings,
                "executable mappings each controlled process adds")
            .Default("16"),
        IntFlag(&Flags::data_maps, "synthesize_data_maps", 0, kMaxTreeMappings,
                "data mappings each controlled process adds (synthesized only with "
                "--synthesize_data)")
            .Default("16"),
        BoolFlag(&Flags::data, "synthesize_data",
                 "also synthesize readable data mappings (perf record --data)"),
        BoolFlag(&Flags::namespaces, "synthesize_namespaces",
                 "also synthesize NAMESPACES records (perf record --namespaces)"),
        ChoiceFlag(&Flags::comm, "synthesize_comm",
                   ChoiceTable<CommSource>{{"status", CommSource::kStatus},
                                           {"comm", CommSource::kCommFile}},
                   "where COMM names come from: status (its Name: line, as perf) or comm (the "
                   "comm file too)")
            .Default("status"),
        ParsedFlag<Flags, std::string>(&Flags::dir, "synthesize_dir", "a writable directory",
                                       ParseDir, "directory for the file sink")
            .Default("$TMPDIR or /tmp", [](const FlagEnv&) { return ScratchFile::DefaultDir(); }),
    });

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The memory sink holds one iteration's output, so its size comes from the workload, not
// a fixed reservation (1 GiB once skipped every run under a low `ulimit -v`): an untimed
// synthesis into a buffer that doubles until the output fits (`sized_bytes`: its size),
// then a synthesizer of its own with room for twice that (the system workload changes
// between iterations), so every benchmark times a synthesizer that has not run yet. Where
// the address space runs out first, the reason suggests the file sink. `known_bytes`
// (non-zero): the output's size, already found for the same processes.
absl::StatusOr<std::unique_ptr<ParallelSynthesizer>> CreateSized(ParallelSynthesisOptions options,
                                                                 const std::vector<pid_t>& pids,
                                                                 uint64_t known_bytes,
                                                                 uint64_t* sized_bytes) {
  if (options.sink != OutputSink::kMemory) return ParallelSynthesizer::Create(options);
  auto create = [&options]() -> absl::StatusOr<std::unique_ptr<ParallelSynthesizer>> {
    absl::StatusOr<std::unique_ptr<ParallelSynthesizer>> synth =
        ParallelSynthesizer::Create(options);
    if (synth.ok()) return synth;
    return WithMessage(synth.status(),
                       absl::StrCat(synth.status().message(),
                                    "; with this little memory, use --synthesize_sink=file"));
  };
  uint64_t bytes = known_bytes;
  options.memory_capacity = size_t{1} << 20;
  while (bytes == 0) {
    absl::StatusOr<std::unique_ptr<ParallelSynthesizer>> synth = create();
    if (!synth.ok()) return synth;
    absl::StatusOr<SynthesisRunStats> sizing = (*synth)->Run(pids);
    if (sizing.ok()) {
      bytes = std::max<uint64_t>(sizing->counts.bytes, 1);
    } else if (IsMemoryOutputFull(sizing.status())) {
      options.memory_capacity *= 2;
    } else {
      return sizing.status();
    }
  }
  if (sized_bytes != nullptr) *sized_bytes = bytes;
  options.memory_capacity = std::max<size_t>(2 * static_cast<size_t>(bytes), size_t{1} << 20);
  return create();
}

// The controlled workload's tree and its output's size, kept for the next benchmark that
// synthesizes the same tree (a row fixture, bench_support.h): the tree takes 75 ms to start
// and stop and the sizing run as long as a synthesis, most of a quick row's time, and the
// tree's processes are idle and not what is measured. Every benchmark still times a
// synthesizer that has not run (CreateSized), and the tree has been read before (by the
// sizing run, or by the benchmark before). A tree missing a process starts anew.
struct KeptTree : RowFixture {
  std::unique_ptr<ProcessTree> tree;
  uint64_t output_bytes = 0;  // the memory sink's output for it; 0 until sized
};

std::string TreeKey(const ProcessTreeSpec& spec) {
  return absl::StrCat("synthesize tree ", spec.processes, "x", spec.threads, " exec ",
                      spec.exec_mappings, " data ", spec.data_mappings);
}

absl::StatusOr<KeptTree*> KeepTree(const benchmark::State& state, const ProcessTreeSpec& spec) {
  auto start = [&spec]() -> absl::StatusOr<std::unique_ptr<KeptTree>> {
    absl::StatusOr<std::unique_ptr<ProcessTree>> started = ProcessTree::Start(spec);
    if (!started.ok()) return started.status();
    auto kept = std::make_unique<KeptTree>();
    kept->tree = *std::move(started);
    return kept;
  };
  absl::StatusOr<KeptTree*> kept = RowFixtureFor<KeptTree>(state, TreeKey(spec), start);
  if (!kept.ok() || (*kept)->tree->Intact()) return kept;
  ReleaseRowFixtures();
  return RowFixtureFor<KeptTree>(state, TreeKey(spec), start);
}

void BM_Synthesize(benchmark::State& state, Params params, Settings settings) {
  // The tree is kept for the next benchmark of the same tree, and killed and reaped before
  // any other starts (KeptTree).
  KeptTree* kept = nullptr;
  std::vector<pid_t> pids;
  // Defaults that do not fit this environment's thread limits skip with the reason
  // (values given explicitly were already rejected at registration).
  // A kept tree's tasks exist already: the budget counts them as in use.
  uint64_t threads_needed = static_cast<uint64_t>(params.workers);
  if (params.controlled && KeptRowFixture(state, TreeKey(settings.tree)) == nullptr) {
    threads_needed += static_cast<uint64_t>(settings.tree.processes) *
                      static_cast<uint64_t>(settings.tree.threads);
  }
  if (SkipIfError(state, ProbeCapabilities().RequireThreads(threads_needed))) return;
  if (params.controlled) {
    absl::StatusOr<KeptTree*> tree = KeepTree(state, settings.tree);
    if (SkipIfError(state, tree.status())) return;
    kept = *tree;
    pids = kept->tree->pids();
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
  absl::StatusOr<std::unique_ptr<ParallelSynthesizer>> synth =
      CreateSized(options, sizing_pids, kept != nullptr ? kept->output_bytes : 0,
                  kept != nullptr ? &kept->output_bytes : nullptr);
  if (SkipIfError(state, synth.status())) return;

  // The tree is shared by both passes: its processes are what is read, idle while timed,
  // and are not the benchmark's work. The workers are created inside each iteration, so
  // in the counting pass they inherit the counters.
  PassOptions pass_options;
  pass_options.unit = "record";
  pass_options.count_iterations = 1;
  RunPasses(state, pass_options, [&](BenchmarkPass& pass) {
    uint64_t records = 0, bytes = 0, tasks_vanished = 0;
    double seconds = 0, worker_seconds = 0, wait_seconds = 0;
    int workers_used = 0;
    pass.OpenCounters();
    if (!pass.Start()) return;
    for (auto _ : pass) {
      if (pass.SkipIfError((*synth)->Reset())) return;
      auto start = std::chrono::steady_clock::now();
      if (!params.controlled) {
        absl::StatusOr<std::vector<pid_t>> all = ListProcessIds();
        if (pass.SkipIfError(all.status())) return;
        pids = *std::move(all);
      }
      absl::StatusOr<SynthesisRunStats> stats = (*synth)->Run(pids);
      double elapsed = SecondsSince(start);
      if (pass.SkipIfError(stats.status())) return;
      pass.SetIterationTime(elapsed);
      seconds += elapsed;
      records += stats->counts.records;
      bytes += stats->counts.bytes;
      tasks_vanished += stats->counts.tasks_vanished;
      worker_seconds += stats->worker_seconds;
      wait_seconds += stats->lock_wait_seconds;
      workers_used = stats->workers;
    }
    if (!pass.Stop()) return;
    if (records == 0) {
      state.SkipWithError("ERROR: the synthesis produced no records");
      return;
    }
    const double total = static_cast<double>(records);
    pass.SetOps(total);
    if (pass.counting()) return;
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
  });
}

absl::Status RegisterSynthesizeFamily() {
  const int cpus = PlannedCpuCount();
  absl::StatusOr<Flags> f = flags.Resolve(FamilyFlagEnv());
  if (!f.ok()) return f.status();
  Capabilities caps = ProbeCapabilities();

  int64_t max_workers = *std::max_element(f->workers.begin(), f->workers.end());
  if (absl::Status fits = caps.RequireThreads(static_cast<uint64_t>(max_workers));
      !fits.ok() && flags.Given(&Flags::workers)) {
    return absl::InvalidArgumentError(
        absl::StrCat(flags.Name(&Flags::workers), "=", max_workers, ": ", fits.message()));
  }
  Settings settings;
  settings.tree.processes = f->processes;
  settings.tree.threads = f->threads;
  settings.tree.exec_mappings = f->exec_maps;
  settings.tree.data_mappings = f->data_maps;
  bool controlled = false;
  for (const Choice<Workload>& w : f->workloads) controlled |= w.value == Workload::kControlled;
  if (controlled) {
    if (absl::Status valid = ProcessTree::Validate(settings.tree); !valid.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(flags.Name(&Flags::exec_maps), "=", f->exec_maps, " ",
                       flags.Name(&Flags::data_maps), "=", f->data_maps, ": ", valid.message()));
    }
    // The tree's tasks and the workers exist at the same time.
    uint64_t tasks = static_cast<uint64_t>(f->processes) * static_cast<uint64_t>(f->threads);
    bool sized_by_user = flags.Given(&Flags::processes) || flags.Given(&Flags::threads) ||
                         flags.Given(&Flags::workers);
    if (absl::Status fits = caps.RequireThreads(tasks + static_cast<uint64_t>(max_workers));
        !fits.ok() && sized_by_user) {
      return absl::InvalidArgumentError(
          absl::StrCat(flags.Name(&Flags::processes), "=", f->processes, " ",
                       flags.Name(&Flags::threads), "=", f->threads, " (", tasks, " tasks) with ",
                       flags.Name(&Flags::workers), " up to ", max_workers, ": ", fits.message()));
    }
  }
  settings.synthesis.data_mmaps = f->data;
  settings.synthesis.namespaces = f->namespaces;
  settings.synthesis.comm_source = f->comm.value;
  settings.dir = f->dir;
  bool file_sink_runs = false;

  // The system workload's tasks: this machine's processes, plus the kernel threads a
  // bigger machine has per CPU (about 6: cpuhp, migration, ksoftirqd, kworkers).
  absl::StatusOr<std::vector<pid_t>> processes_now = ListProcessIds();
  const double system_tasks =
      (processes_now.ok() ? static_cast<double>(processes_now->size()) : 200.0) +
      6.0 * std::max(0, cpus - static_cast<int>(OnlineCpus().value_or(std::vector<int>{0}).size()));
  for (const Choice<Workload>& workload : f->workloads) {
    for (const Choice<OutputSink>& sink : f->sinks) {
      for (const Choice<OutputStrategy>& strategy : f->strategies) {
        for (int64_t w : f->workers) {
          Params params{workload.value == Workload::kControlled, sink.value, strategy.value,
                        static_cast<int>(w)};
          std::string name =
              absl::StrCat("BM_Synthesize/workload:", workload.name, "/sink:", sink.name,
                           "/strategy:", strategy.name, "/workers:", w);
          file_sink_runs |= sink.value == OutputSink::kFile && WillRun(name);
          // Each task costs a /proc read (status, maps) shared among the workers; the
          // controlled tree is built once per call of the function (an overestimate: the
          // rows after the first reuse it, KeptTree).
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
      return flags.Reject(
          &Flags::dir, settings.dir,
          absl::StrCat("cannot write the file sink there: ", probe.status().message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

PERFSCALE_FAMILY(synthesize, RegisterSynthesizeFamily);

}  // namespace perfscale
