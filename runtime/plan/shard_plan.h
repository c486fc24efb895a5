// Sharding a plan by elements for one of several readers: what `pipe_options.shard_count/shard_index`
// do, and what multi_worker's automatic sharding does when it cannot go by files (runtime/exec/auto_shard.h).
#pragma once

#include <cstdint>

#include "runtime/plan/plan.h"

namespace pipec {

/// `plan` with a `shard(count, index)` stage right after every source (after the interleave that
/// reads a tfrecord source, since interleave must sit on the source itself), so a reader sees source
/// elements i with i % count == index before any shuffle, map or batch, and zipped sources stay aligned.
/// A choose_from or sample_from counts as a source: it is sharded after, and nothing it reads is.
/// Stage indices after an insertion move; function names ("map@5") follow them. `count` <= 1 returns
/// the plan unchanged. Throws std::invalid_argument when index is not in [0, count).
Plan shard_after_sources(const Plan& plan, int64_t count, int64_t index);

}  // namespace pipec
