// rebatch(size, drop_remainder): tf.data's `rebatch(batch_size, drop_remainder)`, which is
// `unbatch().batch(size, drop_remainder)` in one stage: the rows of the input's batches, in order, in
// batches of `size`; the last is shorter unless drop_remainder.
#include <algorithm>

#include "runtime/exec/stage_factories.h"
#include "runtime/exec/stages/stack_rows.h"

namespace pipec {

namespace {

class Rebatch : public ChunkIterator {
 public:
  Rebatch(RunContext& ctx, int stage, IteratorPtr input) : ChunkIterator(ctx, stage), input_(std::move(input)) {
    size_ = spec().arg("size")->i;
    const Value* d = spec().arg("drop_remainder");
    drop_ = d && d->b;
  }

  // The rest of the rows of one input chunk and the rows of the batch being made.
  void save(StateWriter& w) const override {
    w.write_i64(produced_);
    input_->save(w);
    Chunk rest = offset_ < rows_.rows ? slice_rows(rows_, offset_, rows_.rows) : Chunk{};
    rest.epoch = rows_.epoch;
    save_chunk(w, rest);
    w.write_u64(pieces_.size());
    for (const Chunk& c : pieces_) save_chunk(w, c);
    w.write_u32(done_ ? 1 : 0);
  }
  void restore(StateReader& r) override {
    produced_ = r.read_i64();
    input_->restore(r);
    rows_ = restore_chunk(r);
    offset_ = 0;
    pieces_.clear();
    have_ = 0;
    for (uint64_t n = r.read_u64(); n > 0; --n) {
      pieces_.push_back(restore_chunk(r));
      have_ += pieces_.back().rows;
    }
    done_ = r.read_u32() != 0;
    largest_ = std::max(largest_, rows_.rows);
  }

  // The rows of one input chunk and a batch short of full.
  Buffered buffered() const override {
    return {std::max<int64_t>(0, rows_.rows - offset_) + have_, largest_ + size_ - 1};
  }
  std::vector<const ChunkIterator*> inputs() const override { return {input_.get()}; }

 protected:
  bool produce(Chunk& out) override {
    while (have_ < size_ && !done_) {
      if (offset_ >= rows_.rows) {
        Chunk in;
        if (!pull(*input_, in)) {
          done_ = true;
          break;
        }
        try {
          rows_ = unstack_rows(in);
        } catch (const std::runtime_error& e) {
          throw StageError(spec(), e.what());
        }
        rows_.epoch = in.epoch;
        offset_ = 0;
        largest_ = std::max(largest_, rows_.rows);
        continue;
      }
      const int64_t take = std::min(size_ - have_, rows_.rows - offset_);
      pieces_.push_back(slice_rows(rows_, offset_, offset_ + take));
      pieces_.back().epoch = rows_.epoch;
      offset_ += take;
      have_ += take;
    }
    if (have_ == 0 || (have_ < size_ && drop_)) {
      pieces_.clear();
      have_ = 0;
      return false;
    }
    try {
      out = stack_rows(pieces_, have_);
    } catch (const std::runtime_error& e) {
      throw StageError(spec(), e.what());
    }
    out.epoch = pieces_.front().epoch;  // a batch belongs to the epoch of its first row
    out.first_index = produced_;
    produced_ += 1;
    pieces_.clear();
    have_ = 0;
    return true;
  }

 private:
  IteratorPtr input_;
  int64_t size_ = 1;
  bool drop_ = false;
  Chunk rows_;                 // the rows of the last input chunk's batches
  int64_t offset_ = 0;         // rows of rows_ already taken
  std::vector<Chunk> pieces_;  // the batch being made
  int64_t have_ = 0;           // rows in pieces_
  int64_t largest_ = 0;        // rows of the largest rows_ (the buffer bound counts one)
  bool done_ = false;
};

}  // namespace

IteratorPtr make_rebatch(RunContext& ctx, int stage, IteratorPtr input) {
  return std::make_unique<Rebatch>(ctx, stage, std::move(input));
}

}  // namespace pipec
