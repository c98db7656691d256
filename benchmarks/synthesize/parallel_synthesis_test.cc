// The output check of the synthesis family: for every strategy, sink and worker count,
// the records decode, and every task and mapping of a controlled workload is there
// exactly once, with the fields /proc shows.
#include "benchmarks/synthesize/parallel_synthesis.h"

#include <dirent.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmarks/synthesize/perf_records.h"
#include "benchmarks/synthesize/proc_maps.h"
#include "benchmarks/synthesize/process_tree.h"
#include "gtest/gtest.h"
#include "lib/file_reader.h"
#include "testing/common/process_state.h"

namespace perfscale {
namespace {

struct ExpectedTask {
  uint32_t pid, tid, parent;
  std::string name;
};
struct ExpectedMapping {
  uint32_t pid;
  MapsEntry entry;
  std::string path;
  bool data;
};

// What the tree's records must be, read independently from /proc.
struct Expected {
  std::vector<ExpectedTask> tasks;
  std::vector<ExpectedMapping> mappings;
};

Expected Expect(const ProcessTree& tree, bool data) {
  Expected expected;
  for (size_t i = 0; i < tree.pids().size(); ++i) {
    pid_t pid = tree.pids()[i];
    DIR* dir = opendir(absl::StrCat("/proc/", pid, "/task").c_str());
    EXPECT_NE(dir, nullptr);
    if (dir == nullptr) continue;
    std::vector<int> tids;
    while (dirent* entry = readdir(dir)) {
      if (entry->d_name[0] != '.') tids.push_back(std::atoi(entry->d_name));
    }
    closedir(dir);
    std::sort(tids.begin(), tids.end());
    for (size_t t = 0; t < tids.size(); ++t) {
      uint32_t tid = static_cast<uint32_t>(tids[t]);
      uint32_t parent = tid == static_cast<uint32_t>(pid) ? static_cast<uint32_t>(getpid())
                                                          : static_cast<uint32_t>(pid);
      // Threads were created in order, so their tids sort in creation order.
      expected.tasks.push_back({static_cast<uint32_t>(pid), tid, parent,
                                ProcessTree::TaskName(static_cast<int>(i), static_cast<int>(t))});
    }
    std::string text = *ReadTextFile(absl::StrCat("/proc/", pid, "/maps"));
    absl::StatusOr<std::vector<MapsEntry>> maps = ParseMaps(text);
    EXPECT_TRUE(maps.ok()) << maps.status();
    int created = 0;
    for (const MapsEntry& entry : *maps) {
      bool is_data = !entry.executable && entry.readable;
      if (!entry.executable && !(data && is_data)) continue;
      created +=
          entry.executable && entry.path.find(ProcessTree::kMemfdName) != absl::string_view::npos;
      expected.mappings.push_back({static_cast<uint32_t>(pid), entry,
                                   entry.path.empty() ? "//anon" : std::string(entry.path),
                                   is_data});
    }
    EXPECT_EQ(created, tree.spec().exec_mappings);
  }
  return expected;
}

// Checks `bytes` against `expected`; returns the pids in order of their FORK records.
std::vector<uint32_t> Check(const std::string& bytes, const Expected& expected, bool namespaces,
                            const std::string& label) {
  SCOPED_TRACE(label);
  absl::StatusOr<std::vector<DecodedRecord>> records = DecodeRecords(bytes);
  EXPECT_TRUE(records.ok()) << records.status();
  std::vector<uint32_t> fork_order;
  if (!records.ok()) return fork_order;
  std::map<std::pair<uint32_t, uint32_t>, std::vector<const DecodedRecord*>> forks, comms, ns;
  std::map<std::pair<uint32_t, uint64_t>, std::vector<const DecodedRecord*>> mmaps;
  for (const DecodedRecord& r : *records) {
    EXPECT_EQ(r.size % 8, 0);
    switch (r.type) {
      case PERF_RECORD_FORK:
        forks[{r.pid, r.tid}].push_back(&r);
        fork_order.push_back(r.pid);
        break;
      case PERF_RECORD_COMM:
        comms[{r.pid, r.tid}].push_back(&r);
        break;
      case PERF_RECORD_NAMESPACES:
        ns[{r.pid, r.tid}].push_back(&r);
        break;
      case PERF_RECORD_MMAP2:
        mmaps[{r.pid, r.mmap2.addr}].push_back(&r);
        break;
      default:
        ADD_FAILURE() << "record type " << r.type;
    }
  }
  for (const ExpectedTask& task : expected.tasks) {
    auto key = std::make_pair(task.pid, task.tid);
    EXPECT_EQ(forks[key].size(), 1u) << "FORK of " << task.pid << "/" << task.tid;
    EXPECT_EQ(comms[key].size(), 1u) << "COMM of " << task.pid << "/" << task.tid;
    if (forks[key].size() != 1 || comms[key].size() != 1) continue;
    EXPECT_EQ(forks[key][0]->ppid, task.parent);
    EXPECT_EQ(forks[key][0]->ptid, task.parent);
    EXPECT_EQ(comms[key][0]->text, task.name);
    EXPECT_EQ(ns[key].size(), namespaces ? 1u : 0u);
    if (namespaces && ns[key].size() == 1) {
      EXPECT_EQ(ns[key][0]->namespaces.size(), static_cast<size_t>(NR_NAMESPACES));
      EXPECT_NE(ns[key][0]->namespaces[NET_NS_INDEX].ino, 0u);
    }
  }
  for (const ExpectedMapping& m : expected.mappings) {
    auto found = mmaps[{m.pid, m.entry.start}];
    EXPECT_EQ(found.size(), 1u) << "MMAP2 of " << m.pid << " at " << std::hex << m.entry.start;
    if (found.size() != 1) continue;
    const DecodedRecord& r = *found[0];
    EXPECT_EQ(r.tid, m.pid);
    EXPECT_EQ(r.mmap2.len, m.entry.end - m.entry.start);
    EXPECT_EQ(r.mmap2.pgoff, m.entry.offset);
    EXPECT_EQ(r.mmap2.ino, m.entry.inode);
    EXPECT_EQ(r.text, m.path);
    EXPECT_EQ((r.mmap2.prot & PROT_EXEC) != 0, m.entry.executable);
    EXPECT_EQ((r.misc & PERF_RECORD_MISC_MMAP_DATA) != 0, m.data);
  }
  // Nothing else: as many records of each kind as expected.
  EXPECT_EQ(forks.size(), expected.tasks.size());
  EXPECT_EQ(comms.size(), expected.tasks.size());
  EXPECT_EQ(mmaps.size(), expected.mappings.size());
  EXPECT_EQ(records->size(),
            expected.tasks.size() * (namespaces ? 3 : 2) + expected.mappings.size());
  return fork_order;
}

class ParallelSynthesisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // ThreadSanitizer starts a thread of its own at the first pthread_create and keeps
    // it: start it now, so that it is part of the state we compare against.
    std::thread([] {}).join();
    before_ = *testing::CaptureProcessState();
    ProcessTreeSpec spec;
    spec.processes = 5;
    spec.threads = 3;
    spec.exec_mappings = 4;
    spec.data_mappings = 3;
    absl::StatusOr<std::unique_ptr<ProcessTree>> tree = ProcessTree::Start(spec);
    ASSERT_TRUE(tree.ok()) << tree.status();
    tree_ = *std::move(tree);
    std::string tmpl = ::testing::TempDir() + "/synth-XXXXXX";
    dir_ = mkdtemp(&tmpl[0]);
  }
  void TearDown() override {
    tree_.reset();
    DIR* dir = opendir(dir_.c_str());
    ASSERT_NE(dir, nullptr);
    int left = 0;
    while (dirent* entry = readdir(dir)) left += entry->d_name[0] != '.';
    closedir(dir);
    EXPECT_EQ(left, 0) << "the file sink left something in " << dir_;
    rmdir(dir_.c_str());
    EXPECT_EQ(*testing::CaptureProcessState(), before_);
  }

