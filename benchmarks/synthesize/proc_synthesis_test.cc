#include "benchmarks/synthesize/proc_synthesis.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmarks/synthesize/perf_records.h"
#include "benchmarks/synthesize/proc_maps.h"
#include "gtest/gtest.h"
#include "lib/file_reader.h"

namespace perfscale {
namespace {

class StringSink : public RecordSink {
 public:
  absl::Status Write(const char* record, size_t size) override {
    bytes.append(record, size);
    return absl::OkStatus();
  }
  std::string bytes;
};

class FailingSink : public RecordSink {
 public:
  absl::Status Write(const char*, size_t) override {
    return absl::ResourceExhaustedError("sink full");
  }
};

// A fake /proc under the test's temporary directory.
class FakeProc {
 public:
  FakeProc() {
    std::string tmpl = ::testing::TempDir() + "/fakeproc-XXXXXX";
    root_ = mkdtemp(&tmpl[0]);
  }
  ~FakeProc() { std::filesystem::remove_all(root_); }
  const std::string& root() const { return root_; }

  void Write(const std::string& relative, const std::string& text) {
    std::string path = root_ + "/" + relative;
    for (size_t slash = root_.size() + 1; (slash = path.find('/', slash)) != std::string::npos;
         ++slash) {
      mkdir(path.substr(0, slash).c_str(), 0755);
    }
    std::ofstream(path) << text;
  }
  void Dir(const std::string& relative) { Write(relative + "/.keep", ""); }

