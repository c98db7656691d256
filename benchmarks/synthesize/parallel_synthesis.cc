#include "benchmarks/synthesize/parallel_synthesis.h"

#include <pthread.h>
#include <sys/mman.h>

#include <chrono>
#include <cstring>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "lib/errno_status.h"

namespace perfscale {
namespace {

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

constexpr char kMemoryFullPayload[] = "perfscale/memory_output_full";

absl::Status MemoryFull(size_t capacity) {
  absl::Status status = absl::ResourceExhaustedError(
      absl::StrCat("the in-memory output (", capacity,
                   " bytes reserved) is full: synthesize fewer processes or use the file sink"));
  status.SetPayload(kMemoryFullPayload, absl::Cord("1"));
  return status;
}

}  // namespace

bool IsMemoryOutputFull(const absl::Status& status) {
  return status.GetPayload(kMemoryFullPayload).has_value();
}

const char* OutputStrategyName(OutputStrategy strategy) {
  switch (strategy) {
    case OutputStrategy::kMutex:
      return "mutex";
    case OutputStrategy::kAtomic:
      return "atomic";
    case OutputStrategy::kPerWorker:
      return "per_worker";
  }
  return "?";
}

const char* OutputSinkName(OutputSink sink) {
  return sink == OutputSink::kMemory ? "memory" : "file";
}

absl::StatusOr<OutputStrategy> ParseOutputStrategy(absl::string_view name) {
  for (OutputStrategy s :
       {OutputStrategy::kMutex, OutputStrategy::kAtomic, OutputStrategy::kPerWorker}) {
    if (name == OutputStrategyName(s)) return s;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown output strategy '", name, "' (mutex, atomic, per_worker)"));
}

absl::StatusOr<OutputSink> ParseOutputSink(absl::string_view name) {
  if (name == "memory") return OutputSink::kMemory;
  if (name == "file") return OutputSink::kFile;
  return absl::InvalidArgumentError(absl::StrCat("unknown sink '", name, "' (memory, file)"));
}

// The shared output. The lock, the atomic offset and the rest sit on separate cache
// lines so that the strategies differ only in what they are meant to differ in.
struct ParallelSynthesizer::Output {
  char* arena = nullptr;
  size_t capacity = 0;
  std::optional<ScratchFile> file;
  alignas(64) std::mutex mu;
  size_t used = 0;  // kMutex (under mu) and kPerWorker (after the workers)
  alignas(64) std::atomic<uint64_t> reserved{0};  // kAtomic

  ~Output() {
    if (arena != nullptr) munmap(arena, capacity);
  }
  size_t size() const {
    return used + static_cast<size_t>(reserved.load(std::memory_order_relaxed));
  }
};

namespace {

class MutexSink : public RecordSink {
 public:
  MutexSink(char* arena, size_t capacity, std::optional<ScratchFile>* file, std::mutex* mu,
            size_t* used)
      : arena_(arena), capacity_(capacity), file_(file), mu_(mu), used_(used) {}

  absl::Status Write(const char* record, size_t size) override {
    if (!mu_->try_lock()) {
      int64_t start = NowNanos();
      mu_->lock();
      wait_ns += NowNanos() - start;
      ++waits;
    }
    absl::Status status;
    if (arena_ != nullptr) {
      if (*used_ + size > capacity_) {
        status = MemoryFull(capacity_);
      } else {
        std::memcpy(arena_ + *used_, record, size);
        *used_ += size;
      }
    } else {
      status = WriteFully((*file_)->fd(), record, size);
    }
    mu_->unlock();
    return status;
  }

  int64_t wait_ns = 0;
  uint64_t waits = 0;

 private:
  char* const arena_;
  const size_t capacity_;
  std::optional<ScratchFile>* const file_;
  std::mutex* const mu_;
  size_t* const used_;
};

class AtomicSink : public RecordSink {
 public:
  AtomicSink(char* arena, size_t capacity, std::optional<ScratchFile>* file,
             std::atomic<uint64_t>* reserved)
      : arena_(arena), capacity_(capacity), file_(file), reserved_(reserved) {}

  absl::Status Write(const char* record, size_t size) override {
    uint64_t offset = reserved_->fetch_add(size, std::memory_order_relaxed);
    if (arena_ != nullptr) {
      if (offset + size > capacity_) return MemoryFull(capacity_);
      std::memcpy(arena_ + offset, record, size);
      return absl::OkStatus();
    }
    return PwriteFully((*file_)->fd(), record, size, static_cast<off_t>(offset));
  }

 private:
  char* const arena_;
  const size_t capacity_;
  std::optional<ScratchFile>* const file_;
  std::atomic<uint64_t>* const reserved_;
};

class BufferSink : public RecordSink {
 public:
  absl::Status Write(const char* record, size_t size) override {
    buffer.append(record, size);
    return absl::OkStatus();
  }
  std::string buffer;  // kept between runs, so it grows once
};

}  // namespace

struct ParallelSynthesizer::Worker {
  explicit Worker(const SynthesisOptions& options) : synth(options) {}
  ProcSynthesizer synth;
  std::unique_ptr<RecordSink> sink;
  MutexSink* mutex_sink = nullptr;    // sink, when the strategy is kMutex
  BufferSink* buffer_sink = nullptr;  // sink, when the strategy is kPerWorker
  ParallelSynthesizer* owner = nullptr;
  const std::vector<pid_t>* pids = nullptr;
  size_t begin = 0, end = 0;
  int64_t busy_ns = 0;
  absl::Status status;
};

ParallelSynthesizer::ParallelSynthesizer(const ParallelSynthesisOptions& options)
    : options_(options), output_(std::make_unique<Output>()) {}

ParallelSynthesizer::~ParallelSynthesizer() = default;

absl::StatusOr<std::unique_ptr<ParallelSynthesizer>> ParallelSynthesizer::Create(
    const ParallelSynthesisOptions& options) {
  if (options.workers < 1 || options.workers > kMaxSynthesisWorkers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "workers: ", options.workers, " is out of range [1, ", kMaxSynthesisWorkers, "]"));
  }
  std::unique_ptr<ParallelSynthesizer> synth(new ParallelSynthesizer(options));
  Output& out = *synth->output_;
  if (options.sink == OutputSink::kMemory) {
    void* arena = mmap(nullptr, options.memory_capacity, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (arena == MAP_FAILED) {
      return ErrnoStatus(
          errno, absl::StrCat("mmap ", options.memory_capacity, " bytes for the in-memory output"));
    }
    out.arena = static_cast<char*>(arena);
    out.capacity = options.memory_capacity;
  } else {
    absl::StatusOr<ScratchFile> file = ScratchFile::Create(options.file_dir);
    if (!file.ok()) return file.status();
    out.file.emplace(*std::move(file));
  }
  for (int i = 0; i < options.workers; ++i) {
    auto worker = std::make_unique<Worker>(options.synthesis);
    worker->owner = synth.get();
    switch (options.strategy) {
      case OutputStrategy::kMutex: {
        auto sink =
            std::make_unique<MutexSink>(out.arena, out.capacity, &out.file, &out.mu, &out.used);
        worker->mutex_sink = sink.get();
        worker->sink = std::move(sink);
        break;
      }
      case OutputStrategy::kAtomic:
        worker->sink =
            std::make_unique<AtomicSink>(out.arena, out.capacity, &out.file, &out.reserved);
        break;
      case OutputStrategy::kPerWorker: {
        auto sink = std::make_unique<BufferSink>();
        worker->buffer_sink = sink.get();
        worker->sink = std::move(sink);
        break;
      }
    }
    synth->workers_.push_back(std::move(worker));
  }
  return synth;
}

absl::Status ParallelSynthesizer::Reset() {
  output_->used = 0;
  output_->reserved.store(0, std::memory_order_relaxed);
  if (output_->file) return output_->file->Truncate();
  return absl::OkStatus();
}

void* ParallelSynthesizer::WorkerMain(void* arg) {
  auto* worker = static_cast<Worker*>(arg);
  worker->owner->RunWorker(*worker, *worker->pids);
  return nullptr;
}

void ParallelSynthesizer::RunWorker(Worker& worker, const std::vector<pid_t>& pids) {
  int64_t start = NowNanos();
  for (size_t i = worker.begin; i < worker.end; ++i) {
    if (stop_.load(std::memory_order_relaxed)) break;
    worker.status = worker.synth.SynthesizeProcess(pids[i], *worker.sink);
    if (!worker.status.ok()) {
      stop_.store(true, std::memory_order_relaxed);
      break;
    }
  }
  worker.busy_ns = NowNanos() - start;
}

absl::Status ParallelSynthesizer::JoinPrivateBuffers() {
  Output& out = *output_;
  for (const auto& worker : workers_) {
    const std::string& buffer = worker->buffer_sink->buffer;
    if (out.arena != nullptr) {
      if (out.used + buffer.size() > out.capacity) return MemoryFull(out.capacity);
      std::memcpy(out.arena + out.used, buffer.data(), buffer.size());
      out.used += buffer.size();
    } else if (absl::Status s = WriteFully(out.file->fd(), buffer.data(), buffer.size()); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<SynthesisRunStats> ParallelSynthesizer::Run(const std::vector<pid_t>& pids) {
  std::vector<std::pair<size_t, size_t>> ranges =
      SplitContiguous(pids.size(), static_cast<size_t>(options_.workers));
  stop_.store(false, std::memory_order_relaxed);
  for (size_t i = 0; i < workers_.size(); ++i) {
    Worker& worker = *workers_[i];
    worker.synth.ResetCounts();
    worker.pids = &pids;
    worker.begin = i < ranges.size() ? ranges[i].first : 0;
    worker.end = i < ranges.size() ? ranges[i].second : 0;
    worker.busy_ns = 0;
    worker.status = absl::OkStatus();
    if (worker.mutex_sink != nullptr) {
      worker.mutex_sink->wait_ns = 0;
      worker.mutex_sink->waits = 0;
    }
    if (worker.buffer_sink != nullptr) worker.buffer_sink->buffer.clear();
  }

  absl::Status failure;
  if (ranges.size() == 1) {
    RunWorker(*workers_[0], pids);
  } else if (ranges.size() > 1) {
    std::vector<pthread_t> threads;
    threads.reserve(ranges.size());
    for (size_t i = 0; i < ranges.size(); ++i) {
      pthread_t thread;
      int err =
          pthread_create(&thread, nullptr, &ParallelSynthesizer::WorkerMain, workers_[i].get());
      if (err != 0) {
        stop_.store(true, std::memory_order_relaxed);
        failure = ErrnoStatus(err, absl::StrCat("pthread_create (synthesis worker ", i + 1, " of ",
                                                ranges.size(), ")"));
        break;
      }
      threads.push_back(thread);
    }
    for (pthread_t thread : threads) pthread_join(thread, nullptr);
  }
  if (!failure.ok()) return failure;

  SynthesisRunStats stats;
  stats.workers = static_cast<int>(ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    const Worker& worker = *workers_[i];
    if (!worker.status.ok()) return worker.status;
    const SynthesisCounts& counts = worker.synth.counts();
    stats.counts.records += counts.records;
    stats.counts.bytes += counts.bytes;
    stats.counts.tasks += counts.tasks;
    stats.counts.tasks_vanished += counts.tasks_vanished;
    stats.worker_seconds += static_cast<double>(worker.busy_ns) * 1e-9;
    if (worker.mutex_sink != nullptr) {
      stats.lock_wait_seconds += static_cast<double>(worker.mutex_sink->wait_ns) * 1e-9;
      stats.lock_waits += worker.mutex_sink->waits;
    }
  }
  if (options_.strategy == OutputStrategy::kPerWorker) {
    if (absl::Status joined = JoinPrivateBuffers(); !joined.ok()) return joined;
  }
  return stats;
}

absl::StatusOr<std::string> ParallelSynthesizer::ReadOutput() const {
  if (output_->file) return output_->file->ReadAll();
  return std::string(output_->arena, output_->size());
}

}  // namespace perfscale
