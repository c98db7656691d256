// RingBuffer against real records: a per-task page-fault software event with sample
// period 1 writes one sample per page touched, carrying the faulting address, so the
// test knows exactly which records must come out, in which order. Samples are 48 bytes,
// which does not divide a 4 KiB buffer: records regularly straddle the end.
#include "lib/ring_buffer.h"

#include <linux/capability.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/file_reader.h"
#include "lib/perf_attr.h"
#include "lib/perf_event.h"
#include "testing/common/process_state.h"

namespace perfscale {
namespace {

using ::testing::HasSubstr;

// IP, TID, TIME, ADDR, CPU: 8 + 5 * 8 = 48 bytes per sample.
constexpr uint64_t kSampleType =
    PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_CPU;
constexpr size_t kSampleBytes = 48;
constexpr size_t kAddrOffset = 8 + 8 + 8 + 8;  // header, ip, pid/tid, time

size_t PageSize() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// Fresh anonymous pages: the first touch of each is one minor fault.
class FreshPages {
 public:
  explicit FreshPages(size_t count) : size_(count * PageSize()) {
    base_ = static_cast<char*>(
        mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  }
  ~FreshPages() {
    if (base_ != MAP_FAILED) munmap(base_, size_);
  }
  bool ok() const { return base_ != MAP_FAILED; }
  void Touch(size_t index) { *(static_cast<volatile char*>(base_) + index * PageSize()) = 1; }
  uint64_t Address(size_t index) const {
    return reinterpret_cast<uint64_t>(base_) + index * PageSize();
  }
  bool Contains(uint64_t addr) const {
    return addr >= reinterpret_cast<uint64_t>(base_) &&
           addr < reinterpret_cast<uint64_t>(base_) + size_;
  }

 private:
  size_t size_;
  char* base_;
};

absl::StatusOr<PerfEvent> OpenPageFaultSampler() {
  perf_event_attr attr = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  attr.sample_period = 1;
  attr.sample_type = kSampleType;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  return PerfEvent::Open(attr, 0, -1);
}

// What one Consume saw.
struct Seen {
  std::vector<uint64_t> region_addrs;  // sample addresses inside the test's pages
  uint64_t samples = 0;
  uint64_t lost = 0;
  uint64_t bad_sizes = 0;
};

auto Collect(Seen& seen, const FreshPages& pages) {
  return [&seen, &pages](const perf_event_header& header, absl::Span<const uint8_t> record) {
    if (header.size != record.size()) ++seen.bad_sizes;
    if (header.type == PERF_RECORD_SAMPLE) {
      ++seen.samples;
      if (record.size() != kSampleBytes) {
        ++seen.bad_sizes;
        return;
      }
      uint64_t addr;
      std::memcpy(&addr, record.data() + kAddrOffset, sizeof(addr));
      if (pages.Contains(addr)) seen.region_addrs.push_back(addr);
    } else if (header.type == PERF_RECORD_LOST) {
      uint64_t lost;
      std::memcpy(&lost, record.data() + 16, sizeof(lost));
      seen.lost += lost;
    }
  };
}

TEST(ValidateRingPagesTest, AcceptsPowersOfTwo) {
  for (uint64_t pages : {uint64_t{1}, uint64_t{2}, uint64_t{1024}, kMaxRingPages}) {
    EXPECT_TRUE(ValidateRingPages(pages).ok()) << pages;
  }
}

TEST(ValidateRingPagesTest, RejectsOthersWithTheValue) {
  for (uint64_t pages :
       {uint64_t{0}, uint64_t{3}, uint64_t{1000}, kMaxRingPages * 2, uint64_t{1} << 40}) {
    absl::Status status = ValidateRingPages(pages);
    EXPECT_TRUE(absl::IsInvalidArgument(status)) << pages;
    EXPECT_THAT(std::string(status.message()), HasSubstr("power of two"));
    EXPECT_THAT(std::string(status.message()), HasSubstr(std::to_string(pages)));
  }
}

MlockLimits TwoCpuLimits() {
  MlockLimits limits;
  limits.page_size = 4096;
  limits.perf_event_mlock_kb = 516;  // 129 pages per CPU
  limits.online_cpus = 2;
  limits.rlimit_memlock = 8192 * 1024;  // 2048 pages
  return limits;
}

TEST(CheckRingBufferBudgetTest, FitsWithinUserAllowancePlusRlimit) {
  // 2 x 1025 = 2050 pages <= 258 + 2048.
  EXPECT_TRUE(CheckRingBufferBudget(TwoCpuLimits(), 1024, 2).ok());
  // Within the per-user allowance alone.
  MlockLimits no_rlimit = TwoCpuLimits();
  no_rlimit.rlimit_memlock = 0;
  EXPECT_TRUE(CheckRingBufferBudget(no_rlimit, 128, 2).ok());  // 258 pages exactly
}

TEST(CheckRingBufferBudgetTest, RejectsOverTheLimitWithNumbersAndAdvice) {
  absl::Status status = CheckRingBufferBudget(TwoCpuLimits(), 2048, 2);  // 4098 pages
  ASSERT_TRUE(absl::IsInvalidArgument(status));
  std::string message(status.message());
  EXPECT_THAT(message, HasSubstr("perf_event_mlock_kb=516"));
  EXPECT_THAT(message, HasSubstr("RLIMIT_MEMLOCK 8192 KiB"));
  EXPECT_THAT(message, HasSubstr("16392 KiB"));  // what it would lock
  EXPECT_THAT(message, HasSubstr("ulimit -l"));
  MlockLimits no_rlimit = TwoCpuLimits();
  no_rlimit.rlimit_memlock = 0;
  EXPECT_FALSE(CheckRingBufferBudget(no_rlimit, 128, 3).ok());
}

TEST(CheckRingBufferBudgetTest, ExemptAndUnlimitedAcceptAnything) {
  MlockLimits limits = TwoCpuLimits();
  limits.exempt = true;
  EXPECT_TRUE(CheckRingBufferBudget(limits, kMaxRingPages, 4096).ok());
  limits.exempt = false;
  limits.rlimit_memlock = UINT64_MAX;
  EXPECT_TRUE(CheckRingBufferBudget(limits, kMaxRingPages, 4096).ok());
}

TEST(CheckRingBufferBudgetTest, StillRejectsBadSizesWhenExempt) {
  MlockLimits limits = TwoCpuLimits();
  limits.exempt = true;
  EXPECT_FALSE(CheckRingBufferBudget(limits, 1000, 1).ok());
}

TEST(ProbeMlockLimitsTest, ReadsThisMachine) {
  MlockLimits limits = ProbeMlockLimits();
  EXPECT_GT(limits.page_size, 0u);
  EXPECT_GE(limits.online_cpus, 1);
  if (limits.exempt) {
    EXPECT_FALSE(limits.exempt_because.empty());
  }
}

TEST(RingBufferTest, MapRejectsBadSizesWithoutTouchingTheFd) {
  absl::StatusOr<RingBuffer> ring = RingBuffer::Map(-1, 3);
  EXPECT_TRUE(absl::IsInvalidArgument(ring.status()));
}

TEST(RingBufferTest, ConsumesEveryRecordInOrderAcrossTheWrap) {
#if defined(__SANITIZE_THREAD__)
  // The buffer is sized for the faults this test causes; ThreadSanitizer's shadow memory
  // faults on every touched page too, and the extra samples overflow it.
  GTEST_SKIP() << "ThreadSanitizer's own page faults flood the page-fault sampler";
#endif
  absl::StatusOr<PerfEvent> event = OpenPageFaultSampler();
  if (!event.ok()) GTEST_SKIP() << event.status();
  absl::StatusOr<RingBuffer> ring = RingBuffer::Map(event->fd(), 1);
  ASSERT_TRUE(ring.ok()) << ring.status();
  EXPECT_EQ(ring->data_size(), PageSize());

  constexpr size_t kRounds = 12;
  constexpr size_t kPerRound = 50;  // 2400 bytes: fits, and shifts the wrap point
  FreshPages pages(kRounds * kPerRound);
  ASSERT_TRUE(pages.ok());
  Seen seen;
  seen.region_addrs.reserve(kRounds * kPerRound);
  std::vector<uint8_t> chunks;
  chunks.reserve(4 * PageSize());
  std::vector<uint8_t> records;
  records.reserve(4 * PageSize());
  uint64_t consumed_bytes = 0;
  uint64_t consumed_records = 0;
  ASSERT_TRUE(event->Enable().ok());
  for (size_t round = 0; round < kRounds; ++round) {
    for (size_t i = 0; i < kPerRound; ++i) pages.Touch(round * kPerRound + i);
    // (More than that is possible: the test's own code faults too, e.g. on text pages
    // it runs for the first time.)
    EXPECT_GE(ring->Pending(), kPerRound * kSampleBytes);
    chunks.clear();
    records.clear();
    auto collect = Collect(seen, pages);
    absl::StatusOr<RingBuffer::Consumed> got = ring->Consume(
        [&](const perf_event_header& header, absl::Span<const uint8_t> record) {
          collect(header, record);
          records.insert(records.end(), record.begin(), record.end());
        },
        [&](absl::Span<const uint8_t> chunk) {
          chunks.insert(chunks.end(), chunk.begin(), chunk.end());
        });
    ASSERT_TRUE(got.ok()) << got.status();
    // The raw chunks are exactly the records, back to back.
    EXPECT_EQ(chunks, records) << "round " << round;
    EXPECT_EQ(got->bytes, records.size());
    consumed_bytes += got->bytes;
    consumed_records += got->records;
  }
  ASSERT_TRUE(event->Disable().ok());
  EXPECT_EQ(seen.bad_sizes, 0u);
  EXPECT_EQ(seen.lost, 0u);
  ASSERT_EQ(seen.region_addrs.size(), kRounds * kPerRound);
  for (size_t i = 0; i < seen.region_addrs.size(); ++i) {
    ASSERT_EQ(seen.region_addrs[i], pages.Address(i)) << "sample " << i;
  }
  // Far more than one buffer went through it: the wrap was crossed many times.
  EXPECT_GT(consumed_bytes, 5 * ring->data_size());
  EXPECT_GE(consumed_records, kRounds * kPerRound);
}

TEST(RingBufferTest, CountsWhatTheKernelDroppedWhenFull) {
  absl::StatusOr<PerfEvent> event = OpenPageFaultSampler();
  if (!event.ok()) GTEST_SKIP() << event.status();
  absl::StatusOr<RingBuffer> ring = RingBuffer::Map(event->fd(), 1);
  ASSERT_TRUE(ring.ok()) << ring.status();
  constexpr size_t kTouches = 200;  // the buffer holds 85 samples
  FreshPages pages(kTouches + 1);
  ASSERT_TRUE(pages.ok());
  Seen seen;
  seen.region_addrs.reserve(kTouches + 1);
  ASSERT_TRUE(event->Enable().ok());
  for (size_t i = 0; i < kTouches; ++i) pages.Touch(i);
  ASSERT_TRUE(ring->Consume(Collect(seen, pages)).ok());
  // The kernel reports the drop in the first record it can write after space frees.
  pages.Touch(kTouches);
  // Disabled before the last read, so that every fault counted is in the buffer.
  ASSERT_TRUE(event->Disable().ok());
  ASSERT_TRUE(ring->Consume(Collect(seen, pages)).ok());
  absl::StatusOr<uint64_t> faults = event->ReadCount();
  ASSERT_TRUE(faults.ok());
  EXPECT_GT(seen.lost, 0u);
  EXPECT_LT(seen.samples, kTouches);
  EXPECT_EQ(seen.samples + seen.lost, *faults);
  EXPECT_EQ(seen.bad_sizes, 0u);
}

TEST(RingBufferTest, MoveTransfersTheMappingAndDestructionUnmaps) {
  absl::StatusOr<PerfEvent> event = OpenPageFaultSampler();
  if (!event.ok()) GTEST_SKIP() << event.status();
  const int before = testing::CountPerfMappings();
  ASSERT_GE(before, 0);
  {
    absl::StatusOr<RingBuffer> ring = RingBuffer::Map(event->fd(), 2);
    ASSERT_TRUE(ring.ok()) << ring.status();
    EXPECT_EQ(testing::CountPerfMappings(), before + 1);
    RingBuffer moved(*std::move(ring));
    EXPECT_TRUE(moved.valid());
    EXPECT_FALSE(ring->valid());  // NOLINT: checking the moved-from state
    RingBuffer assigned;
    assigned = std::move(moved);
    EXPECT_TRUE(assigned.valid());
    EXPECT_EQ(assigned.mapped_bytes(), 3 * PageSize());
    EXPECT_EQ(testing::CountPerfMappings(), before + 1);
    EXPECT_TRUE(absl::IsFailedPrecondition(
        moved.Consume([](const perf_event_header&, absl::Span<const uint8_t>) {}).status()));
  }
  EXPECT_EQ(testing::CountPerfMappings(), before);
}

// Without CAP_IPC_LOCK and with RLIMIT_MEMLOCK 0, a buffer larger than the per-user
// allowance (perf_event_mlock_kb per CPU) is refused: the message must say why.
TEST(RingBufferTest, ExplainsTheMlockLimitWhenRefused) {
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(report[0]);
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2];
    std::memset(data, 0, sizeof(data));
    if (syscall(SYS_capget, &header, data) != 0) _exit(3);
    data[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
    if (syscall(SYS_capset, &header, data) != 0) _exit(3);
    rlimit none{0, 0};
    if (setrlimit(RLIMIT_MEMLOCK, &none) != 0) _exit(3);
    MlockLimits limits = ProbeMlockLimits();
    if (limits.exempt) _exit(4);  // perf_event_paranoid -1: nothing to test
    absl::StatusOr<PerfEvent> event = OpenPageFaultSampler();
    if (!event.ok()) _exit(4);
    uint64_t pages = 1;
    while (pages * limits.page_size / 1024 <=
           limits.perf_event_mlock_kb * static_cast<uint64_t>(limits.online_cpus)) {
      pages *= 2;
    }
    absl::StatusOr<RingBuffer> ring = RingBuffer::Map(event->fd(), pages);
    std::string message = ring.ok() ? "mapped" : ring.status().ToString();
    ssize_t ignored = write(report[1], message.data(), message.size());
    (void)ignored;
    _exit(ring.ok() ? 1 : absl::IsPermissionDenied(ring.status()) ? 0 : 2);
  }
  close(report[1]);
  std::string message;
  char buffer[512];
  ssize_t n;
  while ((n = read(report[0], buffer, sizeof(buffer))) > 0) message.append(buffer, n);
  close(report[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 3) GTEST_SKIP() << "cannot drop CAP_IPC_LOCK here";
  if (WEXITSTATUS(status) == 4) GTEST_SKIP() << "no limit applies on this machine";
  EXPECT_EQ(WEXITSTATUS(status), 0) << message;
  EXPECT_THAT(message, HasSubstr("locked memory over the limit"));
  EXPECT_THAT(message, HasSubstr("RLIMIT_MEMLOCK"));
}

}  // namespace
}  // namespace perfscale
