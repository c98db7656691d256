// Decoding lock samples and pairing contention begin/end per task the way perf lock
// contention does.
#include "lib/lock_contention.h"

#include <linux/perf_event.h>

#include <cstring>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace perfscale {
namespace {

constexpr uint16_t kBegin = 408;
constexpr uint16_t kEnd = 407;

// A PERF_RECORD_SAMPLE of sample_type TID | TIME | RAW, as the kernel writes it.
std::vector<uint8_t> Sample(uint16_t type, uint32_t tid, uint64_t time, uint64_t lock,
                            uint32_t raw_size = 24) {
  std::vector<uint8_t> raw(raw_size, 0);
  if (raw.size() >= 2) std::memcpy(raw.data(), &type, 2);
  if (raw.size() >= 16) std::memcpy(raw.data() + 8, &lock, 8);
  std::vector<uint8_t> record(sizeof(perf_event_header) + 8 + 8 + 4 + raw.size());
  perf_event_header header{PERF_RECORD_SAMPLE, 0, static_cast<uint16_t>(record.size())};
  std::memcpy(record.data(), &header, sizeof(header));
  uint32_t pid_tid[2] = {tid, tid};
  std::memcpy(record.data() + 8, pid_tid, 8);
  std::memcpy(record.data() + 16, &time, 8);
  std::memcpy(record.data() + 24, &raw_size, 4);
  std::memcpy(record.data() + 28, raw.data(), raw.size());
  return record;
}

TEST(ParseLockSampleTest, DecodesBeginAndEnd) {
  absl::StatusOr<LockSample> begin =
      ParseLockSample(Sample(kBegin, 42, 1000, 0xdead0), kBegin, kEnd);
  ASSERT_TRUE(begin.ok()) << begin.status();
  EXPECT_TRUE(begin->begin);
  EXPECT_EQ(begin->tid, 42u);
  EXPECT_EQ(begin->time_ns, 1000u);
  EXPECT_EQ(begin->lock_addr, 0xdead0u);
  absl::StatusOr<LockSample> end = ParseLockSample(Sample(kEnd, 42, 2000, 0xdead0), kBegin, kEnd);
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_FALSE(end->begin);
}

TEST(ParseLockSampleTest, RejectsOtherShapes) {
  EXPECT_FALSE(ParseLockSample(Sample(999, 1, 1, 1), kBegin, kEnd).ok());  // another tracepoint
  EXPECT_FALSE(ParseLockSample(Sample(kBegin, 1, 1, 1, /*raw_size=*/8), kBegin, kEnd).ok());
  std::vector<uint8_t> truncated = Sample(kBegin, 1, 1, 1);
  truncated.resize(20);
  EXPECT_FALSE(ParseLockSample(truncated, kBegin, kEnd).ok());
  std::vector<uint8_t> lost = Sample(kBegin, 1, 1, 1);
  lost[0] = PERF_RECORD_LOST;
  EXPECT_FALSE(ParseLockSample(lost, kBegin, kEnd).ok());
  std::vector<uint8_t> overlong = Sample(kBegin, 1, 1, 1);
  uint32_t huge = 4096;
  std::memcpy(overlong.data() + 24, &huge, 4);
  EXPECT_FALSE(ParseLockSample(overlong, kBegin, kEnd).ok());
}

TEST(ParseLockSampleTest, ReadsNothingPastTheSizeItsHeaderGives) {
  // A header that claims 8 bytes, followed by a whole sample (the next record in a ring).
  std::vector<uint8_t> record = Sample(kBegin, 1, 1, 1);
  perf_event_header short_header{PERF_RECORD_SAMPLE, 0, sizeof(perf_event_header)};
  std::vector<uint8_t> bytes(sizeof(short_header));
  std::memcpy(bytes.data(), &short_header, sizeof(short_header));
  bytes.insert(bytes.end(), record.begin() + sizeof(perf_event_header), record.end());
  EXPECT_FALSE(ParseLockSample(bytes, kBegin, kEnd).ok());
  // And a whole sample with bytes after it decodes as the sample alone.
  record.insert(record.end(), {1, 2, 3, 4, 5, 6, 7, 8});
  absl::StatusOr<LockSample> sample = ParseLockSample(record, kBegin, kEnd);
  ASSERT_TRUE(sample.ok()) << sample.status();
  EXPECT_EQ(sample->lock_addr, 1u);
}

LockSample Begin(uint32_t tid, uint64_t time, uint64_t lock) { return {tid, time, lock, true}; }
LockSample End(uint32_t tid, uint64_t time, uint64_t lock) { return {tid, time, lock, false}; }

TEST(PairLockContentionTest, SumsEachTasksWaits) {
  LockWaits waits = PairLockContention(
      {Begin(1, 100, 0xa), Begin(2, 110, 0xa), End(1, 150, 0xa), End(2, 300, 0xa)});
  EXPECT_EQ(waits.contended, 2u);
  EXPECT_EQ(waits.wait_ns, 50u + 190u);
  EXPECT_EQ(waits.unmatched_ends, 0u);
}

TEST(PairLockContentionTest, SortsSamplesFromSeveralRingsByTime) {
  // The task began waiting on one CPU's ring and ended on another's.
  LockWaits waits = PairLockContention({End(1, 500, 0xa), Begin(1, 100, 0xa)});
  EXPECT_EQ(waits.contended, 1u);
  EXPECT_EQ(waits.wait_ns, 400u);
}

TEST(PairLockContentionTest, ABeginWhileWaitingIsTheSameContention) {
  // A mutex traces begin (optimistic spin), begin again (sleep), then one end.
  LockWaits waits = PairLockContention({Begin(1, 100, 0xa), Begin(1, 120, 0xa), End(1, 400, 0xa)});
  EXPECT_EQ(waits.contended, 1u);
  EXPECT_EQ(waits.wait_ns, 300u);
}

TEST(PairLockContentionTest, OnlyTheSameLockEndsAWait) {
  LockWaits waits = PairLockContention(
      {Begin(1, 100, 0xa), End(1, 150, 0xb), End(1, 200, 0xa), End(3, 250, 0xa)});
  EXPECT_EQ(waits.contended, 1u);
  EXPECT_EQ(waits.wait_ns, 100u);
  EXPECT_EQ(waits.unmatched_ends, 2u);  // another lock's end; a wait that began earlier
}

TEST(PairLockContentionTest, AWaitStillOpenIsCountedButNotTimed) {
  LockWaits waits = PairLockContention({Begin(1, 100, 0xa)});
  EXPECT_EQ(waits.contended, 1u);
  EXPECT_EQ(waits.wait_ns, 0u);
  EXPECT_EQ(PairLockContention({}).contended, 0u);
}

}  // namespace
}  // namespace perfscale
