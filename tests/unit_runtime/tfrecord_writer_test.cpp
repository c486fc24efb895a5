#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "runtime/io/errors.h"
#include "runtime/io/file_glob.h"
#include "runtime/io/sharded_tfrecord_writer.h"
#include "runtime/io/tfrecord_reader.h"
#include "runtime/io/tfrecord_writer.h"
#include "tests/unit_runtime/io_test_util.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;

std::vector<std::string> read_all(const std::string& path, Compression c) {
  TFRecordReader r(path, {.compression = c});
  std::vector<std::string> out;
  std::string_view rec;
  while (r.next(rec)) out.emplace_back(rec);
  return out;
}

std::vector<std::string> sample_records() {
  std::mt19937_64 rng(42);
  std::vector<std::string> recs{"", "a", "foo", std::string(1 << 20, 'z')};
  for (int i = 0; i < 500; ++i) {
    std::string r(rng() % 400, '\0');
    for (char& c : r) c = static_cast<char>(rng() % 7);  // compressible
    recs.push_back(std::move(r));
  }
  return recs;
}

// Decompresses a whole gzip/zlib file with zlib directly, to check the writer's output format
// without going through pipec's own reader.
std::string inflate_all(const std::string& data, bool gzip) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, gzip ? 16 + MAX_WBITS : MAX_WBITS), Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char buf[65536];
  int rc;
  do {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
  } while (rc == Z_OK);
  EXPECT_EQ(rc, Z_STREAM_END);
  EXPECT_EQ(z.avail_in, 0u);
  inflateEnd(&z);
  return out;
}

TEST(TFRecordWriter, WritesExactlyTensorFlowsBytes) {
  ScratchDir dir;
  std::string path = dir.file("foobar.tfrecord");
  TFRecordWriter w(path);
  w.write("foo");
  w.write("bar");
  w.close();
  EXPECT_EQ(w.records_written(), 2);
  EXPECT_EQ(testing::read_file(path), testing::base64_decode("AwAAAAAAAACwmUkOZm9vYYq+/gMAAAAAAAAAsJlJDmJhckYA5cg="));
}

TEST(TFRecordWriter, RoundTripAllCompressions) {
  ScratchDir dir;
  std::vector<std::string> recs = sample_records();
  for (Compression c : {Compression::None, Compression::Gzip, Compression::Zlib}) {
    SCOPED_TRACE(std::string(compression_name(c)));
    std::string path = dir.file("rt_" + std::string(compression_name(c)));
    TFRecordWriter w(path, {.compression = c, .buffer_size = 1000, .sync = false});
    for (const auto& r : recs) w.write(r);
    w.close();
    EXPECT_EQ(read_all(path, c), recs);
    std::string raw = testing::read_file(path);
    if (c == Compression::Gzip) {
      ASSERT_GE(raw.size(), 2u);
      EXPECT_EQ(static_cast<uint8_t>(raw[0]), 0x1f);  // gzip magic
      EXPECT_EQ(static_cast<uint8_t>(raw[1]), 0x8b);
    }
    if (c != Compression::None) {
      std::string plain = inflate_all(raw, c == Compression::Gzip);
      EXPECT_LT(raw.size(), plain.size() / 2);  // it really compressed
      TFRecordReader again(open_memory_stream("plain", plain));
      std::string_view rec;
      size_t n = 0;
      while (again.next(rec)) EXPECT_EQ(rec, recs[n++]);
      EXPECT_EQ(n, recs.size());
    }
  }
}

TEST(TFRecordWriter, EmptyFileRoundTrips) {
  ScratchDir dir;
  for (Compression c : {Compression::None, Compression::Gzip, Compression::Zlib}) {
    std::string path = dir.file("empty_" + std::string(compression_name(c)));
    TFRecordWriter w(path, {.compression = c});
    w.close();
    EXPECT_TRUE(fs::exists(path));
    EXPECT_TRUE(read_all(path, c).empty());
  }
}

TEST(TFRecordWriter, NothingAppearsBeforeClose) {
  ScratchDir dir;
  std::string path = dir.file("atomic.tfrecord");
  {
    TFRecordWriter w(path);
    w.write("hello");
    EXPECT_FALSE(fs::exists(path));
    EXPECT_TRUE(fs::exists(path + ".tmp"));
    EXPECT_EQ(w.temp_path(), path + ".tmp");
    w.close();
    EXPECT_TRUE(fs::exists(path));
    EXPECT_FALSE(fs::exists(path + ".tmp"));
    w.close();  // idempotent
  }
  EXPECT_EQ(read_all(path, Compression::None), std::vector<std::string>{"hello"});
}

