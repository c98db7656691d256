// What every family does the same way around Google Benchmark: turning a Status into a
// skip or an error, and measuring what the kernel spends per operation.
//
// Timings and counts come from separate passes (docs/counters-pass.md). The attributed
// counters of lib/task_counters.h are perf events inherited by the benchmark's tasks:
// every context switch, cross-CPU call and thread creation of a counted task also runs
// perf's hooks, so a timing taken with them on times the instrument too (+36% on the
// breakpoint toggle, docs/measurements/2026-12-02-counting-pass.md). RunPasses therefore runs a
// family's body twice:
//   1. the timed pass: Google Benchmark's iterations, no perf event of ours attached;
//      ipis_system/<unit> and sys_us/<unit> (/proc/interrupts and getrusage, no perf
//      event) come from here;
//   2. the counting pass: the same body with the same parameters and a fresh setup (its
//      threads and processes are created after the counters open, so they inherit them;
//      a body may instead name the timed pass's threads: OpenCounters(tids)),
//      untimed, sized by iterations (PassOptions::count_iterations, no more than the
//      timed pass ran unless that held under kMinCountingOps operations: CountingIterations):
//      ipis_sent/<unit>, xcalls/<unit>, ... and count_ops, the
//      operations (in <unit>) those counts are divided by.
// --attribution=timed instead counts during the timed pass (the old way, to see what
// counting costs); --attribution=false leaves the counters out. The run context's
// "attribution" says which ("counting_pass", "timed" or "off").
//
// Example:
//   void BM_Toggle(benchmark::State& state, Params params) {
//     PassOptions options;  // unit "op"
//     options.count_iterations = 200;
//     RunPasses(state, options, [&](BenchmarkPass& pass) {
//       absl::StatusOr<PerfEvent> event = ...;             // what the tasks inherit
//       if (pass.SkipIfError(event.status())) return;
//       pass.OpenCounters();                                // before the tasks to count
//       ... start the threads or processes ...
//       if (!pass.Start()) return;                          // measured window begins
//       auto start = std::chrono::steady_clock::now();
//       for (auto _ : pass) {                               // timed: state's iterations
//         if (pass.SkipIfError(event->Disable())) return;   // counting: count_iterations
//       }
//       double us = MicrosecondsSince(start);
//       if (!pass.Stop()) return;                           // window ends
//       pass.SetOps(static_cast<double>(pass.iterations()));
//       if (pass.timed()) state.counters["usecs/op"] = us / pass.iterations();
//     });                                                   // sets the kernel-cost counters
//   }
// The body's own counters and label belong to the timed pass (`if (pass.timed())`);
// RunPasses keeps the timed pass's state.counters whatever the counting pass writes.
#ifndef PERFSCALE_BENCHMARKS_HARNESS_BENCH_SUPPORT_H_
#define PERFSCALE_BENCHMARKS_HARNESS_BENCH_SUPPORT_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "benchmark/benchmark.h"
#include "lib/capabilities.h"
#include "lib/kernel_cost.h"
#include "lib/task_counters.h"
#include "lib/tracepoint_keep_alive.h"

