// fixed_length_records(files, record_bytes, header_bytes, footer_bytes, compression): tf.data's
// FixedLengthRecordDataset: each file is `header_bytes`, then records of `record_bytes` each, then
// `footer_bytes`; one element {record: u8[record_bytes]} per record (tf.data's string record through
// `tf.io.decode_raw(record, tf.uint8)`), in the sorted order of the files. A body that
// is not a whole number of records is an error naming the file, as in TensorFlow: found when the file
// opens for an uncompressed file (its size tells), at its end for a compressed one.
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/exec/sources/file_sequence.h"
#include "runtime/exec/stage_factories.h"
#include "runtime/io/errors.h"

namespace pipec {

namespace {

class FixedLengthRecordsSource : public ChunkIterator {
 public:
  FixedLengthRecordsSource(RunContext& ctx, int stage, int64_t epoch) try
      : ChunkIterator(ctx, stage), epoch_(epoch), files_(ctx, spec(), spec().arg("files")->s) {
    const Stage& s = spec();
    record_ = static_cast<uint64_t>(s.arg("record_bytes")->i);
    if (const Value* v = s.arg("header_bytes")) header_ = static_cast<uint64_t>(v->i);
    if (const Value* v = s.arg("footer_bytes")) footer_ = static_cast<uint64_t>(v->i);
    const Value* c = s.arg("compression");
    compressed_ = c && c->s != "none";
  } catch (const DataError& e) {
    throw StageError(ctx.plan->stages.at(stage), e);
  }

  // The file and the bytes of it consumed: the header and whole records (the record index follows).
  void save(StateWriter& w) const override {
    w.write_i64(produced_);
    w.write_i64(record_in_file_);
    w.write_u32(opened_ ? 1 : 0);
    files_.save(w);
  }
  void restore(StateReader& r) override {
    produced_ = r.read_i64();
    record_in_file_ = r.read_i64();
    opened_ = r.read_u32() != 0;
    files_.restore(r);
  }

 protected:
  bool produce(Chunk& out) override {
    std::string bytes;  // the records, one after another
    int64_t n = 0;
    try {
      while (n < ctx_.chunk_rows && next_record(bytes)) ++n;
    } catch (const DataError& e) {
      throw StageError(spec(), e);
    }
    if (n == 0) return false;
    Tensor records = Tensor::empty(DType::U8, {n, static_cast<int64_t>(record_)});
    if (!bytes.empty()) std::memcpy(records.raw(), bytes.data(), bytes.size());
    out = Chunk{};
    out.rows = n;
    out.columns.push_back(Column{false, std::move(records), {}});
    out.first_index = produced_;
    out.epoch = epoch_;
    produced_ += n;
    return true;
  }

 private:
  std::string not_whole(uint64_t body) const {
    return fmt::format(
        "after the header ({} bytes) and before the footer ({} bytes) the file has {} bytes, which is not a "
        "whole number of records of {} bytes",
        header_, footer_, body, record_);
  }

  // Opens the current file: checks an uncompressed file's size and reads past the header.
  void open(InputStream& in) {
    if (!compressed_) {
      std::error_code ec;
      const uint64_t size = std::filesystem::file_size(files_.path(), ec);
      if (!ec && (size < header_ + footer_ || (size - header_ - footer_) % record_ != 0))
        throw DataError(DataError::Kind::InvalidArgument,
                        size < header_ + footer_
                            ? fmt::format("the file has {} bytes, fewer than its header ({}) and footer ({})", size,
                                          header_, footer_)
                            : not_whole(size - header_ - footer_),
                        {files_.path()});
    }
    const std::string_view header = in.peek(static_cast<size_t>(header_));
    if (header.size() < header_)
      throw DataError(DataError::Kind::InvalidArgument,
                      fmt::format("the file has {} bytes, fewer than its header ({})", header.size(), header_),
                      {files_.path(), -1, -1, compressed_});
    in.consume(header.size());
    opened_ = true;
    record_in_file_ = 0;
  }

  // Appends the next record of the files to `bytes`; false after the last.
  bool next_record(std::string& bytes) {
    while (InputStream* in = files_.current()) {
      if (!opened_) open(*in);
      // A record only when a footer's worth of bytes follows it: the last bytes are the footer.
      const std::string_view ahead = in->peek(static_cast<size_t>(record_ + footer_));
      if (ahead.size() == record_ + footer_) {
        bytes.append(ahead.substr(0, static_cast<size_t>(record_)));
        in->consume(static_cast<size_t>(record_));
        ++record_in_file_;
        return true;
      }
      if (ahead.size() != footer_) {
        const uint64_t body = static_cast<uint64_t>(record_in_file_) * record_ + ahead.size();
        throw DataError(
            DataError::Kind::DataLoss,
            ahead.size() < footer_
                ? fmt::format("the file's last {} bytes are fewer than its footer ({} bytes)", ahead.size(), footer_)
                : not_whole(body - footer_),
            {files_.path(), record_in_file_, static_cast<int64_t>(in->offset()), compressed_});
      }
      files_.next_file();
      opened_ = false;
    }
    return false;
  }

  int64_t epoch_;
  FileSequence files_;
  uint64_t record_ = 1, header_ = 0, footer_ = 0;
  bool compressed_ = false;
  bool opened_ = false;         // the current file's header is read
  int64_t record_in_file_ = 0;  // records of the current file read so far
};

}  // namespace

IteratorPtr make_fixed_length_records_source(RunContext& ctx, int stage, int64_t epoch) {
  return std::make_unique<FixedLengthRecordsSource>(ctx, stage, epoch);
}

}  // namespace pipec