TEST(TFRecordWriter, DestroyedWithoutCloseLeavesNothing) {
  ScratchDir dir;
  std::string path = dir.file("abandoned.tfrecord");
  {
    TFRecordWriter w(path, {.compression = Compression::Gzip});
    w.write("partial");
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(TFRecordWriter, AbortRemovesTempAndOldFileSurvives) {
  ScratchDir dir;
  std::string path = dir.file("keep.tfrecord");
  {
    TFRecordWriter w(path);
    w.write("old");
    w.close();
  }
  TFRecordWriter w(path);
  w.write("new");
  w.abort();
  EXPECT_FALSE(w.is_open());
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  EXPECT_EQ(read_all(path, Compression::None), std::vector<std::string>{"old"});
  try {
    w.write("after abort");
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_EQ(e.kind(), DataError::Kind::InvalidArgument);
  }
}

TEST(TFRecordWriter, MissingDirectoryIsNotFound) {
  try {
    TFRecordWriter w("/no/such/dir/out.tfrecord");
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_EQ(e.kind(), DataError::Kind::NotFound);
    EXPECT_NE(std::string(e.what()).find("/no/such/dir/out.tfrecord.tmp"), std::string::npos) << e.what();
  }
}

TEST(TFRecordWriter, BadCompressionLevelLeavesNoTempFile) {
  ScratchDir dir;
  EXPECT_THROW(TFRecordWriter(dir.file("x"), {.compression = Compression::Gzip, .compression_level = 42}), DataError);
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(ShardedTFRecordWriter, ShardFileNames) {
  EXPECT_EQ(shard_file_name("out/train-*.tfrecord", 0, 8), "out/train-00000-of-00008.tfrecord");
  EXPECT_EQ(shard_file_name("out/train-*.tfrecord", 7, 8), "out/train-00007-of-00008.tfrecord");
  EXPECT_EQ(shard_file_name("out/train.tfrecord", 3, 10), "out/train.tfrecord-00003-of-00010");
  EXPECT_EQ(shard_file_name("*", 12, 123456), "000012-of-123456");
  EXPECT_THROW(shard_file_name("a*b*", 0, 2), DataError);
  EXPECT_THROW(shard_file_name("a*", 2, 2), DataError);
  EXPECT_THROW(shard_file_name("a*", 0, 0), DataError);
}

TEST(ShardedTFRecordWriter, RoundRobinAcrossShards) {
  ScratchDir dir;
  ShardedTFRecordWriter w(dir.file("part-*.tfrecord.gz"), 8, {.compression = Compression::Gzip, .sync = false});
  for (int i = 0; i < 20; ++i) w.write("record " + std::to_string(i));
  // Nothing is visible under the final names before close.
  EXPECT_THROW(expand_glob(dir.file("part-*-of-00008.tfrecord.gz")), DataError);
  w.close();
  EXPECT_EQ(w.records_written(), 20);
  std::vector<std::string> files = expand_glob(dir.file("part-*.tfrecord.gz"));
  ASSERT_EQ(files, w.paths());
  ASSERT_EQ(files.size(), 8u);
  EXPECT_EQ(files[0], dir.file("part-00000-of-00008.tfrecord.gz"));
  for (size_t s = 0; s < 8; ++s) {
    std::vector<std::string> got = read_all(files[s], Compression::Gzip);
    ASSERT_EQ(got.size(), s < 4 ? 3u : 2u) << files[s];
    for (size_t k = 0; k < got.size(); ++k) EXPECT_EQ(got[k], "record " + std::to_string(s + 8 * k));
  }
}

TEST(ShardedTFRecordWriter, WriteToChosenShardAndEmptyShardsExist) {
  ScratchDir dir;
  ShardedTFRecordWriter w(dir.file("s-*"), 3, {.sync = false});
  w.write_to(2, "x");
  EXPECT_THROW(w.write_to(3, "y"), DataError);
  w.close();
  EXPECT_TRUE(read_all(dir.file("s-00000-of-00003"), Compression::None).empty());
  EXPECT_TRUE(read_all(dir.file("s-00001-of-00003"), Compression::None).empty());
  EXPECT_EQ(read_all(dir.file("s-00002-of-00003"), Compression::None), std::vector<std::string>{"x"});
}

TEST(ShardedTFRecordWriter, DestroyedWithoutCloseLeavesNothing) {
  ScratchDir dir;
  {
    ShardedTFRecordWriter w(dir.file("t-*"), 4);
    w.write("a");
  }
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

}  // namespace
}  // namespace pipec