namespace perfscale {

// Marks the benchmark skipped (what the environment forbids: SkipWithMessage, the reason)
// or failed (anything else: SkipWithError, "ERROR: <status>"). Returns true when `status`
// was not ok.
bool SkipIfError(benchmark::State& state, const absl::Status& status);

// How the attributed counters are taken (--attribution and the kernel decide).
enum class Attribution {
  kOff,           // --attribution=false, or before Linux 6.4 unless asked
  kCountingPass,  // the default: a counting pass after the timed one
  kTimed,         // --attribution=timed: counted during the timed iterations
};
Attribution AttributionMode();
const char* AttributionName(Attribution mode);  // "off", "counting_pass", "timed"

// With attribution counting_pass, keeps the counters' tracepoints registered with perf
// for as long as the result lives (TracepointKeepAlive: an idle process of its own holds
// one event per tracepoint), so a counting pass does not flip their static keys or wait
// for RCU grace periods each row; main holds it around the benchmarks. nullptr in the
// other modes, or where the process cannot start (the counting pass then pays them).
std::unique_ptr<TracepointKeepAlive> KeepCountingTracepoints();

// What a row's calls, and the rows after it that ask for the same, share: a fixture whose
// setup or teardown costs far more than the row measures, and which is the same for each
// of them (a tracepoint's last close waits for RCU grace periods; a 1,000-task process
// tree takes 75 ms to start and stop). Google Benchmark calls a row once per step of its
// iteration search (1, 10, 100... iterations), and RunPasses calls the body once more for
// the counting pass: each repeats a setup of its own. A fixture is kept from the first
// call that asks for it until a row that does not ask for it starts (RunPasses lets it go
// before that row's setup), or ReleaseRowFixtures. One at a time: asking for another key
// lets the kept one go first. Benchmarks run one at a time, on Google Benchmark's thread,
// and a fixture is made and destroyed there.
class RowFixture {
 public:
  virtual ~RowFixture() = default;
};

// The fixture kept under `key`, now this row's; nullptr when none is (another key's goes).
RowFixture* KeptRowFixture(const benchmark::State& state, const std::string& key);
// Keeps `fixture` under `key` for this row; returns it.
RowFixture* KeepRowFixture(const benchmark::State& state, const std::string& key,
                           std::unique_ptr<RowFixture> fixture);
// The kept fixture under `key` (T: what was kept under it), or a new one from `make`
// (absl::StatusOr<std::unique_ptr<T>>()), kept.
template <typename T, typename Make>
absl::StatusOr<T*> RowFixtureFor(const benchmark::State& state, const std::string& key, Make make) {
  if (RowFixture* kept = KeptRowFixture(state, key)) return static_cast<T*>(kept);
  absl::StatusOr<std::unique_ptr<T>> made = make();
  if (!made.ok()) return made.status();
  return static_cast<T*>(KeepRowFixture(state, key, *std::move(made)));
}
// Lets the kept fixture go (a fixture found broken; main once the benchmarks ran; tests
// after a run).
void ReleaseRowFixtures();

// Keeps a row's own tracepoints registered with perf (a TracepointKeepAlive) as a row
// fixture: a recorded row opens and closes its recorder on each call, and the last close
// of a tracepoint's events waits for RCU grace periods (about 40 ms per tracepoint, one
// tracepoint after another: the kernel holds event_mutex through each wait), most of a
// recorded row's time in the quick suite. What is timed does not change: the recorder's
// events are on while timing either way, and the kept ones, bound to an idle process, are
// on no CPU's list while it waits (TracepointKeepAlive). Call it before RunPasses; where
// the process cannot start, each call pays as before. Returns the tracepoints held.
std::vector<std::string> KeepTracepointsForRow(const benchmark::State& state,
                                               const std::vector<std::string>& tracepoints);
// The process holding them for the running row (0: none), for tests.
pid_t RowTracepointsKeeper();

// The run context's "counter_sources": a JSON object from each counter's name prefix
// (ipis_sent, ..., ipis_system, sys_us) to where it came from (and from which pass), or
// "unavailable: why"; `kept` (may be null) says which tracepoints were kept registered.
std::string CounterSourcesJson(const TracepointKeepAlive* kept = nullptr);

struct PassOptions {
  std::string unit = "op";        // the counters' unit: "<name>/<unit>"
  bool include_children = false;  // sys_us also of the children reaped in the window
  // Iterations of the counting pass, at most (CountingIterations). Small: the counts are
  // exact (or nearly) per operation, and the pass adds to the suite's time.
  int64_t count_iterations = 1000;
};

// A counting pass runs at least this many operations (or count_iterations, if fewer
// iterations hold fewer), however few the timed pass ran. A pass has a fixed cost of its
// own in some counts (7 cross-CPU calls enabling the counters of a thread running on
// another CPU, on the instruction clock), which a count per operation divides by the
// pass's operations: a toggle that times 1, 2 or 3 iterations read 9, 5.5 and 4.3
// xcalls/op from identical runs. With 16 or more operations, a fixed cost of 16 events
// moves a count by at most one event per operation between passes of any length (the
// gate allows for it: gate/stats.py pass_length_slack). The minimum is in operations,
// not iterations: one iteration of a uprobe row is a thousand hits, and sixteen of them
// made the quick suite's counting pass 16 times its timed one for nothing.
constexpr int64_t kMinCountingOps = 16;
// The most iterations the minimum asks for: 16 operations at one an iteration.
constexpr int64_t kMinCountingIterations = kMinCountingOps;

// The counting pass's iterations: count_iterations, but no more than the timed pass's
// unless those held under kMinCountingOps operations (timed_ops of them in
// timed_iterations; 0 when the body did not say: then kMinCountingIterations). A row
// that times few iterations is a slow one, so the pass is capped by what timing it cost;
// a pass length that follows the timed iterations (how GB sized them, under what load)
// is kept out of rows that count little.
int64_t CountingIterations(int64_t count_iterations, int64_t timed_iterations,
                           double timed_ops = 0);

class BenchmarkPass;
using PassBody = std::function<void(BenchmarkPass& pass)>;

// Runs `body` as the timed pass and then, with attribution on by default, once more as
// the counting pass; then sets ipis_system/<unit>, sys_us/<unit> (timed pass), the
// attributed <name>/<unit> and count_ops (counting pass). Nothing after an error.
void RunPasses(benchmark::State& state, const PassOptions& options, const PassBody& body);

// One run of a family's body, timed or counting. Made by RunPasses only.
class BenchmarkPass {
 public:
  using StateIterator = decltype(std::declval<benchmark::State&>().begin());
  // Google Benchmark's own (marked unused, so `for (auto _ : pass)` compiles clean).
  using Value = std::decay_t<decltype(*std::declval<StateIterator&>())>;
  class Iterator {
   public:
    Value operator*() const { return Value(); }
    Iterator& operator++() {
      if (counting_) {
        --left_;
      } else {
        ++*timed_;
      }
      return *this;
    }
    bool operator!=(const Iterator& end) const {
      if (counting_) return left_ != 0;
      if (*timed_ != *end.timed_) return true;
      pass_->TimedLoopEnded();  // what Google Benchmark measured ends here too
      return false;
    }

