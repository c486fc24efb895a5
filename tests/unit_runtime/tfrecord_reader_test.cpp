#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/io/errors.h"
#include "runtime/io/tfrecord_format.h"
#include "runtime/io/tfrecord_reader.h"
#include "tests/unit_runtime/io_test_util.h"

namespace pipec {
namespace {

using testing::base64_decode;
using testing::tfrecord_data;

// Known-good framing written by TensorFlow (from Apache Beam's tfrecordio tests).
const char* kFooB64 = "AwAAAAAAAACwmUkOZm9vYYq+/g==";
const char* kFooBarB64 = "AwAAAAAAAACwmUkOZm9vYYq+/gMAAAAAAAAAsJlJDmJhckYA5cg=";

TFRecordReader memory_reader(std::string bytes, TFRecordReaderOptions opts = {}, std::string name = "mem.tfrecord") {
  return TFRecordReader(open_decompressing_stream(open_memory_stream(name, std::move(bytes), opts.buffer_size),
                                                  opts.compression, opts.buffer_size),
                        opts);
}

std::vector<std::string> read_all(TFRecordReader& r) {
  std::vector<std::string> out;
  std::string_view rec;
  while (r.next(rec)) out.emplace_back(rec);
  return out;
}

// Frames records by hand (independently of TFRecordWriter).
std::string frame(const std::vector<std::string>& records) {
  std::string out;
  for (const auto& r : records) {
    char h[12], f[4];
    tfrecord::encode_header(h, r.size());
    store_le32(f, crc32c_masked(r.data(), r.size()));
    out.append(h, 12).append(r).append(f, 4);
  }
  return out;
}

// Runs `fn`, expecting a DataError; returns it.
template <class Fn>
DataError expect_error(Fn&& fn) {
  try {
    fn();
  } catch (const DataError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a DataError";
  return DataError(DataError::Kind::Io, "none");
}

TEST(TFRecordReader, ReadsTensorFlowFraming) {
  auto r = memory_reader(base64_decode(kFooB64));
  EXPECT_EQ(read_all(r), std::vector<std::string>{"foo"});
  EXPECT_EQ(r.records_read(), 1);
  EXPECT_EQ(r.offset(), 19u);

  auto r2 = memory_reader(base64_decode(kFooBarB64));
  std::string_view rec;
  ASSERT_TRUE(r2.next(rec));
  EXPECT_EQ(rec, "foo");
  EXPECT_EQ(r2.offset(), 19u);
  ASSERT_TRUE(r2.next(rec));
  EXPECT_EQ(rec, "bar");
  EXPECT_FALSE(r2.next(rec));
  EXPECT_FALSE(r2.next(rec));  // stays at the end
  EXPECT_EQ(r2.records_read(), 2);
}

TEST(TFRecordReader, EmptyFileHasNoRecords) {
  auto r = memory_reader("");
  std::string_view rec;
  EXPECT_FALSE(r.next(rec));
}

TEST(TFRecordReader, RealCorruptFileIsDataLossAtOffsetZero) {
  std::string path = tfrecord_data("pets_examples_corrupt.record");
  TFRecordReader r(path);
  std::string_view rec;
  DataError e = expect_error([&] { r.next(rec); });
  EXPECT_EQ(e.kind(), DataError::Kind::DataLoss);
  EXPECT_EQ(e.location().record, 0);
  EXPECT_EQ(e.location().offset, 0);
  EXPECT_EQ(std::string(e.what()), path + ": record 0 at byte offset 0: data CRC mismatch (corrupt record)");
  // Sticky: asking again gives the same error, never the next (garbage) bytes.
  DataError again = expect_error([&] { r.next(rec); });
  EXPECT_STREQ(again.what(), e.what());
}

TEST(TFRecordReader, CorruptFileWithoutDataCrcStopsAtTheMisplacedHeader) {
  // Skipping the data CRC returns the damaged record 0, but record 1's header sits one byte early,
  // so its length CRC cannot match: still an error, not garbage.
  TFRecordReader r(tfrecord_data("pets_examples_corrupt.record"), {.verify_data_crc = false});
  std::string_view rec;
  ASSERT_TRUE(r.next(rec));
  EXPECT_EQ(rec.size(), 18430u);
  DataError e = expect_error([&] { r.next(rec); });
  EXPECT_EQ(e.kind(), DataError::Kind::DataLoss);
  EXPECT_EQ(e.location().record, 1);
  EXPECT_EQ(e.location().offset, 18446);
  EXPECT_NE(e.reason().find("length CRC mismatch"), std::string::npos) << e.what();
}

TEST(TFRecordReader, CountsRecordsOfRealFiles) {
  struct Case {
    const char* file;
    Compression c;
    int64_t records;
  };
  for (const Case& c :
       {Case{"pytorch_data_example.tfrecord", Compression::None, 4},
        Case{"pytorch_data_sequence_example.tfrecord", Compression::None, 4},
        Case{"tfrecord_lite_images.tfrecord", Compression::None, 2},
        Case{"tfrecord_lite_test.tfrecord", Compression::None, 42}, Case{"tfx_mnist.tfrecord", Compression::None, 1000},
        Case{"tfx_penguin_eval.tfrecord.gz", Compression::Gzip, 100},
        Case{"tfx_next_page.tfrecord.gz", Compression::Gzip, 100},
        Case{"tfx_taxi_eval_00000.tfrecord.gz", Compression::Gzip, 424}}) {
    SCOPED_TRACE(c.file);
    TFRecordReader r(tfrecord_data(c.file), {.compression = c.c});
    std::string_view rec;
    int64_t n = 0;
    uint64_t bytes = 0;
    while (r.next(rec)) {
      ++n;
      bytes += rec.size() + 16;
    }
    EXPECT_EQ(n, c.records);
    EXPECT_EQ(r.records_read(), c.records);
    EXPECT_EQ(r.offset(), bytes);  // framing accounts for every byte
  }
  // The uncompressed sizes of the gzip files (as gunzip reports them).
  TFRecordReader taxi(tfrecord_data("tfx_taxi_eval_00000.tfrecord.gz"), {.compression = Compression::Gzip});
  read_all(taxi);
  EXPECT_EQ(taxi.offset(), 220256u);
}

TEST(TFRecordReader, GzipFileReadWithoutCompressionIsAnError) {
  TFRecordReader r(tfrecord_data("tfx_penguin_eval.tfrecord.gz"));
  std::string_view rec;
  DataError e = expect_error([&] { r.next(rec); });
  EXPECT_EQ(e.kind(), DataError::Kind::DataLoss);
  EXPECT_NE(e.reason().find("length CRC mismatch"), std::string::npos) << e.what();
}

TEST(TFRecordReader, EveryTruncationIsCleanEndOrError) {
  std::vector<std::string> recs{"first", "", std::string(300, 'x'), "last one"};
  std::string all = frame(recs);
  std::vector<size_t> boundaries{0};
  for (const auto& r : recs) boundaries.push_back(boundaries.back() + 16 + r.size());
  for (size_t cut = 0; cut <= all.size(); ++cut) {
    auto r = memory_reader(all.substr(0, cut), {.buffer_size = 64});
    std::vector<std::string> got;
    std::string_view rec;
    bool at_boundary = std::find(boundaries.begin(), boundaries.end(), cut) != boundaries.end();
    try {
      while (r.next(rec)) got.emplace_back(rec);
      EXPECT_TRUE(at_boundary) << "cut " << cut << " ended cleanly";
    } catch (const DataError& e) {
      EXPECT_FALSE(at_boundary) << "cut " << cut << ": " << e.what();
      EXPECT_EQ(e.kind(), DataError::Kind::DataLoss);
      EXPECT_NE(e.reason().find("truncated"), std::string::npos) << e.what();
      EXPECT_EQ(e.location().record, static_cast<int64_t>(got.size()));
      EXPECT_EQ(e.location().offset, static_cast<int64_t>(boundaries[got.size()]));
    }
    // Whatever was returned is an exact prefix of the records.
    ASSERT_LE(got.size(), recs.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], recs[i]);
  }
}

TEST(TFRecordReader, EveryFlippedByteIsDetected) {
  std::vector<std::string> recs{"alpha", "bravo charlie", "delta"};
  std::string all = frame(recs);
  for (size_t at = 0; at < all.size(); ++at) {
    std::string bad = all;
    bad[at] = static_cast<char>(bad[at] ^ 0x01);
    auto r = memory_reader(bad);
    std::vector<std::string> got;
    DataError e = expect_error([&] {
      std::string_view rec;
      while (r.next(rec)) got.emplace_back(rec);
    });
    EXPECT_EQ(e.kind(), DataError::Kind::DataLoss);
    // The error names the record that holds the flipped byte.
    size_t record = at < 21 ? 0 : at < 21 + 29 ? 1 : 2;
    EXPECT_EQ(e.location().record, static_cast<int64_t>(record)) << "flip at " << at << ": " << e.what();
    EXPECT_EQ(got.size(), record);
    size_t in_record = at - (record == 0 ? 0 : record == 1 ? 21 : 50);
    if (in_record < 12) EXPECT_NE(e.reason().find("length CRC mismatch"), std::string::npos) << e.what();
    else EXPECT_NE(e.reason().find("data CRC mismatch"), std::string::npos) << e.what();
  }
}

TEST(TFRecordReader, SkippingDataCrcAcceptsDamagedData) {
  std::string all = frame({"payload"});
  all[14] = 'X';
  auto strict = memory_reader(all);
  EXPECT_THROW(read_all(strict), DataError);
  auto lax = memory_reader(all, {.verify_data_crc = false});
  EXPECT_EQ(read_all(lax), std::vector<std::string>{"paXload"});
}

TEST(TFRecordReader, HugeLengthWithValidCrcIsTruncationNotAllocation) {
  std::string bytes(12, '\0');
  tfrecord::encode_header(bytes.data(), uint64_t(1) << 40);  // 1 TiB, correctly checksummed
  bytes += "some data";
  auto r = memory_reader(bytes);
  std::string_view rec;
  DataError e = expect_error([&] { r.next(rec); });
  EXPECT_NE(e.reason().find("truncated record"), std::string::npos) << e.what();

  std::string absurd(12, '\0');
  tfrecord::encode_header(absurd.data(), ~uint64_t(0));
  auto r2 = memory_reader(absurd);
  DataError e2 = expect_error([&] { r2.next(rec); });
  EXPECT_NE(e2.reason().find("implausible"), std::string::npos) << e2.what();
}

TEST(TFRecordReader, RecordsLargerThanTheBuffer) {
  std::vector<std::string> recs;
  for (size_t n : {1u, 100u, 5000u, 1u << 20, 7u}) recs.push_back(std::string(n, static_cast<char>('a' + n % 26)));
  auto r = memory_reader(frame(recs), {.buffer_size = 64});
  EXPECT_EQ(read_all(r), recs);
}

TEST(TFRecordReader, ErrorMessageFormat) {
  std::string all = frame({"abc", "defgh"});
  all[12 + 3 + 4 + 12 + 2] ^= 0x20;  // inside record 1's data
  auto r = memory_reader(all, {}, "data/x.tfrecord");
  DataError e = expect_error([&] { read_all(r); });
  EXPECT_STREQ(e.what(), "data/x.tfrecord: record 1 at byte offset 19: data CRC mismatch (corrupt record)");
}

TEST(TFRecordReader, TruncatedGzipFileGivesRecordsThenError) {
  testing::ScratchDir dir;
  std::string raw = testing::read_file(tfrecord_data("tfx_taxi_eval_00000.tfrecord.gz"));
  std::string cut = dir.file("taxi_cut.gz");
  testing::write_file(cut, raw.substr(0, raw.size() / 2));
  TFRecordReader r(cut, {.compression = Compression::Gzip, .buffer_size = 4096});
  std::string_view rec;
  int64_t n = 0;
  DataError e = expect_error([&] {
    while (r.next(rec)) ++n;
  });
  EXPECT_GT(n, 100);  // about half of the 424 records come back intact first
  EXPECT_LT(n, 424);
  EXPECT_EQ(e.kind(), DataError::Kind::DataLoss);
  EXPECT_EQ(e.location().record, n);
  EXPECT_TRUE(e.location().uncompressed_offset);
  std::string msg = e.what();
  EXPECT_NE(msg.find("gzip stream truncated"), std::string::npos) << msg;
  EXPECT_NE(msg.find(cut + ": record " + std::to_string(n) + " at uncompressed byte offset "), std::string::npos)
      << msg;
}

TEST(TFRecordReader, NextBatch) {
  auto r = memory_reader(frame({"a", "bb", "ccc", "dddd", "eeeee"}));
  RecordBatch batch;
  EXPECT_EQ(r.next_batch(2, batch), 2u);
  EXPECT_EQ(r.next_batch(2, batch), 2u);  // appends
  ASSERT_EQ(batch.size(), 4u);
  EXPECT_EQ(batch[0], "a");
  EXPECT_EQ(batch[3], "dddd");
  EXPECT_EQ(batch.byte_size(), 10u);
  batch.clear();
  EXPECT_EQ(r.next_batch(10, batch), 1u);
  EXPECT_EQ(batch.views(), std::vector<std::string_view>{"eeeee"});
  EXPECT_EQ(r.next_batch(10, batch), 0u);
}

TEST(TFRecordReader, MissingFileIsNotFound) {
  DataError e = expect_error([] { TFRecordReader r("/no/such/file.tfrecord"); });
  EXPECT_EQ(e.kind(), DataError::Kind::NotFound);
}

}  // namespace
}  // namespace pipec
