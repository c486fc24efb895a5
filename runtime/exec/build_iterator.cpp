// Plan stage -> iterator. Stages that re-create their input (repeat, cache) build it themselves.
#include "runtime/exec/stage_factories.h"

namespace pipec {

std::unique_ptr<ChunkIterator> build_iterator(RunContext& ctx, int stage, int64_t epoch) {
  const Stage& s = ctx.plan->stages.at(stage);
  // Every stage kind has a case: a kind added to runtime/plan/stages.def makes the compiler point here.
  switch (s.kind) {
    case StageKind::Tfrecord: {
      // parallel_reads = N: tf.data's TFRecordDataset(num_parallel_reads = N), an interleave of N files,
      // one record from each in turn, with the N files read concurrently. `auto` (the default) keeps
      // reading one file after another, so the order never depends on the machine's core count; the
      // autotuner decides whether that file is read on a thread of its own (with more than two threads:
      // with two, the thread that pulls the pipeline and one pool worker already fill them, and a
      // reader's hand-offs only cost: on 2 cores the chess benchmark spent 14 ms more CPU over its
      // first 400 batches, until the tuner's first decision moved the file back inline).
      const Value* pr = s.arg("parallel_reads");
      if (pr && pr->kind == Value::Int && pr->i > 1)
        return make_tfrecord_source(ctx, stage, epoch, pr->i, 1, {pr->i, false, pr->i});
      if (pr && pr->kind == Value::Int) return make_tfrecord_source(ctx, stage, epoch, 1, 1, {0, false, 0});
      if (ctx.threads > 2) return make_tfrecord_source(ctx, stage, epoch, 1, 1, {1, true, 1});
      return make_tfrecord_source(ctx, stage, epoch, 1, 1,
                                  {0, false, 0,
                                   ctx.threads > 1 ? "two threads: files are read on the thread that parses them"
                                                   : "one thread: files are read on the thread that parses them"});
    }
    case StageKind::Range: return make_range_source(ctx, stage, epoch);
    case StageKind::Files:
    case StageKind::ListFiles: return make_files_source(ctx, stage, epoch);
    case StageKind::Csv: return make_csv_source(ctx, stage, epoch);
    case StageKind::Npy: return make_npy_source(ctx, stage, epoch);
    case StageKind::TextLines: return make_text_lines_source(ctx, stage, epoch);
    case StageKind::FixedLengthRecords: return make_fixed_length_records_source(ctx, stage, epoch);
    case StageKind::Zip: {
      std::vector<IteratorPtr> inputs;
      for (int in : s.inputs) inputs.push_back(build_iterator(ctx, in, epoch));
      return make_zip(ctx, stage, epoch, std::move(inputs));
    }
    case StageKind::Concatenate: return make_concatenate(ctx, stage, epoch);
    case StageKind::ChooseFrom: {
      std::vector<IteratorPtr> inputs;
      for (int in : s.inputs) inputs.push_back(build_iterator(ctx, in, epoch));
      return make_choose_from(ctx, stage, epoch, std::move(inputs));
    }
    case StageKind::SampleFrom: return make_sample_from(ctx, stage, epoch);
    case StageKind::Enumerate: return make_enumerate(ctx, stage, build_iterator(ctx, s.inputs.at(0), epoch));
    case StageKind::Repeat: return make_repeat(ctx, stage, epoch);
    case StageKind::ShuffleRepeat: return make_shuffle_repeat(ctx, stage, epoch);
    case StageKind::Cache: return make_cache(ctx, stage, epoch);
    case StageKind::Interleave: {
      // Interleaving applies to the files of the source right before it.
      const Stage& src = ctx.plan->stages.at(s.inputs.at(0));
      if (src.kind != StageKind::Tfrecord) throw StageError(s, "interleave must follow a tfrecord source");
      // cycle_length = auto is the run's thread count, fixed when the run starts (it decides the order).
      int64_t cycle = ctx.threads > 0 ? ctx.threads : 1;
      const Value* cl = s.arg("cycle_length");
      const bool fixed = cl && cl->kind == Value::Int;
      if (fixed) cycle = cl->i;
      int64_t block = 1;
      if (const Value* v = s.arg("block_length")) block = v->i;
      // Several files open at once: read them concurrently (the order stays the interleave's); with
      // cycle_length = auto the autotuner decides how many.
      const int64_t ahead = cycle > 1 && ctx.threads != 1 ? cycle : 0;
      return make_tfrecord_source(
          ctx, s.inputs[0], epoch, cycle, block,
          {ahead, !fixed && ahead > 0, ahead,
           ctx.threads == 1 ? "one thread: files are read on the thread that parses them"
                            : (cycle <= 1 ? "a cycle of one file is read on the thread that parses it" : nullptr)});
    }
    case StageKind::FlatMap: return make_flat_map(ctx, stage, epoch, build_iterator(ctx, s.inputs.at(0), epoch));
    case StageKind::Map: {
      IteratorPtr input = build_iterator(ctx, s.inputs.at(0), epoch);
      if (ctx.gpu && ctx.plan->stages.at(s.inputs.at(0)).element.on_gpu)
        if (IteratorPtr g = make_gpu_map(ctx, stage, input)) return g;
      return make_map(ctx, stage, std::move(input));
    }
    case StageKind::Filter:
    case StageKind::MapFilter: return make_filter(ctx, stage, build_iterator(ctx, s.inputs.at(0), epoch));
    case StageKind::MapBatch: return make_map_batch(ctx, stage, build_iterator(ctx, s.inputs.at(0), epoch));
    case StageKind::Batch: return make_batch(ctx, stage, build_iterator(ctx, s.inputs.at(0), epoch), false);
    case StageKind::PaddedBatch: return make_batch(ctx, stage, build_iterator(ctx, s.inputs.at(0), epoch), true);
    case StageKind::Window: return make_window(ctx, stage, build_iterator(ctx, s.inputs.at(0), epoch));
    case StageKind::GroupByWindow: return make_group_by_window(ctx, stage, build_iterator(ctx, s.inputs.at(0), epoch));
    case StageKind::RejectionResample: return make_rejection_resample(ctx, stage, epoch);
    case StageKind::Pack: return make_pack(ctx, stage, build_iterator(ctx, s.inputs.at(0), epoch));
    case StageKind::BucketByLength:
      return make_bucket_by_length(ctx, stage, build_iterator(ctx, s.inputs.at(0), epoch));
    case StageKind::Rebatch: return make_rebatch(ctx, stage, build_iterator(ctx, s.inputs.at(0), epoch));
    case StageKind::Scan: return make_scan(ctx, stage, build_iterator(ctx, s.inputs.at(0), epoch));
    case StageKind::Unbatch: return make_unbatch(ctx, stage, build_iterator(ctx, s.inputs.at(0), epoch));
    case StageKind::Shuffle: return make_shuffle(ctx, stage, epoch, build_iterator(ctx, s.inputs.at(0), epoch));
    case StageKind::Take:
    case StageKind::Skip:
    case StageKind::Shard: return make_take_skip_shard(ctx, stage, build_iterator(ctx, s.inputs.at(0), epoch));
    case StageKind::Prefetch: return make_prefetch(ctx, stage, build_iterator(ctx, s.inputs.at(0), epoch));
    case StageKind::IgnoreErrors:
    case StageKind::To: return make_passthrough(ctx, stage, build_iterator(ctx, s.inputs.at(0), epoch));
    case StageKind::Write: {
      const Value* f = s.arg("format");
      const bool files = f && f->kind == Value::List && !f->items.empty() && f->items[0].s == "files";
      IteratorPtr input = build_iterator(ctx, s.inputs.at(0), epoch);
      return files ? make_write_files(ctx, stage, std::move(input)) : make_write(ctx, stage, std::move(input));
    }
  }
  throw StageError(s, "this stage cannot run yet");
}

}  // namespace pipec