  std::unique_ptr<ProcessTree> tree_;
  std::string dir_;
  testing::ProcessState before_;
};

TEST_F(ParallelSynthesisTest, EveryTaskAndMappingExactlyOnce) {
  for (bool extras : {false, true}) {
    Expected expected = Expect(*tree_, /*data=*/extras);
    for (OutputSink sink : {OutputSink::kMemory, OutputSink::kFile}) {
      for (OutputStrategy strategy :
           {OutputStrategy::kMutex, OutputStrategy::kAtomic, OutputStrategy::kPerWorker}) {
        for (int workers : {1, 2, 3, 8}) {
          std::string label = absl::StrCat(OutputSinkName(sink), "/", OutputStrategyName(strategy),
                                           "/", workers, extras ? "/data+namespaces" : "");
          ParallelSynthesisOptions options;
          options.strategy = strategy;
          options.sink = sink;
          options.workers = workers;
          options.file_dir = dir_;
          options.memory_capacity = 16 << 20;
          options.synthesis.data_mmaps = extras;
          options.synthesis.namespaces = extras;
          absl::StatusOr<std::unique_ptr<ParallelSynthesizer>> synth =
              ParallelSynthesizer::Create(options);
          ASSERT_TRUE(synth.ok()) << label << ": " << synth.status();
          // Twice, with a reset between, as the benchmark runs it.
          for (int round = 0; round < 2; ++round) {
            ASSERT_TRUE((*synth)->Reset().ok());
            absl::StatusOr<SynthesisRunStats> stats = (*synth)->Run(tree_->pids());
            ASSERT_TRUE(stats.ok()) << label << ": " << stats.status();
            EXPECT_EQ(stats->workers, std::min(workers, 5)) << label;
            EXPECT_EQ(stats->counts.tasks, 15u) << label;
            EXPECT_EQ(stats->counts.tasks_vanished, 0u) << label;
            EXPECT_GE(stats->worker_seconds, stats->lock_wait_seconds) << label;
            if (strategy != OutputStrategy::kMutex) {
              EXPECT_EQ(stats->lock_waits, 0u);
            }
            absl::StatusOr<std::string> output = (*synth)->ReadOutput();
            ASSERT_TRUE(output.ok()) << label << ": " << output.status();
            EXPECT_EQ(output->size(), stats->counts.bytes) << label;
            std::vector<uint32_t> order = Check(*output, expected, extras, label);
            EXPECT_EQ(order.size(), 15u) << label;
            EXPECT_EQ(stats->counts.records, 15u * (extras ? 3 : 2) + expected.mappings.size())
                << label;
            if (strategy == OutputStrategy::kPerWorker || workers == 1) {
              // Chunks are contiguous and joined in worker order: pid order is kept.
              std::vector<uint32_t> in_tree_order;
              for (pid_t pid : tree_->pids()) {
                for (int t = 0; t < 3; ++t) in_tree_order.push_back(static_cast<uint32_t>(pid));
              }
              EXPECT_EQ(order, in_tree_order) << label;
            }
          }
        }
      }
    }
  }
}

