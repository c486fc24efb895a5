#include <gtest/gtest.h>

#include <random>
#include <string>

#include "runtime/io/errors.h"
#include "runtime/io/input_stream.h"
#include "tests/unit_runtime/io_test_util.h"

namespace pipec {
namespace {

using testing::tfrecord_data;
using testing::zlib_compress;

std::string random_text(size_t n, uint64_t seed) {
  // Compressible but not trivial: words from a small vocabulary with random numbers.
  std::mt19937_64 rng(seed);
  std::string s;
  const char* words[] = {"alpha ", "beta ", "gamma ", "delta ", "\n", "\x00\x01 "};
  while (s.size() < n) {
    s += words[rng() % 6];
    s += std::to_string(rng() % 1000);
  }
  s.resize(n);
  return s;
}

// Reads a stream to its end through peek_some/consume, checking offset() along the way.
std::string drain(InputStream& in) {
  std::string out;
  const uint64_t start = in.offset();
  for (;;) {
    EXPECT_EQ(in.offset(), start + out.size());
    std::string_view v = in.peek_some();
    if (v.empty()) break;
    out.append(v);
    in.consume(v.size());
  }
  return out;
}

TEST(IoInputStream, PeekConsumeAndOffsets) {
  auto in = open_memory_stream("mem", "hello world", 64);
  EXPECT_EQ(in->name(), "mem");
  EXPECT_EQ(in->peek(5), "hello");
  EXPECT_EQ(in->offset(), 0u);
  in->consume(6);
  EXPECT_EQ(in->offset(), 6u);
  EXPECT_EQ(in->peek(100), "world");  // shorter than asked only at the end
  char buf[3];
  EXPECT_EQ(in->read(buf, 3), 3u);
  EXPECT_EQ(std::string(buf, 3), "wor");
  EXPECT_EQ(in->read(buf, 3), 2u);
  EXPECT_EQ(in->offset(), 11u);
  EXPECT_TRUE(in->peek(1).empty());
  EXPECT_TRUE(in->peek_some().empty());
}

TEST(IoInputStream, PeekLargerThanBufferGrowsIt) {
  std::string data = random_text(100000, 1);
  auto in = open_memory_stream("mem", data, 64);
  in->consume(in->peek(10).size());
  std::string_view v = in->peek(50000);
  ASSERT_EQ(v.size(), 50000u);
  EXPECT_EQ(v, std::string_view(data).substr(10, 50000));
  in->consume(50000);
  EXPECT_EQ(drain(*in).size(), data.size() - 50010);
}

TEST(IoInputStream, HugePeekDoesNotAllocateHugeBuffers) {
  // A corrupt length field asks for ~1 TB; the stream must stop at the end of the data instead of
  // allocating that much (which would throw bad_alloc or kill the process).
  auto in = open_memory_stream("mem", "only a few bytes", 64);
  EXPECT_EQ(in->peek(size_t(1) << 40), "only a few bytes");
}

TEST(IoInputStream, FileStreamReadsWholeFile) {
  std::string path = tfrecord_data("tfx_mnist.tfrecord");
  auto in = open_file_stream(path, 4096);
  std::string got = drain(*in);
  EXPECT_EQ(got.size(), 3203000u);
  EXPECT_EQ(got, testing::read_file(path));
}

TEST(IoInputStream, MissingFileIsNotFound) {
  try {
    open_file_stream("/nonexistent/dir/x.tfrecord");
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_EQ(e.kind(), DataError::Kind::NotFound);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/x.tfrecord:"), std::string::npos) << e.what();
  }
}

TEST(IoInputStream, DirectoryIsInvalidArgument) {
  testing::ScratchDir dir;
  try {
    open_file_stream(dir.path());
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_EQ(e.kind(), DataError::Kind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("directory"), std::string::npos) << e.what();
  }
}

TEST(IoInputStream, GzipAndZlibRoundTrip) {
  std::string data = random_text(700000, 2);  // several buffer fills
  for (bool gzip : {true, false}) {
    SCOPED_TRACE(gzip ? "gzip" : "zlib");
    auto in = open_decompressing_stream(open_memory_stream("m", zlib_compress(data, gzip), 1000),
                                        gzip ? Compression::Gzip : Compression::Zlib, 4096);
    EXPECT_EQ(in->compression(), gzip ? Compression::Gzip : Compression::Zlib);
    EXPECT_EQ(drain(*in), data);
    EXPECT_EQ(in->offset(), data.size());  // offsets count decompressed bytes
  }
}

TEST(IoInputStream, NoneIsPassThrough) {
  auto in = open_decompressing_stream(open_memory_stream("m", "abc"), Compression::None);
  EXPECT_EQ(in->compression(), Compression::None);
  EXPECT_EQ(drain(*in), "abc");
}

TEST(IoInputStream, GzipHeaderWithFileNameFlag) {
  // This file's gzip header has FNAME (flag 0x08) and an mtime; zlib must skip the name.
  std::string path = tfrecord_data("tfx_next_page.tfrecord.gz");
  std::string raw = testing::read_file(path);
  ASSERT_GE(raw.size(), 4u);
  EXPECT_EQ(static_cast<uint8_t>(raw[3]) & 0x08, 0x08);
  auto in = open_input_stream(path, Compression::Gzip);
  EXPECT_EQ(drain(*in).size(), 8500u);
}

TEST(IoInputStream, ConcatenatedGzipMembers) {
  std::string a = random_text(5000, 3), b = random_text(7000, 4);
  auto in = open_decompressing_stream(open_memory_stream("m", zlib_compress(a, true) + zlib_compress(b, true)),
                                      Compression::Gzip);
  EXPECT_EQ(drain(*in), a + b);
}

TEST(IoInputStream, EmptyCompressedFileIsEmptyStream) {
  for (Compression c : {Compression::Gzip, Compression::Zlib}) {
    auto in = open_decompressing_stream(open_memory_stream("m", ""), c);
    EXPECT_TRUE(in->peek(12).empty());
  }
}

TEST(IoInputStream, TruncatedGzipIsAnErrorAtEveryCutPoint) {
  std::string data = random_text(3000, 5);
  for (bool gzip : {true, false}) {
    std::string z = zlib_compress(data, gzip);
    for (size_t cut = 1; cut < z.size(); ++cut) {
      auto in = open_decompressing_stream(open_memory_stream("cut.gz", z.substr(0, cut), 128),
                                          gzip ? Compression::Gzip : Compression::Zlib, 256);
      std::string got;
      try {
        got = drain(*in);
        FAIL() << "cut at " << cut << " of " << z.size() << " read as a complete stream";
      } catch (const DataError& e) {
        EXPECT_EQ(e.kind(), DataError::Kind::DataLoss);
        std::string msg = e.what();
        EXPECT_NE(msg.find(gzip ? "gzip stream truncated" : "zlib stream truncated"), std::string::npos)
            << "cut " << cut << ": " << msg;
        EXPECT_EQ(msg.rfind("cut.gz: uncompressed byte offset ", 0), 0u) << msg;
      }
    }
  }
}

TEST(IoInputStream, TruncationHandsOutTheIntactPrefixFirst) {
  std::string data = random_text(200000, 6);
  std::string z = zlib_compress(data, true);
  auto in = open_decompressing_stream(open_memory_stream("m", z.substr(0, z.size() / 2)), Compression::Gzip, 4096);
  std::string got;
  try {
    for (;;) {
      std::string_view v = in->peek_some();
      if (v.empty()) break;
      got.append(v);
      in->consume(v.size());
    }
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_EQ(e.location().offset, static_cast<int64_t>(got.size()));
  }
  EXPECT_GT(got.size(), data.size() / 3);
  EXPECT_EQ(got, data.substr(0, got.size()));  // a true prefix: never garbage
  // The error is sticky: asking again does not hang or return more data.
  EXPECT_THROW(in->peek_some(), DataError);
}

TEST(IoInputStream, CorruptGzipIsDataLoss) {
  std::string data = random_text(20000, 7);
  std::string z = zlib_compress(data, true);
  int errors = 0;
  // Flip bytes across the deflate body and the trailer (not the header's mtime/OS bytes, which
  // gzip does not check).
  for (size_t at = 10; at < z.size(); at += 37) {
    std::string bad = z;
    bad[at] = static_cast<char>(bad[at] ^ 0x55);
    auto in = open_decompressing_stream(open_memory_stream("bad.gz", bad), Compression::Gzip, 1024);
    try {
      std::string got = drain(*in);
      ADD_FAILURE() << "corruption at " << at << " not detected";
    } catch (const DataError& e) {
      EXPECT_EQ(e.kind(), DataError::Kind::DataLoss) << e.what();
      ++errors;
    }
  }
  EXPECT_GT(errors, 10);
}

TEST(IoInputStream, TrailingGarbageIsAnError) {
  std::string z = zlib_compress("payload", false) + "junk";
  auto in = open_decompressing_stream(open_memory_stream("m", z), Compression::Zlib);
  EXPECT_THROW(drain(*in), DataError);
  std::string g = zlib_compress("payload", true) + "junk";
  auto in2 = open_decompressing_stream(open_memory_stream("m", g), Compression::Gzip);
  EXPECT_THROW(drain(*in2), DataError);
}

TEST(IoInputStream, PlainDataReadAsGzipIsAnError) {
  auto in = open_input_stream(tfrecord_data("tfx_mnist.tfrecord"), Compression::Gzip);
  try {
    drain(*in);
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_EQ(e.kind(), DataError::Kind::DataLoss);
    EXPECT_NE(std::string(e.what()).find("gzip stream corrupt"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pipec
