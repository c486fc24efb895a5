// ShardedTFRecordWriter: spreads records over N TFRecord files named from a pattern.
//
// The shard name replaces the pattern's single '*' with "SSSSS-of-NNNNN" (the tf.data / Beam
// convention, 5 digits or more), e.g. "out/train-*.tfrecord" with 8 shards gives
// "out/train-00000-of-00008.tfrecord" ... "out/train-00007-of-00008.tfrecord". A pattern without a
// '*' gets "-SSSSS-of-NNNNN" appended. Records go round-robin, so shards differ in size by at most
// one record. Every shard file is created, even an empty one, so that "-of-N" can be trusted.
// Each shard is a TFRecordWriter: nothing appears under a final name before close().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/io/tfrecord_writer.h"

namespace pipec {

/// The file name of shard `index` of `count`. Throws DataError (InvalidArgument) for a pattern with
/// more than one '*' or an index out of range.
std::string shard_file_name(std::string_view pattern, int64_t index, int64_t count);

class ShardedTFRecordWriter {
 public:
  ShardedTFRecordWriter(std::string pattern, int64_t num_shards, TFRecordWriterOptions options = {});

  /// Writes to the next shard in round-robin order.
  void write(std::string_view record);
  /// Writes to a chosen shard (e.g. by a hash of a key).
  void write_to(int64_t shard, std::string_view record);
  /// Closes every shard; on failure, the shards not yet moved into place are removed.
  void close();
  /// Removes every shard not yet closed.
  void abort() noexcept;

  int64_t num_shards() const { return static_cast<int64_t>(writers_.size()); }
  /// Final file names, in shard order.
  std::vector<std::string> paths() const;
  int64_t records_written() const { return records_; }

 private:
  std::vector<std::unique_ptr<TFRecordWriter>> writers_;
  int64_t next_ = 0;
  int64_t records_ = 0;
};

}  // namespace pipec