TEST_F(ParallelSynthesisTest, RunsAppendUntilReset) {
  ParallelSynthesisOptions options;
  options.workers = 2;
  options.memory_capacity = 1 << 20;
  auto synth = ParallelSynthesizer::Create(options);
  ASSERT_TRUE(synth.ok());
  absl::StatusOr<SynthesisRunStats> first = (*synth)->Run(tree_->pids());
  absl::StatusOr<SynthesisRunStats> second = (*synth)->Run(tree_->pids());
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ((*synth)->ReadOutput()->size(), first->counts.bytes + second->counts.bytes);
  ASSERT_TRUE((*synth)->Reset().ok());
  EXPECT_EQ((*synth)->ReadOutput()->size(), 0u);
  absl::StatusOr<SynthesisRunStats> none = (*synth)->Run({});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->workers, 0);
  EXPECT_EQ(none->counts.records, 0u);
}

TEST_F(ParallelSynthesisTest, AFullMemoryOutputIsAnError) {
  for (OutputStrategy strategy :
       {OutputStrategy::kMutex, OutputStrategy::kAtomic, OutputStrategy::kPerWorker}) {
    ParallelSynthesisOptions options;
    options.strategy = strategy;
    options.workers = 3;
    options.memory_capacity = 4096;
    auto synth = ParallelSynthesizer::Create(options);
    ASSERT_TRUE(synth.ok());
    absl::StatusOr<SynthesisRunStats> stats = (*synth)->Run(tree_->pids());
    ASSERT_FALSE(stats.ok()) << OutputStrategyName(strategy);
    EXPECT_EQ(stats.status().code(), absl::StatusCode::kResourceExhausted);
  }
}

TEST_F(ParallelSynthesisTest, BadOptions) {
  ParallelSynthesisOptions options;
  options.workers = 0;
  EXPECT_EQ(ParallelSynthesizer::Create(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.workers = kMaxSynthesisWorkers + 1;
  EXPECT_FALSE(ParallelSynthesizer::Create(options).ok());
  options.workers = 1;
  options.sink = OutputSink::kFile;
  options.file_dir = dir_ + "/missing";
  absl::StatusOr<std::unique_ptr<ParallelSynthesizer>> synth = ParallelSynthesizer::Create(options);
  ASSERT_FALSE(synth.ok());
  EXPECT_NE(synth.status().message().find(options.file_dir), absl::string_view::npos);
}

TEST(OutputNames, ParseAndName) {
  for (OutputStrategy s :
       {OutputStrategy::kMutex, OutputStrategy::kAtomic, OutputStrategy::kPerWorker}) {
    EXPECT_EQ(*ParseOutputStrategy(OutputStrategyName(s)), s);
  }
  EXPECT_EQ(*ParseOutputSink("memory"), OutputSink::kMemory);
  EXPECT_EQ(*ParseOutputSink("file"), OutputSink::kFile);
  EXPECT_FALSE(ParseOutputStrategy("lockfree").ok());
  EXPECT_FALSE(ParseOutputSink("disk").ok());
}

}  // namespace
}  // namespace perfscale
