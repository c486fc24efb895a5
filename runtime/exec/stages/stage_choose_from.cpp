// choose_from([a, b, ...], index, stop_on_empty): element i is the next element of the dataset that
// element i of the index pipeline names (tf.data's choose_from_datasets); the rest is the directed
// interleave both mixing stages share (directed_interleave.h).
#include <fmt/format.h>

#include "runtime/exec/stages/directed_interleave.h"

namespace pipec {

namespace {

bool stop_on_empty(const Stage& s) {
  const Value* v = s.arg("stop_on_empty");
  return v ? v->b : true;
}

class ChooseFrom : public DirectedInterleave {
 public:
  // `inputs`: the datasets, then the index pipeline.
  ChooseFrom(RunContext& ctx, int stage, int64_t epoch, std::vector<IteratorPtr> inputs, IteratorPtr index)
      : DirectedInterleave(ctx, stage, epoch, std::move(inputs), stop_on_empty(ctx.plan->stages.at(stage))),
        index_(std::move(index)) {}

 protected:
  std::optional<int64_t> next_choice(int64_t choice) override {
    while (index_offset_ >= index_pending_.rows) {
      if (!pull(*index_, index_pending_)) return std::nullopt;
      index_offset_ = 0;
    }
    const Column& col = index_pending_.columns.at(0);
    const int64_t k = col.ragged ? col.rows.at(static_cast<size_t>(index_offset_)).data<int64_t>()[0]
                                 : col.dense.data<int64_t>()[index_offset_];
    ++index_offset_;
    const int64_t n = static_cast<int64_t>(dataset_count());
    if (k < 0 || k >= n)
      throw StageError(spec(), fmt::format("element {} of the index pipeline is {}, which names no dataset: "
                                           "there are {}, so an index must be in [0, {}]",
                                           choice, k, n, n - 1));
    return k;
  }
  // The index pipeline's state and the rest of the chunk pulled from it.
  void save_selector(StateWriter& w) const override {
    index_->save(w);
    save_chunk(w, index_offset_ < index_pending_.rows ? slice_rows(index_pending_, index_offset_, index_pending_.rows)
                                                      : Chunk{});
  }
  void restore_selector(StateReader& r) override {
    index_->restore(r);
    index_pending_ = restore_chunk(r);
    index_offset_ = 0;
    largest_pulled_ = std::max(largest_pulled_, index_pending_.rows);
  }
  int64_t selector_rows() const override { return std::max<int64_t>(0, index_pending_.rows - index_offset_); }
  const ChunkIterator* selector_input() const override { return index_.get(); }

 private:
  IteratorPtr index_;
  Chunk index_pending_;
  int64_t index_offset_ = 0;
};

}  // namespace

IteratorPtr make_choose_from(RunContext& ctx, int stage, int64_t epoch, std::vector<IteratorPtr> inputs) {
  IteratorPtr index = std::move(inputs.back());
  inputs.pop_back();
  return std::make_unique<ChooseFrom>(ctx, stage, epoch, std::move(inputs), std::move(index));
}

}  // namespace pipec