 private:
  std::string root_;
};

std::string Status(const std::string& name, int tgid, int ppid, bool kthread) {
  return absl::StrCat("Name:\t", name, "\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t", tgid,
                      "\nPid:\t0\nPPid:\t", ppid, "\nKthread:\t", kthread ? 1 : 0,
                      "\nThreads:\t2\n");
}

constexpr char kMaps[] =
    "00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/prog\n"
    "00651000-00652000 r--p 00051000 08:02 173521      /usr/bin/prog\n"
    "00652000-00655000 rw-p 00052000 08:02 173521      /usr/bin/prog\n"
    "00655000-00656000 ---p 00000000 00:00 0\n"
    "7f0000000000-7f0000001000 rwxp 00000000 00:00 0 \n"
    "7f0000001000-7f0000002000 rw-s 00000000 00:05 99    /dev/shm/x (deleted)\n";

void MakeProcess100(FakeProc& proc) {
  proc.Write("100/task/100/status", Status("leader", 100, 1, false));
  proc.Write("100/task/101/status", Status("worker", 100, 1, false));
  proc.Write("100/task/100/comm", "leader-comm\n");
  proc.Write("100/task/101/comm", "worker-comm\n");
  proc.Write("100/task/100/maps", kMaps);
}

// Records grouped by tid, in their order.
std::map<uint32_t, std::vector<DecodedRecord>> ByTid(const std::string& bytes) {
  absl::StatusOr<std::vector<DecodedRecord>> records = DecodeRecords(bytes);
  EXPECT_TRUE(records.ok()) << records.status();
  std::map<uint32_t, std::vector<DecodedRecord>> by_tid;
  if (records.ok()) {
    for (DecodedRecord& r : *records) by_tid[r.tid].push_back(std::move(r));
  }
  return by_tid;
}

TEST(ProcSynthesizer, RecordsOfAProcessAsPerfWritesThem) {
  FakeProc proc;
  MakeProcess100(proc);
  SynthesisOptions options;
  options.proc_root = proc.root();
  ProcSynthesizer synth(options);
  StringSink sink;
  ASSERT_TRUE(synth.SynthesizeProcess(100, sink).ok());
  auto by_tid = ByTid(sink.bytes);
  ASSERT_EQ(by_tid.size(), 2u);

  const std::vector<DecodedRecord>& leader = by_tid[100];
  ASSERT_EQ(leader.size(), 4u);  // FORK, COMM, 2 executable mappings
  EXPECT_EQ(leader[0].type, static_cast<uint32_t>(PERF_RECORD_FORK));
  EXPECT_EQ(leader[0].pid, 100u);
  EXPECT_EQ(leader[0].ppid, 1u);  // a leader's parent is its PPid
  EXPECT_EQ(leader[0].ptid, 1u);
  EXPECT_EQ(leader[1].type, static_cast<uint32_t>(PERF_RECORD_COMM));
  EXPECT_EQ(leader[1].text, "leader");  // status's Name, as perf
  EXPECT_EQ(leader[2].type, static_cast<uint32_t>(PERF_RECORD_MMAP2));
  EXPECT_EQ(leader[2].text, "/usr/bin/prog");
  EXPECT_EQ(leader[2].mmap2.addr, 0x400000u);
  EXPECT_EQ(leader[2].mmap2.len, 0x52000u);
  EXPECT_EQ(leader[2].mmap2.maj, 8u);
  EXPECT_EQ(leader[2].mmap2.min, 2u);
  EXPECT_EQ(leader[2].mmap2.ino, 173521u);
  EXPECT_EQ(leader[2].mmap2.prot, static_cast<uint32_t>(PROT_READ | PROT_EXEC));
  EXPECT_EQ(leader[2].mmap2.flags, static_cast<uint32_t>(MAP_PRIVATE));
  EXPECT_EQ(leader[2].misc, PERF_RECORD_MISC_USER);
  EXPECT_EQ(leader[3].text, "//anon");
  EXPECT_EQ(leader[3].mmap2.prot, static_cast<uint32_t>(PROT_READ | PROT_WRITE | PROT_EXEC));

  const std::vector<DecodedRecord>& worker = by_tid[101];
  ASSERT_EQ(worker.size(), 2u);  // no mappings for a non-leader
  EXPECT_EQ(worker[0].pid, 100u);
  EXPECT_EQ(worker[0].ppid, 100u);  // threads were "forked" by the leader
  EXPECT_EQ(worker[0].ptid, 100u);
  EXPECT_EQ(worker[1].text, "worker");

  EXPECT_EQ(synth.counts().records, 6u);
  EXPECT_EQ(synth.counts().bytes, sink.bytes.size());
  EXPECT_EQ(synth.counts().tasks, 2u);
  EXPECT_EQ(synth.counts().tasks_vanished, 0u);
}

TEST(ProcSynthesizer, DataMappingsNamespacesAndCommFile) {
  FakeProc proc;
  MakeProcess100(proc);
  proc.Write("100/ns/net", "");
  proc.Write("100/ns/cgroup", "");
  SynthesisOptions options;
  options.proc_root = proc.root();
  options.data_mmaps = true;
  options.namespaces = true;
  options.comm_source = CommSource::kCommFile;
  ProcSynthesizer synth(options);
  StringSink sink;
  ASSERT_TRUE(synth.SynthesizeProcess(100, sink).ok());
  auto by_tid = ByTid(sink.bytes);

  const std::vector<DecodedRecord>& leader = by_tid[100];
  // FORK, NAMESPACES, COMM, then 5 mappings: ---p is neither executable nor readable.
  ASSERT_EQ(leader.size(), 8u);
  EXPECT_EQ(leader[1].type, static_cast<uint32_t>(PERF_RECORD_NAMESPACES));
  ASSERT_EQ(leader[1].namespaces.size(), static_cast<size_t>(NR_NAMESPACES));
  struct stat net;
  ASSERT_EQ(stat((proc.root() + "/100/ns/net").c_str(), &net), 0);
  EXPECT_EQ(leader[1].namespaces[NET_NS_INDEX].ino, net.st_ino);
  EXPECT_EQ(leader[1].namespaces[NET_NS_INDEX].dev, net.st_dev);
  EXPECT_EQ(leader[1].namespaces[UTS_NS_INDEX].ino, 0u);  // missing: zero, as perf
  EXPECT_NE(leader[1].namespaces[CGROUP_NS_INDEX].ino, 0u);
  EXPECT_EQ(leader[2].text, "leader-comm");
  int data = 0;
  for (size_t i = 3; i < leader.size(); ++i) {
    EXPECT_EQ(leader[i].type, static_cast<uint32_t>(PERF_RECORD_MMAP2));
    if (leader[i].misc & PERF_RECORD_MISC_MMAP_DATA) {
      ++data;
      EXPECT_EQ(leader[i].mmap2.prot & PROT_EXEC, 0u);
    }
  }
  EXPECT_EQ(data, 3);
  EXPECT_EQ(leader.back().mmap2.flags, static_cast<uint32_t>(MAP_SHARED));
  EXPECT_EQ(leader.back().text, "/dev/shm/x (deleted)");
  EXPECT_EQ(by_tid[101][1].type, static_cast<uint32_t>(PERF_RECORD_NAMESPACES));
  EXPECT_EQ(by_tid[101][2].text, "worker-comm");
}

TEST(ProcSynthesizer, KernelThreadsGetNoMappings) {
  FakeProc proc;
  proc.Write("2/task/2/status", Status("kthreadd", 2, 0, true));
  // No maps file at all: reading one would count a vanished task.
  SynthesisOptions options;
  options.proc_root = proc.root();
  ProcSynthesizer synth(options);
  StringSink sink;
  ASSERT_TRUE(synth.SynthesizeProcess(2, sink).ok());
  EXPECT_EQ(synth.counts().records, 2u);
  EXPECT_EQ(synth.counts().tasks_vanished, 0u);
}

TEST(ProcSynthesizer, VanishedTasksAndProcessesAreSkipped) {
  FakeProc proc;
  proc.Dir("300/task/300");  // listed, but its status is gone
  proc.Dir("400");           // no task directory
  proc.Write("600/task/600/status", Status("nomaps", 600, 1, false));  // maps gone
  SynthesisOptions options;
  options.proc_root = proc.root();
  ProcSynthesizer synth(options);
  StringSink sink;
  EXPECT_TRUE(synth.SynthesizeProcess(300, sink).ok());
  EXPECT_TRUE(synth.SynthesizeProcess(400, sink).ok());
  EXPECT_TRUE(synth.SynthesizeProcess(12345, sink).ok());
  EXPECT_TRUE(synth.SynthesizeProcess(600, sink).ok());
  EXPECT_EQ(synth.counts().tasks_vanished, 4u);
  EXPECT_EQ(synth.counts().records, 2u);  // 600's FORK and COMM
  synth.ResetCounts();
  EXPECT_EQ(synth.counts().records, 0u);
}

TEST(ProcSynthesizer, MalformedProcTextIsAnErrorNamingTheFile) {
  FakeProc proc;
  proc.Write("500/task/500/status", "Name:\tbroken\nTgid:\tx\nPPid:\t1\n");
  proc.Write("700/task/700/status", Status("badmaps", 700, 1, false));
  proc.Write("700/task/700/maps", "00400000-00452000 r-xp 00000000 08:02\n");
  proc.Write("800/task/800/status", Status("badcomm", 800, 1, false));
  proc.Write("800/task/800/comm", "a-name-far-too-long-for-comm\n");
  SynthesisOptions options;
  options.proc_root = proc.root();
  ProcSynthesizer synth(options);
  StringSink sink;
  absl::Status status = synth.SynthesizeProcess(500, sink);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_NE(status.message().find("500/task/500/status"), absl::string_view::npos) << status;
  status = synth.SynthesizeProcess(700, sink);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_NE(status.message().find("maps"), absl::string_view::npos) << status;
  options.comm_source = CommSource::kCommFile;
  ProcSynthesizer with_comm(options);
  status = with_comm.SynthesizeProcess(800, sink);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_NE(status.message().find("comm"), absl::string_view::npos) << status;
}

TEST(ProcSynthesizer, SinkErrorsStopSynthesis) {
  FakeProc proc;
  MakeProcess100(proc);
  SynthesisOptions options;
  options.proc_root = proc.root();
  ProcSynthesizer synth(options);
  FailingSink sink;
  EXPECT_EQ(synth.SynthesizeProcess(100, sink).code(), absl::StatusCode::kResourceExhausted);
}

TEST(ProcSynthesizer, ThisProcessFromTheRealProc) {
  long page = sysconf(_SC_PAGESIZE);
  void* mapping = mmap(nullptr, static_cast<size_t>(page), PROT_READ | PROT_EXEC,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapping, MAP_FAILED);
  ProcSynthesizer synth(SynthesisOptions{});
  StringSink sink;
  absl::Status status = synth.SynthesizeProcess(getpid(), sink);
  absl::StatusOr<std::string> maps = ReadTextFile("/proc/self/maps");
  munmap(mapping, static_cast<size_t>(page));
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_TRUE(maps.ok());
  absl::StatusOr<std::vector<MapsEntry>> entries = ParseMaps(*maps);
  ASSERT_TRUE(entries.ok()) << entries.status();
  size_t executable = 0;
  for (const MapsEntry& entry : *entries) executable += entry.executable;
  absl::StatusOr<std::vector<DecodedRecord>> records = DecodeRecords(sink.bytes);
  ASSERT_TRUE(records.ok()) << records.status();
  size_t mmaps = 0, ours = 0;
  for (const DecodedRecord& r : *records) {
    EXPECT_EQ(r.pid, static_cast<uint32_t>(getpid()));
    if (r.type != PERF_RECORD_MMAP2) continue;
    ++mmaps;
    ours += r.mmap2.addr == reinterpret_cast<uintptr_t>(mapping);
  }
  EXPECT_EQ(mmaps, executable);
  EXPECT_EQ(ours, 1u);
}

TEST(ListProcessIds, NumericEntriesOnly) {
  FakeProc proc;
  proc.Dir("100");
  proc.Dir("7");
  proc.Dir("self");
  proc.Dir("sys");
  proc.Write("42abc", "");
  absl::StatusOr<std::vector<pid_t>> ids = ListProcessIds(proc.root());
  ASSERT_TRUE(ids.ok()) << ids.status();
  std::vector<pid_t> sorted = *ids;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<pid_t>{7, 100}));
  EXPECT_FALSE(ListProcessIds(proc.root() + "/missing").ok());
  absl::StatusOr<std::vector<pid_t>> real = ListProcessIds();
  ASSERT_TRUE(real.ok()) << real.status();
  EXPECT_NE(std::find(real->begin(), real->end(), getpid()), real->end());
}

TEST(SplitContiguous, AsPerfSplitsProc) {
  using Ranges = std::vector<std::pair<size_t, size_t>>;
  EXPECT_EQ(SplitContiguous(10, 3), (Ranges{{0, 4}, {4, 7}, {7, 10}}));
  EXPECT_EQ(SplitContiguous(5, 1), (Ranges{{0, 5}}));
  EXPECT_EQ(SplitContiguous(2, 5), (Ranges{{0, 1}, {1, 2}}));
  EXPECT_EQ(SplitContiguous(6, 3), (Ranges{{0, 2}, {2, 4}, {4, 6}}));
  EXPECT_TRUE(SplitContiguous(0, 3).empty());
  EXPECT_TRUE(SplitContiguous(3, 0).empty());
}

}  // namespace
}  // namespace perfscale
