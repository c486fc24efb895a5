// shuffle(buffer, seed, reshuffle_each_iteration): tf.data's algorithm. The buffer is first filled with
// `buffer` elements; each output picks a uniformly random slot, emits it and refills the slot with the
// next input element (or, once the input is exhausted, with the last slot). The slot choice for output
// element i comes from the Philox stream (seed, stage, i, epoch), so the order is reproducible and
// independent of thread count; with reshuffle_each_iteration = false every epoch uses epoch 0's order.
#include <cstring>

#include "runtime/exec/chunk_builder.h"
#include "runtime/exec/philox.h"
#include "runtime/exec/stage_factories.h"

namespace pipec {

namespace {

class Shuffle : public ChunkIterator {
 public:
  Shuffle(RunContext& ctx, int stage, int64_t epoch, IteratorPtr input)
      : ChunkIterator(ctx, stage), input_(std::move(input)) {
    const Stage& s = spec();
    capacity_ = s.arg("buffer")->i;
    const Value* seed = s.arg("seed");
    seed_ = seed ? static_cast<uint64_t>(seed->i) : ctx.seed;
    const Value* re = s.arg("reshuffle_each_iteration");
    epoch_key_ = (!re || re->b) ? epoch : 0;
    epoch_ = epoch;
  }

  void save(StateWriter& w) const override {
    w.write_i64(produced_);
    input_->save(w);
    save_chunk(w, offset_ < pending_.rows ? slice_rows(pending_, offset_, pending_.rows) : Chunk{});
    w.write_u32(input_done_ ? 1 : 0);
    save_chunk(w, live_ > 0 ? slice_rows(buffer_, 0, live_) : Chunk{});
  }
  void restore(StateReader& r) override {
    produced_ = r.read_i64();
    input_->restore(r);
    pending_ = restore_chunk(r);
    offset_ = 0;
    input_done_ = r.read_u32() != 0;
    buffer_ = restore_chunk(r);
    live_ = buffer_.rows;
    filled_ = false;  // a restored buffer may be short of capacity if the input had not ended
  }

 protected:
  bool produce(Chunk& out) override {
    fill();
    if (live_ == 0) return false;
    ChunkBuilder b(buffer_, std::min(ctx_.chunk_rows, live_ + (input_done_ ? 0 : ctx_.chunk_rows)));
    while (!b.full() && live_ > 0) {
      RandomStream rng(seed_, static_cast<uint64_t>(stage_), static_cast<uint64_t>(produced_), static_cast<uint64_t>(epoch_key_));
      int64_t slot = rng.uniform_int(0, live_ - 1);
      b.add_row(buffer_, slot);
      ++produced_;
      if (next_input_row()) {
        overwrite_row(buffer_, slot, pending_, offset_);
        ++offset_;
      } else {
        // Input exhausted: the last live element moves into the slot and the buffer shrinks.
        if (slot != live_ - 1) overwrite_row(buffer_, slot, buffer_, live_ - 1);
        --live_;
      }
    }
    int64_t n = b.rows();
    out = b.finish();
    out.first_index = produced_ - n;
    out.epoch = epoch_;
    return true;
  }

 private:
  // Makes pending_[offset_] the next input row; false when the input is exhausted.
  bool next_input_row() {
    while (offset_ >= pending_.rows) {
      if (input_done_ || !pull(*input_, pending_)) {
        input_done_ = true;
        return false;
      }
      offset_ = 0;
    }
    return true;
  }

  // Fills the buffer to capacity once, at the start (and after a restore of a partly filled one).
  void fill() {
    if (filled_) return;
    filled_ = true;
    std::unique_ptr<ChunkBuilder> b;
    if (live_ > 0) {
      b = std::make_unique<ChunkBuilder>(buffer_, capacity_);
      b->add_rows(buffer_, 0, live_);
    }
    while ((b ? b->rows() : 0) < capacity_ && next_input_row()) {
      if (!b) b = std::make_unique<ChunkBuilder>(pending_, capacity_);
      int64_t take = std::min(capacity_ - b->rows(), pending_.rows - offset_);
      b->add_rows(pending_, offset_, offset_ + take);
      offset_ += take;
    }
    if (b) {
      buffer_ = b->finish();
      live_ = buffer_.rows;
    }
  }

  // dst row `d` := src row `s` (same layout).
  static void overwrite_row(Chunk& dst, int64_t d, const Chunk& src, int64_t s) {
    for (size_t k = 0; k < dst.columns.size(); ++k) {
      Column& dc = dst.columns[k];
      const Column& sc = src.columns[k];
      if (dc.ragged) {
        dc.rows[d] = sc.rows[s];
      } else if (dc.dense.dtype() == DType::Bytes) {
        // Strings change length: rebuild this column (rare in shuffles of parsed records).
        std::vector<std::string> v;
        for (int64_t i = 0; i < dc.dense.num_elements(); ++i) v.emplace_back(dc.dense.str(i));
        int64_t per = dc.dense.num_elements() / std::max<int64_t>(1, dc.dense.shape()[0]);
        for (int64_t i = 0; i < per; ++i) v[d * per + i] = std::string(sc.dense.str(s * per + i));
        dc.dense = Tensor::from_strings(v, dc.dense.shape());
      } else {
        size_t row_bytes = dc.dense.byte_size() / static_cast<size_t>(std::max<int64_t>(1, dc.dense.shape()[0]));
        if (&dst == &src && d == s) continue;
        std::memmove(dc.dense.raw() + d * row_bytes, sc.dense.raw() + s * row_bytes, row_bytes);
      }
    }
  }

  IteratorPtr input_;
  int64_t capacity_ = 1;
  uint64_t seed_ = 0;
  int64_t epoch_key_ = 0;
  int64_t epoch_ = 0;
  Chunk buffer_;      // capacity rows, of which the first live_ are elements
  int64_t live_ = 0;
  bool filled_ = false;
  Chunk pending_;
  int64_t offset_ = 0;
  bool input_done_ = false;
};

}  // namespace

IteratorPtr make_shuffle(RunContext& ctx, int stage, int64_t epoch, IteratorPtr input) {
  return std::make_unique<Shuffle>(ctx, stage, epoch, std::move(input));
}

}  // namespace pipec
