// multi_worker's automatic sharding: the plan that worker `index` of `workers` runs, chosen as tf.data's
// AutoShardPolicy.AUTO chooses (by files when it can, else by elements).
//
// - By files, when every source reads a list of files (tfrecord, files, list_files) matching at least
//   `workers` files, no zip joins tfrecord sources and no choose_from picks among datasets: each such
//   source gets `file_shard = [workers, index]` (runtime/exec/file_shard.h), so worker i reads files
//   i, i+N, ... of each sorted list and never opens another worker's files. A zip of tfrecord sources is
//   left to the elements because two files need not hold as many records, and the zipped shares would
//   no longer line up; a choose_from because its choices are made by position.
// - Else by elements: `shard(workers, index)` after every source (shard_after_sources), before any
//   shuffle or map, so zipped sources stay aligned.
// Either way an element reaches at most one worker per epoch, and the workers together see every one.
// A cache file then holds one worker's share: its path gets ".worker-I-of-N", so that no other worker
// (nor an unsharded run) replays it.
//
// The batch: the batch (or padded_batch) nearest the output, on each path to it, becomes batch(B / N),
// so N workers together step on the global batch B. A B that N does not divide is a ShardError at the
// batch's place in the spec. The batch's dimension in the element types after it changes with it; a
// map or filter after a batch of fixed size B is a ShardError (its compiled shapes say B).
//
// It changes what the pipeline yields, so it is no optimization: compile() applies it right after
// lowering, before any pass, at every -O level (CompileOptions::shard).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "runtime/plan/plan.h"

namespace pipec {

enum class ShardPolicy {
  Unsharded,   // one worker: the plan as it was
  ByFiles,     // each file-list source reads its share of the files
  ByElements,  // shard(workers, index) after every source
};

/// What auto_shard did, for the run's summary and `pipec explain --workers`.
struct ShardReport {
  ShardPolicy policy = ShardPolicy::Unsharded;
  int64_t workers = 1;
  int64_t index = 0;
  /// The files the sources match, all sources together (0 when no source reads a list of files).
  int64_t files = 0;
  /// ByFiles: the files this worker reads.
  int64_t worker_files = 0;
  /// The divided batch's size as written (the global batch), and each worker's; 0 when nothing is batched.
  int64_t global_batch = 0;
  int64_t worker_batch = 0;
  /// One line: "sharded by files: 8 files over 2 workers, worker 0 reads 4; batch 512 is 256 per worker".
  std::string description;
};

struct AutoShard {
  Plan plan;  // the plan worker `index` runs
  ShardReport report;
};

/// A pipeline that cannot be sharded as asked: the batch does not divide among the workers, or a map
/// after a batch of fixed size would see another size. what() is the message; loc() where in the spec.
class ShardError : public std::runtime_error {
 public:
  ShardError(SpecLoc loc, const std::string& message) : std::runtime_error(message), loc_(std::move(loc)) {}
  const SpecLoc& loc() const { return loc_; }
  /// "spec.pipe:12:5: error: ..." (without the place when the stage has none).
  std::string diagnostic() const;

 private:
  SpecLoc loc_;
};

/// The plan worker `index` of `workers` runs, and what was done. `spec_dir` is the folder relative file
/// patterns are read against (the run's spec_dir): the files are counted now to choose the policy.
/// `workers` <= 1 returns the plan unchanged. Throws std::invalid_argument when index is not in
/// [0, workers), ShardError as above.
AutoShard auto_shard(const Plan& plan, int64_t workers, int64_t index, const std::string& spec_dir = "");

}  // namespace pipec
