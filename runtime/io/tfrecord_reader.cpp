#include "runtime/io/tfrecord_reader.h"

#include <fmt/format.h>

#include "runtime/io/tfrecord_format.h"

namespace pipec {

TFRecordReader::TFRecordReader(const std::string& path, TFRecordReaderOptions options)
    : TFRecordReader(open_input_stream(path, options.compression, options.buffer_size), options) {}

TFRecordReader::TFRecordReader(std::unique_ptr<InputStream> stream, TFRecordReaderOptions options)
    : stream_(std::move(stream)), options_(options) {}

void TFRecordReader::fail(uint64_t record_start, std::string reason) {
  fail_with(DataError(DataError::Kind::DataLoss, std::move(reason)), record_start);
}

void TFRecordReader::fail_with(const DataError& error, uint64_t record_start) {
  // Errors from below (a truncated gzip stream, a failed read) know the file and where the bytes
  // ran out; the reader adds which record that broke, located at the record's start.
  DataLocation where{.file = stream_->name(),
                     .record = index_,
                     .offset = static_cast<int64_t>(record_start),
                     .uncompressed_offset = stream_->compression() != Compression::None};
  error_ = std::make_exception_ptr(error.with_location(std::move(where)));
  std::rethrow_exception(error_);
}

bool TFRecordReader::next(std::string_view& record) {
  if (error_) std::rethrow_exception(error_);
  const uint64_t start = stream_->offset();
  try {
    return read_one(record);
  } catch (const DataError& e) {
    if (error_) throw;  // already located by fail()
    fail_with(e, start);
  }
}

bool TFRecordReader::read_one(std::string_view& record) {
  using namespace tfrecord;
  const uint64_t start = stream_->offset();
  std::string_view header = stream_->peek(kHeaderSize);
  if (header.empty()) return false;  // a clean end: the last record ended exactly at end of file
  if (header.size() < kHeaderSize)
    fail(start, fmt::format("truncated record header: the file ends {} bytes into the {}-byte header", header.size(),
                            kHeaderSize));
  const uint64_t length = load_le64(header.data());
  if (crc32c_masked(header.data(), 8) != load_le32(header.data() + 8))
    fail(start, "length CRC mismatch (corrupt record header)");
  if (length > kMaxRecordLength)
    fail(start, fmt::format("record length {} is implausible (corrupt record header)", length));

  const size_t total = kHeaderSize + static_cast<size_t>(length) + kFooterSize;
  std::string_view framed = stream_->peek(total);
  if (framed.size() < total) {
    size_t have = framed.size() - kHeaderSize;
    if (have < length)
      fail(start, fmt::format("truncated record: the file ends {} bytes into its {} data bytes", have, length));
    fail(start,
         fmt::format("truncated record: the file ends {} bytes into the {}-byte data CRC", have - length, kFooterSize));
  }
  std::string_view data = framed.substr(kHeaderSize, static_cast<size_t>(length));
  if (options_.verify_data_crc && !data_crc_matches(data, load_le32(data.data() + data.size())))
    fail(start, kDataCrcMismatch);
  stream_->consume(total);
  ++index_;
  record = data;
  return true;
}

size_t TFRecordReader::next_batch(size_t max_records, RecordBatch& batch) {
  size_t n = 0;
  std::string_view record;
  while (n < max_records && next(record)) {
    batch.append(record);
    ++n;
  }
  return n;
}

}  // namespace pipec
