#include "runtime/exec/sources/file_sequence.h"

#include <algorithm>

#include "runtime/exec/file_shard.h"
#include "runtime/io/errors.h"
#include "runtime/io/file_glob.h"

namespace pipec {

FileSequence::FileSequence(const RunContext& ctx, const Stage& s, const std::string& pattern) {
  files_ = files_of_shard(expand_glob(ctx.resolve_path(pattern)), s);
  if (const Value* c = s.arg("compression")) compression_ = parse_compression(c->s).value_or(Compression::None);
}

InputStream* FileSequence::current() {
  if (index_ >= files_.size()) return nullptr;
  if (!stream_) {
    stream_ = open_input_stream(files_[index_], compression_);
    // Past what a checkpoint says was consumed: compressed streams have to be read there.
    while (skip_ > 0) {
      const std::string_view some = stream_->peek_some();
      if (some.empty())
        throw DataError(
            DataError::Kind::DataLoss, "the file is shorter than when the checkpoint was saved",
            {files_[index_], -1, static_cast<int64_t>(stream_->offset()), compression_ != Compression::None});
      const size_t n = static_cast<size_t>(std::min<uint64_t>(skip_, some.size()));
      stream_->consume(n);
      skip_ -= n;
    }
  }
  return stream_.get();
}

void FileSequence::next_file() {
  stream_.reset();
  skip_ = 0;
  if (index_ < files_.size()) ++index_;
}

void FileSequence::save(StateWriter& w) const {
  w.write_u64(index_);
  w.write_u64(stream_ ? stream_->offset() : skip_);
}

void FileSequence::restore(StateReader& r) {
  index_ = r.read_u64();
  skip_ = r.read_u64();
  stream_.reset();
  if (index_ > files_.size()) throw r.error("the state names a file the pattern no longer matches");
}

}  // namespace pipec