   private:
    friend class BenchmarkPass;
    Iterator() = default;
    std::optional<StateIterator> timed_;  // the timed pass
    BenchmarkPass* pass_ = nullptr;
    bool counting_ = false;
    int64_t left_ = 0;
  };

  bool counting() const { return counting_; }
  bool timed() const { return !counting_; }
  benchmark::State& state() { return state_; }

  // Where the tasks whose cost is counted do not exist yet: opens the inherited counters
  // on this thread in the counting pass (and in the timed pass with --attribution=timed).
  // Start opens them itself where a body does not call it (then only this thread counts).
  // `existing_tasks`: threads (gettid) made before, counted too; for a counting pass that
  // reuses the timed pass's threads instead of a fresh setup (BM_UprobeHit).
  void OpenCounters(std::vector<pid_t> existing_tasks = {});
  // Begins a measured window (the timed pass also resumes --profile); a body may have
  // several (Start ... Stop per iteration). False: the state is marked skipped or failed.
  bool Start();
  // Ends the window and adds what it measured (the timed pass pauses --profile).
  bool Stop();
  // The timed pass: state's iterations (they start the benchmark's timer); the
  // counting pass: count_iterations of them, untimed.
  Iterator begin();
  Iterator end();
  // The iterations this pass ran (state.iterations() in the timed pass).
  int64_t iterations() const;
  // Operations of this pass in the unit (iterations x threads, records, fds...).
  void SetOps(double ops) { ops_ = ops; }
  // A figure that describes this pass's setup rather than its operations (where the
  // scheduler put its threads): the timed pass's as `name`, that of the pass the counts
  // came from as count_<name> (the counting pass's; the timed pass's with
  // --attribution=timed), so that counts per op are read against their own setup.
  void SetFigure(const std::string& name, double value) { figures_[name] = value; }
  // Manual time: the timed pass only (a counting pass never touches the timer).
  void SetIterationTime(double seconds);
  // SkipIfError for the body; a failure of the counting pass names the pass.
  bool SkipIfError(const absl::Status& status);

 private:
  friend void RunPasses(benchmark::State&, const PassOptions&, const PassBody&);
  BenchmarkPass(benchmark::State& state, const PassOptions& options, bool counting, bool attribute,
                int64_t count_iterations);
  benchmark::State& state_;
  const PassOptions& options_;
  const bool counting_;
  const bool attribute_;  // open the task counters in this pass
  const int64_t count_iterations_;
  int64_t counted_ = 0;  // iterations started in a counting pass
  void TimedLoopEnded();
  // What Google Benchmark measured of the timed pass: manual time where the body gives
  // it, else the loop's real time. RunPasses sizes calls with it (WillBeReported).
  std::chrono::steady_clock::time_point loop_start_;
  double loop_seconds_ = 0;
  double manual_seconds_ = 0;
  std::optional<ScopedFdLimit> fd_limit_;  // for OpenCounters(tids): before meter_, so it
                                           // outlives the events
  absl::Status fd_limit_error_;
  std::optional<KernelCostMeter> meter_;
  KernelCost cost_;
  bool measured_ = false;  // a window was stopped
  double ops_ = 0;
  std::map<std::string, double> figures_;
};

}  // namespace perfscale

#endif  // PERFSCALE_BENCHMARKS_HARNESS_BENCH_SUPPORT_H_
