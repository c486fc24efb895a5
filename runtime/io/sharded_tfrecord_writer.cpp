#include "runtime/io/sharded_tfrecord_writer.h"

#include <algorithm>

#include <fmt/format.h>

#include "runtime/io/errors.h"

namespace pipec {

std::string shard_file_name(std::string_view pattern, int64_t index, int64_t count) {
  if (count < 1 || index < 0 || index >= count)
    throw DataError(DataError::Kind::InvalidArgument, fmt::format("shard {} of {} is out of range", index, count),
                    DataLocation{.file = std::string(pattern)});
  size_t star = pattern.find('*');
  if (star != std::string_view::npos && pattern.find('*', star + 1) != std::string_view::npos)
    throw DataError(DataError::Kind::InvalidArgument, "a shard pattern may contain at most one '*'",
                    DataLocation{.file = std::string(pattern)});
  // Both numbers use the same width so names sort in shard order even past 99999 shards.
  int width = std::max<int>(5, static_cast<int>(fmt::formatted_size("{}", count)));
  std::string tag = fmt::format("{:0{}}-of-{:0{}}", index, width, count, width);
  if (star == std::string_view::npos) return fmt::format("{}-{}", pattern, tag);
  return fmt::format("{}{}{}", pattern.substr(0, star), tag, pattern.substr(star + 1));
}

ShardedTFRecordWriter::ShardedTFRecordWriter(std::string pattern, int64_t num_shards, TFRecordWriterOptions options) {
  if (num_shards < 1)
    throw DataError(DataError::Kind::InvalidArgument,
                    fmt::format("the number of shards must be at least 1, not {}", num_shards),
                    DataLocation{.file = pattern});
  writers_.reserve(static_cast<size_t>(num_shards));
  // If opening shard k fails, the writers already made are destroyed and delete their .tmp files.
  for (int64_t i = 0; i < num_shards; ++i)
    writers_.push_back(std::make_unique<TFRecordWriter>(shard_file_name(pattern, i, num_shards), options));
}

void ShardedTFRecordWriter::write(std::string_view record) {
  writers_[static_cast<size_t>(next_)]->write(record);
  next_ = next_ + 1 == num_shards() ? 0 : next_ + 1;
  ++records_;
}

void ShardedTFRecordWriter::write_to(int64_t shard, std::string_view record) {
  if (shard < 0 || shard >= num_shards())
    throw DataError(DataError::Kind::InvalidArgument,
                    fmt::format("shard {} is out of range (there are {})", shard, num_shards()));
  writers_[static_cast<size_t>(shard)]->write(record);
  ++records_;
}

void ShardedTFRecordWriter::close() {
  try {
    for (auto& w : writers_) w->close();
  } catch (...) {
    abort();
    throw;
  }
}

void ShardedTFRecordWriter::abort() noexcept {
  for (auto& w : writers_) w->abort();
}

std::vector<std::string> ShardedTFRecordWriter::paths() const {
  std::vector<std::string> out;
  for (const auto& w : writers_) out.push_back(w->path());
  return out;
}

}  // namespace pipec
