// TFRecordReader: reads the records of one TFRecord file (plain, gzip or zlib), checking both CRCs.
//
//   TFRecordReader reader("data/train.tfrecord", {.compression = Compression::Gzip});
//   std::string_view record;
//   while (reader.next(record)) use(record);
//
// Records are returned as views of the reader's buffer (no copy for records that fit in it); a caller
// that keeps them longer holds the buffer (hold_buffer).
// Every problem is a DataError carrying the file, the record index and the byte offset of the
// record's start (in the decompressed stream for gzip/zlib):
//   truncated header / truncated data, length CRC mismatch, data CRC mismatch,
// plus whatever the decompressor reports (e.g. "gzip stream truncated").
// After an error the reader is stuck on it: every later next() throws the same error, so a caller
// that catches and loops cannot spin or read garbage past the damage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/io/compression.h"
#include "runtime/io/errors.h"
#include "runtime/io/input_stream.h"
#include "runtime/io/record_batch.h"

namespace pipec {

struct TFRecordReaderOptions {
  Compression compression = Compression::None;
  /// Checking the data CRC costs a pass over every record; the length CRC is always checked since
  /// a wrong length would desynchronize everything after it.
  bool verify_data_crc = true;
  size_t buffer_size = InputStream::kDefaultBufferSize;
};

class TFRecordReader {
 public:
  explicit TFRecordReader(const std::string& path, TFRecordReaderOptions options = {});
  /// Reads from an already opened (and, if needed, decompressing) stream.
  explicit TFRecordReader(std::unique_ptr<InputStream> stream, TFRecordReaderOptions options = {});

  /// The next record, valid until the next call; false at a clean end of file.
  bool next(std::string_view& record);
  /// Appends up to max_records records to `batch`; returns how many (0 at end of file).
  size_t next_batch(size_t max_records, RecordBatch& batch);

  /// Stops (or restarts) checking the data CRC from the next record on, for a caller that checks the
  /// records later, elsewhere: right after next() returns a record, the 4 bytes that follow it are its
  /// stored CRC (tfrecord::data_crc_matches), and a mismatch is reported as the reader would:
  /// tfrecord::kDataCrcMismatch at the record's index and start (offset() before that next()).
  void set_verify_data_crc(bool verify) { options_.verify_data_crc = verify; }

  /// Keeps the records returned so far valid while the caller holds the pointer, though the reader
  /// reads on (InputStream::hold_buffer). A hold covers every record returned while buffer_data()
  /// stays what it was when the hold was taken.
  std::shared_ptr<const char[]> hold_buffer() const { return stream_->hold_buffer(); }
  const char* buffer_data() const { return stream_->buffer_data(); }

  /// Records returned so far (= the index of the next record).
  int64_t records_read() const { return index_; }
  /// Offset of the next record's header (decompressed bytes for gzip/zlib).
  uint64_t offset() const { return stream_->offset(); }
  const std::string& path() const { return stream_->name(); }

 private:
  bool read_one(std::string_view& record);
  [[noreturn]] void fail(uint64_t record_start, std::string reason);
  [[noreturn]] void fail_with(const DataError& error, uint64_t record_start);

  std::unique_ptr<InputStream> stream_;
  TFRecordReaderOptions options_;
  int64_t index_ = 0;
  std::exception_ptr error_;
};

}  // namespace pipec
