// ReadAheadReader: a TFRecordReader whose file is read on a thread of its own, a block of records
// ahead of the consumer.
//
// For parallel reads: the tfrecord source keeps one per file in its interleave cycle, so N files are
// read, framed and CRC-checked concurrently while the source still takes records in the exact
// interleave order (tf.data's deterministic parallel interleave). Blocks are recycled between the
// thread and the consumer, so steady state allocates nothing.
//
// Errors keep their place: the records before a damaged one are delivered first, then next() throws
// the reader's DataError, exactly where the sequential reader would.
#pragma once

#include <exception>
#include <memory>
#include <string_view>
#include <thread>

#include "runtime/exec/stage_stats.h"
#include "runtime/io/record_batch.h"
#include "runtime/io/tfrecord_reader.h"
#include "runtime/threads/bounded_queue.h"
#include "runtime/threads/cancellation.h"

namespace pipec {

class ReadAheadReader {
 public:
  /// Starts reading `reader` at once. `cancel` (may be null) stops the thread early too. The time the
  /// thread spends reading is added to `stats` (may be null) as the stage's task time.
  ReadAheadReader(std::unique_ptr<TFRecordReader> reader, const CancellationToken* cancel, StageStats* stats = nullptr);
  ~ReadAheadReader();
  ReadAheadReader(const ReadAheadReader&) = delete;
  ReadAheadReader& operator=(const ReadAheadReader&) = delete;

  /// The next record, valid until the next call; false at the end of the file. Throws the reader's
  /// DataError at the record where it happened.
  bool next(std::string_view& record);

  /// Records per block and bytes per block, whichever fills first.
  static constexpr size_t kBlockRecords = 256;
  static constexpr size_t kBlockBytes = size_t(256) << 10;
  /// The most one reader holds: its full queue, its free list and the block being read.
  static constexpr size_t kMostBytes = 7 * kBlockBytes;

 private:
  struct Block {
    RecordBatch records;
    bool end = false;
    std::exception_ptr error;
  };
  void run();

  std::unique_ptr<TFRecordReader> reader_;
  StageStats* stats_;
  CancellationToken stop_;
  BoundedQueue<std::unique_ptr<Block>> full_{2};
  BoundedQueue<std::unique_ptr<Block>> free_{4};
  std::unique_ptr<Block> current_;
  size_t pos_ = 0;
  std::thread thread_;
};

}  // namespace pipec
