#include "benchmarks/synthesize/perf_records.h"

#include <sys/mman.h>

#include <cstring>
#include <string>

#include "gtest/gtest.h"

namespace perfscale {
namespace {

std::string Encoded(size_t size, const RecordBuffer& buffer) {
  return std::string(buffer.bytes, size);
}

TEST(PerfRecords, ForkRoundTrip) {
  RecordBuffer buffer;
  size_t size = EncodeFork(100, 1, 101, 100, buffer.bytes);
  EXPECT_EQ(size, 32u);
  absl::StatusOr<std::vector<DecodedRecord>> records = DecodeRecords(Encoded(size, buffer));
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 1u);
  const DecodedRecord& r = (*records)[0];
  EXPECT_EQ(r.type, static_cast<uint32_t>(PERF_RECORD_FORK));
  EXPECT_EQ(r.misc, PERF_RECORD_MISC_FORK_EXEC);
  EXPECT_EQ(r.pid, 100u);
  EXPECT_EQ(r.ppid, 1u);
  EXPECT_EQ(r.tid, 101u);
  EXPECT_EQ(r.ptid, 100u);
}

TEST(PerfRecords, CommSizesAndTruncation) {
  RecordBuffer buffer;
  // 16 bytes of header and ids, then the name and its NUL padded to 8.
  EXPECT_EQ(EncodeComm(1, 1, "", buffer.bytes), 24u);
  EXPECT_EQ(EncodeComm(1, 1, "bash", buffer.bytes), 24u);
  EXPECT_EQ(EncodeComm(1, 1, "seven77", buffer.bytes), 24u);
  EXPECT_EQ(EncodeComm(1, 1, "eight888", buffer.bytes), 32u);
  size_t size = EncodeComm(7, 8, "a-name-longer-than-fifteen", buffer.bytes);
  EXPECT_EQ(size, 32u);
  absl::StatusOr<std::vector<DecodedRecord>> records = DecodeRecords(Encoded(size, buffer));
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_EQ((*records)[0].text, "a-name-longer-t");
  EXPECT_EQ((*records)[0].pid, 7u);
  EXPECT_EQ((*records)[0].tid, 8u);
  // The padding is zeroed, not left over from an earlier record.
  EncodeComm(1, 1, "xxxxxxxxxxxxxxx", buffer.bytes);
  size = EncodeComm(1, 1, "ab", buffer.bytes);
  for (size_t i = 16 + 2; i < size; ++i) EXPECT_EQ(buffer.bytes[i], '\0') << i;
}

TEST(PerfRecords, Mmap2RoundTrip) {
  RecordBuffer buffer;
  Mmap2Fields fields;
  fields.misc = PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_DATA;
  fields.pid = 10;
  fields.tid = 10;
  fields.addr = 0x7f0000001000;
  fields.len = 0x2000;
  fields.pgoff = 0x3000;
  fields.maj = 0xfd;
  fields.min = 1;
  fields.ino = 123456789;
  fields.prot = PROT_READ | PROT_WRITE;
  fields.flags = MAP_PRIVATE;
  size_t size = EncodeMmap2(fields, "/usr/lib/libc.so.6", buffer.bytes);
  EXPECT_EQ(size, 72u + 24u);
  EXPECT_EQ(size % 8, 0u);
  absl::StatusOr<std::vector<DecodedRecord>> records = DecodeRecords(Encoded(size, buffer));
  ASSERT_TRUE(records.ok()) << records.status();
  const DecodedRecord& r = (*records)[0];
  EXPECT_EQ(r.type, static_cast<uint32_t>(PERF_RECORD_MMAP2));
  EXPECT_EQ(r.misc, fields.misc);
  EXPECT_EQ(r.mmap2.addr, fields.addr);
  EXPECT_EQ(r.mmap2.len, fields.len);
  EXPECT_EQ(r.mmap2.pgoff, fields.pgoff);
  EXPECT_EQ(r.mmap2.maj, fields.maj);
  EXPECT_EQ(r.mmap2.min, fields.min);
  EXPECT_EQ(r.mmap2.ino, fields.ino);
  EXPECT_EQ(r.mmap2.prot, fields.prot);
  EXPECT_EQ(r.mmap2.flags, fields.flags);
  EXPECT_EQ(r.text, "/usr/lib/libc.so.6");
}

TEST(PerfRecords, Mmap2FilenameIsCutAtPathMax) {
  RecordBuffer buffer;
  std::string long_name(10000, 'p');
  size_t size = EncodeMmap2(Mmap2Fields{}, long_name, buffer.bytes);
  EXPECT_EQ(size, kMaxRecordSize);
  absl::StatusOr<std::vector<DecodedRecord>> records = DecodeRecords(Encoded(size, buffer));
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_EQ((*records)[0].text.size(), kMaxFilenameBytes);
}

TEST(PerfRecords, NamespacesRoundTrip) {
  RecordBuffer buffer;
  perf_ns_link_info links[NR_NAMESPACES];
  for (int i = 0; i < NR_NAMESPACES; ++i) {
    links[i].dev = 4;
    links[i].ino = 4026531830u + static_cast<uint64_t>(i);
  }
  size_t size = EncodeNamespaces(5, 6, links, NR_NAMESPACES, buffer.bytes);
  EXPECT_EQ(size, 24u + 16u * NR_NAMESPACES);
  absl::StatusOr<std::vector<DecodedRecord>> records = DecodeRecords(Encoded(size, buffer));
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ((*records)[0].namespaces.size(), static_cast<size_t>(NR_NAMESPACES));
  EXPECT_EQ((*records)[0].namespaces[3].ino, 4026531833u);
}

TEST(PerfRecords, StreamOfMixedRecords) {
  std::string stream;
  RecordBuffer buffer;
  stream += Encoded(EncodeFork(1, 0, 1, 0, buffer.bytes), buffer);
  stream += Encoded(EncodeComm(1, 1, "init", buffer.bytes), buffer);
  stream += Encoded(EncodeMmap2(Mmap2Fields{}, "//anon", buffer.bytes), buffer);
  absl::StatusOr<std::vector<DecodedRecord>> records = DecodeRecords(stream);
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 3u);
  EXPECT_EQ(RecordTypeName((*records)[0].type), "FORK");
  EXPECT_EQ(RecordTypeName((*records)[1].type), "COMM");
  EXPECT_EQ(RecordTypeName((*records)[2].type), "MMAP2");
  EXPECT_EQ(RecordTypeName(PERF_RECORD_NAMESPACES), "NAMESPACES");
  EXPECT_EQ(RecordTypeName(9999), "9999");
  EXPECT_TRUE(DecodeRecords("")->empty());
}

