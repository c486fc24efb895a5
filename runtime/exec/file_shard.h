// A source's share of its files when multi_worker shards a pipeline by files (runtime/exec/auto_shard.h).
//
// auto_shard gives every source that reads a list of files (tfrecord, files, list_files) the argument
// `file_shard = [num_shards, index]`. The source keeps the files i of its sorted list with
// i % num_shards == index, before shuffle_files / shuffle reorders them: which files a worker reads then
// depends only on the list, never on a seed, so the workers' shares cannot overlap.
#pragma once

#include <string>
#include <vector>

#include "runtime/plan/plan.h"

namespace pipec {

inline constexpr const char* kFileShardArg = "file_shard";

/// The file pattern of a source that reads a list of files: tfrecord's, text_lines' and
/// fixed_length_records' `files`, files' and list_files' `pattern`. Null for every other stage (csv and
/// npy read one file each).
const Value* file_list_pattern(const Stage& s);

/// `file_shard = [num_shards, index]`.
Value file_shard_value(int64_t num_shards, int64_t index);

/// How many of `files` files the share `index` of `num_shards` holds.
int64_t files_in_share(int64_t files, int64_t num_shards, int64_t index);

/// `files` (sorted, as expand_glob returns them) cut to the share that `s`'s file_shard names; all of
/// them when it has none.
std::vector<std::string> files_of_shard(std::vector<std::string> files, const Stage& s);

}  // namespace pipec
