#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <random>
#include <set>
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

// hold_buffer(): pieces peeked and consumed stay byte for byte what the stream delivered while their
// buffer is held, though the stream reads on (refills, a piece larger than the buffer that makes it
// grow, compressed streams), and buffers let go are used again rather than new ones allocated.
TEST(IoInputStream, HeldBytesStayWhileTheStreamReadsOn) {
  const std::string data = random_text(600000, 3);
  for (int kind = 0; kind < 3; ++kind) {
    SCOPED_TRACE(kind == 0 ? "plain" : kind == 1 ? "gzip" : "zlib");
    const size_t buffer = 4096;
    std::unique_ptr<InputStream> in =
        kind == 0 ? open_memory_stream("m", data, buffer)
                  : open_decompressing_stream(open_memory_stream("m", zlib_compress(data, kind == 1), 1000),
                                              kind == 1 ? Compression::Gzip : Compression::Zlib, buffer);
    struct Piece {
      std::string_view view;
      uint64_t offset;
    };
    std::deque<Piece> pieces;                         // views kept, oldest first
    std::deque<std::shared_ptr<const char[]>> holds;  // the buffers they lie in
    std::deque<size_t> holds_needed;                  // pieces.size() when each hold was taken
    std::set<const char*> buffers_seen;
    std::mt19937_64 rng(kind);
    size_t released = 0;
    while (in->offset() < data.size()) {
      // Mostly record-sized pieces, now and then one larger than the buffer.
      size_t n = rng() % 8 == 0 ? buffer + rng() % (3 * buffer) : 1 + rng() % 700;
      std::string_view v = in->peek(n);
      ASSERT_FALSE(v.empty());
      if (holds.empty() || holds.back().get() != in->buffer_data()) {
        holds.push_back(in->hold_buffer());
        holds_needed.push_back(released + pieces.size());
      }
      buffers_seen.insert(in->buffer_data());
      pieces.push_back({v, in->offset()});
      in->consume(v.size());
      // Let the oldest pieces go with a lag: each is checked against the data before it goes.
      while (pieces.size() > 40) {
        const Piece& p = pieces.front();
        ASSERT_EQ(p.view, std::string_view(data).substr(p.offset, p.view.size())) << "at offset " << p.offset;
        pieces.pop_front();
        ++released;
        // A hold goes once no piece kept lies in its buffer (the next hold's first piece is kept).
        while (holds.size() > 1 && holds_needed[1] <= released) {
          holds.pop_front();
          holds_needed.pop_front();
        }
      }
    }
    for (const Piece& p : pieces) EXPECT_EQ(p.view, std::string_view(data).substr(p.offset, p.view.size()));
    EXPECT_GT(buffers_seen.size(), 2u);  // the stream did go on in other buffers
  }
}

// A buffer that nobody holds any more is the one the stream goes on in next, not a new allocation; and
// with no holder the stream keeps its one buffer.
TEST(IoInputStream, ABufferLetGoIsUsedAgain) {
  const std::string data = random_text(100000, 4);
  auto in = open_memory_stream("m", data, 1024);
  auto read_past_the_buffer = [&] {
    const char* at = in->buffer_data();
    for (int i = 0; in->buffer_data() == at; ++i) {
      ASSERT_LT(i, 100) << "the stream never left its held buffer";
      in->consume(in->peek(100).size());
    }
  };
  const char* a = in->buffer_data();
  std::shared_ptr<const char[]> hold_a = in->hold_buffer();
  read_past_the_buffer();
  const char* b = in->buffer_data();
  EXPECT_NE(b, a);
  hold_a.reset();
  std::shared_ptr<const char[]> hold_b = in->hold_buffer();
  read_past_the_buffer();
  EXPECT_EQ(in->buffer_data(), a);  // b is held: back to a
  hold_b.reset();
  for (int i = 0; i < 100; ++i) in->consume(in->peek(100).size());
  EXPECT_EQ(in->buffer_data(), a);  // nothing held: refilled in place
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
