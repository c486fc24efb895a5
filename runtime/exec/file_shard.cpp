#include "runtime/exec/file_shard.h"

#include <stdexcept>

#include <fmt/format.h>

namespace pipec {

const Value* file_list_pattern(const Stage& s) {
  switch (s.kind) {
    case StageKind::Tfrecord:
    case StageKind::TextLines:
    case StageKind::FixedLengthRecords: return s.arg("files");
    case StageKind::Files:
    case StageKind::ListFiles: return s.arg("pattern");
    default: return nullptr;
  }
}

Value file_shard_value(int64_t num_shards, int64_t index) {
  return Value::make_list({Value::make_int(num_shards), Value::make_int(index)});
}

int64_t files_in_share(int64_t files, int64_t num_shards, int64_t index) {
  return files > index ? (files - index - 1) / num_shards + 1 : 0;
}

std::vector<std::string> files_of_shard(std::vector<std::string> files, const Stage& s) {
  const Value* shard = s.arg(kFileShardArg);
  if (!shard) return files;
  const bool pair = shard->kind == Value::List && shard->items.size() == 2;
  const int64_t n = pair ? shard->items[0].i : 0, index = pair ? shard->items[1].i : -1;
  if (n < 1 || index < 0 || index >= n)
    throw std::invalid_argument(fmt::format("{} = {} is not [num_shards, index] with 0 <= index < num_shards",
                                            kFileShardArg, shard->to_string()));
  std::vector<std::string> mine;
  for (size_t i = static_cast<size_t>(index); i < files.size(); i += static_cast<size_t>(n))
    mine.push_back(std::move(files[i]));
  return mine;
}

}  // namespace pipec