// A record's bytes with its header's size (and optionally type) overwritten.
std::string WithHeader(std::string record, uint16_t size, uint32_t type = 0) {
  perf_event_header header;
  std::memcpy(&header, record.data(), sizeof(header));
  header.size = size;
  if (type != 0) header.type = type;
  std::memcpy(&record[0], &header, sizeof(header));
  return record;
}

void ExpectBad(const std::string& bytes, const std::string& why) {
  absl::StatusOr<std::vector<DecodedRecord>> records = DecodeRecords(bytes);
  ASSERT_FALSE(records.ok()) << "accepted: " << why;
  EXPECT_EQ(records.status().code(), absl::StatusCode::kInvalidArgument) << why;
  EXPECT_NE(records.status().message().find("offset"), absl::string_view::npos) << why;
}

TEST(PerfRecords, MalformedStreams) {
  RecordBuffer buffer;
  std::string fork = Encoded(EncodeFork(1, 0, 1, 0, buffer.bytes), buffer);
  std::string comm = Encoded(EncodeComm(1, 1, "abc", buffer.bytes), buffer);
  std::string mmap2 = Encoded(EncodeMmap2(Mmap2Fields{}, "/x", buffer.bytes), buffer);
  perf_ns_link_info links[2] = {};
  std::string ns = Encoded(EncodeNamespaces(1, 1, links, 2, buffer.bytes), buffer);

  ExpectBad(fork.substr(0, 5), "truncated header");
  ExpectBad(WithHeader(fork, 0), "size 0");
  ExpectBad(WithHeader(fork, 4), "size below the header");
  ExpectBad(WithHeader(fork, 12), "size not a multiple of 8");
  ExpectBad(WithHeader(fork, 64), "size beyond the stream");
  ExpectBad(fork.substr(0, 24), "cut record");
  ExpectBad(WithHeader(fork + std::string(8, '\0'), 40), "FORK of the wrong size");
  ExpectBad(WithHeader(comm, 16), "COMM without a name");
  std::string unterminated = comm;
  std::memset(&unterminated[16], 'x', 8);
  ExpectBad(unterminated, "COMM name without NUL");
  ExpectBad(WithHeader(mmap2, 72), "MMAP2 without a filename");
  std::string unterminated_mmap = mmap2;
  std::memset(&unterminated_mmap[72], 'y', mmap2.size() - 72);
  ExpectBad(unterminated_mmap, "MMAP2 filename without NUL");
  ExpectBad(WithHeader(ns, 16), "NAMESPACES shorter than its head");
  std::string wrong_count = ns;
  uint64_t count = 3;
  std::memcpy(&wrong_count[16], &count, sizeof(count));
  ExpectBad(wrong_count, "NAMESPACES count disagreeing with its size");
  ExpectBad(WithHeader(fork, 32, PERF_RECORD_SAMPLE), "unexpected type");
  // A good record followed by a bad one: the offset of the bad one.
  absl::StatusOr<std::vector<DecodedRecord>> second = DecodeRecords(fork + WithHeader(comm, 0));
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("offset 32"), absl::string_view::npos)
      << second.status();
}

}  // namespace
}  // namespace perfscale
