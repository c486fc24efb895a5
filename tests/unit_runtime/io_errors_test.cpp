#include <gtest/gtest.h>

#include "runtime/io/compression.h"
#include "runtime/io/errors.h"

namespace pipec {
namespace {

TEST(IoDataError, MessageComposition) {
  using K = DataError::Kind;
  EXPECT_STREQ(DataError(K::DataLoss, "data CRC mismatch (corrupt record)", {"data/x.tfrecord", 3, 1042}).what(),
               "data/x.tfrecord: record 3 at byte offset 1042: data CRC mismatch (corrupt record)");
  EXPECT_STREQ(DataError(K::DataLoss, "bad", {"f.gz", 3, 10, true}).what(),
               "f.gz: record 3 at uncompressed byte offset 10: bad");
  EXPECT_STREQ(DataError(K::NotFound, "no such file", {"a/b"}).what(), "a/b: no such file");
  EXPECT_STREQ(DataError(K::InvalidArgument, "missing", {"", 17}).what(), "record 17: missing");
  EXPECT_STREQ(DataError(K::Io, "x", {"f", -1, 5}).what(), "f: byte offset 5: x");
  EXPECT_STREQ(DataError(K::Io, "plain").what(), "plain");
  DataError e(K::DataLoss, "why", {"", 2});
  DataError moved = e.with_location({"file", 102, 7});
  EXPECT_STREQ(moved.what(), "file: record 102 at byte offset 7: why");
  EXPECT_EQ(moved.kind(), K::DataLoss);
  EXPECT_EQ(moved.reason(), "why");
  EXPECT_EQ(DataError::kind_name(K::NotFound), "not found");
  // A DataError is a std::runtime_error for callers that catch broadly.
  EXPECT_THROW(throw e, std::runtime_error);
}

TEST(IoCompression, Names) {
  EXPECT_EQ(parse_compression("GZIP"), Compression::Gzip);
  EXPECT_EQ(parse_compression(""), Compression::None);
  EXPECT_EQ(parse_compression("zlib"), Compression::Zlib);
  EXPECT_EQ(parse_compression("lz4"), std::nullopt);
  EXPECT_EQ(compression_name(Compression::Zlib), "zlib");
  EXPECT_EQ(compression_from_path("a/b.tfrecord.gz"), Compression::Gzip);
  EXPECT_EQ(compression_from_path("a/b.tfrecord"), Compression::None);
}

}  // namespace
}  // namespace pipec
