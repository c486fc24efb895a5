// Plan stage -> iterator. Stages that re-create their input (repeat, cache) build it themselves.
#include "runtime/exec/stage_factories.h"

namespace pipec {

std::unique_ptr<ChunkIterator> build_iterator(RunContext& ctx, int stage, int64_t epoch) {
  const Stage& s = ctx.plan->stages.at(stage);
  const std::string& op = s.op;
  if (op == "tfrecord") {
    // parallel_reads = N: tf.data's TFRecordDataset(num_parallel_reads = N), an interleave of N files,
    // one record from each in turn, with the N files read concurrently. `auto` (the default) keeps
    // reading one file after another, so the order never depends on the machine's core count.
    const Value* pr = s.arg("parallel_reads");
    if (pr && pr->kind == Value::Int && pr->i > 1) return make_tfrecord_source(ctx, stage, epoch, pr->i, 1, true);
    return make_tfrecord_source(ctx, stage, epoch, 1, 1, false);
  }
  if (op == "range") return make_range_source(ctx, stage, epoch);
  if (op == "files" || op == "list_files") return make_files_source(ctx, stage, epoch);
  if (op == "csv") return make_csv_source(ctx, stage, epoch);
  if (op == "npy") return make_npy_source(ctx, stage, epoch);
  if (op == "zip") {
    std::vector<IteratorPtr> inputs;
    for (int in : s.inputs) inputs.push_back(build_iterator(ctx, in, epoch));
    return make_zip(ctx, stage, epoch, std::move(inputs));
  }
  if (op == "repeat") return make_repeat(ctx, stage, epoch);
  if (op == "shuffle_repeat") return make_shuffle_repeat(ctx, stage, epoch);
  if (op == "cache") return make_cache(ctx, stage, epoch);
  if (op == "interleave") {
    // Interleaving applies to the files of the source right before it.
    const Stage& src = ctx.plan->stages.at(s.inputs.at(0));
    if (src.op != "tfrecord") throw StageError(s, "interleave must follow a tfrecord source");
    int64_t cycle = ctx.threads > 0 ? ctx.threads : 1;
    if (const Value* v = s.arg("cycle_length"); v && v->kind == Value::Int) cycle = v->i;
    int64_t block = 1;
    if (const Value* v = s.arg("block_length")) block = v->i;
    // Several files open at once: read them concurrently (the order stays the interleave's).
    return make_tfrecord_source(ctx, s.inputs[0], epoch, cycle, block, cycle > 1 && ctx.threads != 1);
  }
  IteratorPtr input = build_iterator(ctx, s.inputs.at(0), epoch);
  if (op == "map") {
    if (ctx.gpu && ctx.plan->stages.at(s.inputs.at(0)).element.on_gpu)
      if (IteratorPtr g = make_gpu_map(ctx, stage, input)) return g;
    return make_map(ctx, stage, std::move(input));
  }
  if (op == "filter" || op == "map_filter") return make_filter(ctx, stage, std::move(input));
  if (op == "map_batch") return make_map_batch(ctx, stage, std::move(input));
  if (op == "batch") return make_batch(ctx, stage, std::move(input), false);
  if (op == "padded_batch") return make_batch(ctx, stage, std::move(input), true);
  if (op == "unbatch") return make_unbatch(ctx, stage, std::move(input));
  if (op == "shuffle") return make_shuffle(ctx, stage, epoch, std::move(input));
  if (op == "take" || op == "skip" || op == "shard") return make_take_skip_shard(ctx, stage, std::move(input));
  if (op == "prefetch") return make_prefetch(ctx, stage, std::move(input));
  if (op == "ignore_errors" || op == "to") return make_passthrough(ctx, stage, std::move(input));
  if (op == "write") {
    const Value* f = s.arg("format");
    bool files = f && f->kind == Value::List && !f->items.empty() && f->items[0].s == "files";
    return files ? make_write_files(ctx, stage, std::move(input)) : make_write(ctx, stage, std::move(input));
  }
  throw StageError(s, "this stage cannot run yet");
}

}  // namespace pipec
