// Constructors of the per-stage iterators, one file each; build_iterator() picks among them.
#pragma once

#include <memory>

#include "runtime/exec/iterator.h"

namespace pipec {

using IteratorPtr = std::unique_ptr<ChunkIterator>;

/// How many of a tfrecord source's open files are read on threads of their own (parallel reads): the
/// first `readers` slots of its cycle; `tunable` lets the autotuner move it in [0, most].
struct ReadAhead {
  int64_t readers = 0;
  bool tunable = false;
  int64_t most = 0;
  const char* fixed_reason = nullptr;  // why it is fixed, when the spec does not fix it
};
/// cycle_length files are interleaved block_length records at a time; files read ahead are read on
/// threads of their own, in the same order.
IteratorPtr make_tfrecord_source(RunContext& ctx, int stage, int64_t epoch, int64_t cycle_length, int64_t block_length,
                                 const ReadAhead& read_ahead);
IteratorPtr make_range_source(RunContext& ctx, int stage, int64_t epoch);
IteratorPtr make_files_source(RunContext& ctx, int stage, int64_t epoch);
IteratorPtr make_csv_source(RunContext& ctx, int stage, int64_t epoch);
IteratorPtr make_npy_source(RunContext& ctx, int stage, int64_t epoch);
IteratorPtr make_text_lines_source(RunContext& ctx, int stage, int64_t epoch);
IteratorPtr make_fixed_length_records_source(RunContext& ctx, int stage, int64_t epoch);
IteratorPtr make_zip(RunContext& ctx, int stage, int64_t epoch, std::vector<IteratorPtr> inputs);
/// Builds each input when the one before it ends.
IteratorPtr make_concatenate(RunContext& ctx, int stage, int64_t epoch);
/// `inputs`: the datasets, then the index pipeline.
IteratorPtr make_choose_from(RunContext& ctx, int stage, int64_t epoch, std::vector<IteratorPtr> inputs);
/// Builds the datasets of weight > 0.
IteratorPtr make_sample_from(RunContext& ctx, int stage, int64_t epoch);
IteratorPtr make_enumerate(RunContext& ctx, int stage, IteratorPtr input);
/// flat_map and interleave with a function: each element of `input` becomes the stage's inner pipeline.
IteratorPtr make_flat_map(RunContext& ctx, int stage, int64_t epoch, IteratorPtr input);
IteratorPtr make_map(RunContext& ctx, int stage, IteratorPtr input);
/// The map on the GPU when ctx.gpu is set and the stage has a kernel; null (input untouched, a warning
/// recorded) when it must run on the CPU instead. Throws StageError when ctx.gpu_required.
IteratorPtr make_gpu_map(RunContext& ctx, int stage, IteratorPtr& input);
IteratorPtr make_filter(RunContext& ctx, int stage, IteratorPtr input);
/// map(f) | batch(n) fused (compiler/passes/map_batch_fusion.h): the workers write results into the batches.
IteratorPtr make_map_batch(RunContext& ctx, int stage, IteratorPtr input);
IteratorPtr make_batch(RunContext& ctx, int stage, IteratorPtr input, bool padded);
IteratorPtr make_window(RunContext& ctx, int stage, IteratorPtr input);
IteratorPtr make_group_by_window(RunContext& ctx, int stage, IteratorPtr input);
/// Builds its own passes over the input (tf.data's branches each read it anew).
IteratorPtr make_rejection_resample(RunContext& ctx, int stage, int64_t epoch);
IteratorPtr make_pack(RunContext& ctx, int stage, IteratorPtr input);
IteratorPtr make_bucket_by_length(RunContext& ctx, int stage, IteratorPtr input);
/// unbatch | batch(size, drop_remainder) in one stage (tf.data's rebatch).
IteratorPtr make_rebatch(RunContext& ctx, int stage, IteratorPtr input);
/// Runs its function element by element, the state carried from one to the next.
IteratorPtr make_scan(RunContext& ctx, int stage, IteratorPtr input);
IteratorPtr make_unbatch(RunContext& ctx, int stage, IteratorPtr input);
IteratorPtr make_shuffle(RunContext& ctx, int stage, int64_t epoch, IteratorPtr input);
/// shuffle(...) | repeat(count) fused (compiler/passes/shuffle_repeat_fusion.h): one iterator for every epoch.
IteratorPtr make_shuffle_repeat(RunContext& ctx, int stage, int64_t epoch);
IteratorPtr make_repeat(RunContext& ctx, int stage, int64_t epoch);
IteratorPtr make_take_skip_shard(RunContext& ctx, int stage, IteratorPtr input);
IteratorPtr make_cache(RunContext& ctx, int stage, int64_t epoch);
IteratorPtr make_prefetch(RunContext& ctx, int stage, IteratorPtr input);
IteratorPtr make_passthrough(RunContext& ctx, int stage, IteratorPtr input);
IteratorPtr make_write(RunContext& ctx, int stage, IteratorPtr input);
IteratorPtr make_write_files(RunContext& ctx, int stage, IteratorPtr input);

}  // namespace pipec
