// choose_from([a, b, ...], index, stop_on_empty): element i is the next element of the dataset that
// element i of the index pipeline names (tf.data's choose_from_datasets). The output ends with the
// index pipeline; when the chosen dataset has ended, it ends too (stop_on_empty, tf.data's default),
// or that index is skipped, and the output ends once every dataset has.
#include <fmt/format.h>

#include <optional>

#include "runtime/exec/chunk_builder.h"
#include "runtime/exec/stage_factories.h"

namespace pipec {

namespace {

class ChooseFrom : public ChunkIterator {
 public:
  ChooseFrom(RunContext& ctx, int stage, int64_t epoch, std::vector<IteratorPtr> inputs)
      : ChunkIterator(ctx, stage), epoch_(epoch), index_(std::move(inputs.back())) {
    inputs.pop_back();
    data_ = std::move(inputs);
    const Stage& s = spec();
    for (size_t k = 0; k < data_.size(); ++k)
      orders_.push_back(field_order(s.element, ctx.plan->stages.at(s.inputs[k]).element));
    pending_.resize(data_.size());
    offset_.assign(data_.size(), 0);
    active_ = static_cast<int64_t>(data_.size());
    if (const Value* v = s.arg("stop_on_empty")) stop_on_empty_ = v->b;
  }

  // Every input's position and the rest of the chunk pulled from it; an ended dataset saves nothing.
  void save(StateWriter& w) const override {
    w.write_i64(produced_);
    w.write_i64(indices_read_);
    w.write_u32(done_ ? 1 : 0);
    index_->save(w);
    save_chunk(w, rest(index_pending_, index_offset_));
    for (size_t k = 0; k < data_.size(); ++k) {
      w.write_u32(data_[k] ? 1 : 0);
      if (!data_[k]) continue;
      data_[k]->save(w);
      save_chunk(w, rest(pending_[k], offset_[k]));
    }
  }
  void restore(StateReader& r) override {
    produced_ = r.read_i64();
    indices_read_ = r.read_i64();
    done_ = r.read_u32() != 0;
    index_->restore(r);
    index_pending_ = restore_chunk(r);
    index_offset_ = 0;
    largest_pulled_ = std::max(largest_pulled_, index_pending_.rows);
    active_ = 0;
    for (size_t k = 0; k < data_.size(); ++k) {
      offset_[k] = 0;
      pending_[k] = Chunk{};
      if (r.read_u32() == 0) {
        data_[k].reset();
        continue;
      }
      ++active_;
      data_[k]->restore(r);
      pending_[k] = restore_chunk(r);
      largest_pulled_ = std::max(largest_pulled_, pending_[k].rows);
    }
  }

  // The rest of one chunk of each input.
  Buffered buffered() const override {
    int64_t rows = std::max<int64_t>(0, index_pending_.rows - index_offset_);
    for (size_t k = 0; k < data_.size(); ++k) rows += std::max<int64_t>(0, pending_[k].rows - offset_[k]);
    return {rows, static_cast<int64_t>(data_.size() + 1) * largest_pulled_};
  }
  std::vector<const ChunkIterator*> inputs() const override {
    std::vector<const ChunkIterator*> out;
    for (const IteratorPtr& in : data_)
      if (in) out.push_back(in.get());
    out.push_back(index_.get());
    return out;
  }

 protected:
  bool produce(Chunk& out) override {
    std::optional<ChunkBuilder> rows;
    while (!done_ && (!rows || !rows->full())) {
      std::optional<int64_t> k = next_index();
      if (!k) {
        done_ = true;
        break;
      }
      if (!data_[static_cast<size_t>(*k)]) continue;  // a dataset that ended (stop_on_empty = false)
      const size_t d = static_cast<size_t>(*k);
      if (!fill(d)) {
        data_[d].reset();
        pending_[d] = Chunk{};
        if (stop_on_empty_ || --active_ == 0) done_ = true;
        continue;
      }
      if (!rows) rows.emplace(pending_[d], ctx_.chunk_rows);
      rows->add_row(pending_[d], offset_[d]++);
    }
    if (!rows || rows->rows() == 0) return false;
    out = rows->finish();
    out.first_index = produced_;
    out.epoch = epoch_;
    produced_ += out.rows;
    return true;
  }

 private:
  static Chunk rest(const Chunk& c, int64_t offset) {
    return offset < c.rows ? slice_rows(c, offset, c.rows) : Chunk{};
  }

  // The next element of the index pipeline, checked against the number of datasets; nullopt at its end.
  std::optional<int64_t> next_index() {
    while (index_offset_ >= index_pending_.rows) {
      if (!pull(*index_, index_pending_)) return std::nullopt;
      index_offset_ = 0;
    }
    const Column& col = index_pending_.columns.at(0);
    const int64_t k = col.ragged ? col.rows.at(static_cast<size_t>(index_offset_)).data<int64_t>()[0]
                                 : col.dense.data<int64_t>()[index_offset_];
    ++index_offset_;
    const int64_t element = indices_read_++;
    if (k < 0 || k >= static_cast<int64_t>(data_.size()))
      throw StageError(spec(), fmt::format("element {} of the index pipeline is {}, which names no dataset: "
                                           "there are {}, so an index must be in [0, {}]",
                                           element, k, data_.size(), data_.size() - 1));
    return k;
  }

  // Makes sure dataset d has a row pending; false when it has ended.
  bool fill(size_t d) {
    while (offset_[d] >= pending_[d].rows) {
      if (!pull(*data_[d], pending_[d])) return false;
      offset_[d] = 0;
      reorder_columns(pending_[d], orders_[d]);
    }
    return true;
  }

  int64_t epoch_;
  IteratorPtr index_;
  std::vector<IteratorPtr> data_;            // null once a dataset has ended
  std::vector<std::vector<size_t>> orders_;  // per dataset: where each of this stage's fields is in its chunks
  std::vector<Chunk> pending_;
  std::vector<int64_t> offset_;
  Chunk index_pending_;
  int64_t index_offset_ = 0;
  int64_t indices_read_ = 0;  // elements of the index pipeline read so far (named in errors)
  int64_t active_ = 0;        // datasets that have not ended
  bool stop_on_empty_ = true;
  bool done_ = false;
};

}  // namespace

IteratorPtr make_choose_from(RunContext& ctx, int stage, int64_t epoch, std::vector<IteratorPtr> inputs) {
  return std::make_unique<ChooseFrom>(ctx, stage, epoch, std::move(inputs));
}

}  // namespace pipec
