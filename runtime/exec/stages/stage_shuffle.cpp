// shuffle(buffer, seed, reshuffle_each_iteration): tf.data's algorithm. The buffer is first filled with
// `buffer` elements; each output picks a uniformly random slot, emits it and refills the slot with the
// next input element (or, once the input is exhausted, with the last slot). The slot choice for output
// element i comes from the Philox stream (seed, stage, i, epoch), so the order is reproducible and
// independent of thread count; with reshuffle_each_iteration = false every epoch uses epoch 0's order.
//
// shuffle_repeat(buffer, seed, reshuffle_each_iteration, count) is `shuffle(...) | repeat(count)` as one
// stage (compiler/passes/shuffle_repeat_fusion.h): the same iterator goes on to the next epoch when
// its buffer has drained, instead of a repeat throwing it away and building a new one. The output is
// the unfused stages' exactly: each epoch fills and drains the buffer with the same draws (the stage
// index and epoch in the keys are the shuffle's), chunks end where epochs end, and elements are
// numbered across epochs as the repeat numbered them.
//
// The buffer counts in the run's memory budget as a fixed holding (runtime/exec/memory_budget.h):
// what it holds after it fills, and, for fields whose rows differ in size, as rows are replaced.
#include <array>
#include <cstring>
#include <optional>

#include "runtime/core/philox.h"
#include "runtime/exec/chunk_builder.h"
#include "runtime/exec/memory_budget.h"
#include "runtime/exec/stage_factories.h"

namespace pipec {

namespace {

class Shuffle : public ChunkIterator {
 public:
  /// `input` null: shuffle_repeat, which builds its input for each epoch itself.
  Shuffle(RunContext& ctx, int stage, int64_t epoch, IteratorPtr input)
      : ChunkIterator(ctx, stage), input_(std::move(input)) {
    const Stage& s = spec();
    capacity_ = s.arg("buffer")->i;
    const Value* seed = s.arg("seed");
    seed_ = seed ? static_cast<uint64_t>(seed->i) : ctx.seed;
    repeats_ = !input_;
    if (repeats_) {
      const Value* c = s.arg("count");
      count_ = c ? c->i : -1;
      outer_epoch_ = epoch;
      // The outermost repeat of a run started at a later pass (RunOptions::first_pass) begins there.
      if (stage == ctx.first_pass_stage && epoch == 0) pass_ = ctx.first_pass;
    }
    start_epoch(repeats_ ? input_epoch() : epoch);
    if (repeats_) input_ = build_iterator(ctx_, spec().inputs.at(0), epoch_);
  }

  void save(StateWriter& w) const override {
    if (repeats_) {
      w.write_i64(pass_);
      w.write_i64(total_);
    }
    w.write_i64(produced_);
    input_->save(w);
    save_chunk(w, offset_ < pending_.rows ? slice_rows(pending_, offset_, pending_.rows) : Chunk{});
    w.write_u32(input_done_ ? 1 : 0);
    // Saved in the input's layout (byte strings dense again), as restore() and fill() expect.
    Chunk live;
    if (live_ > 0) {
      ChunkBuilder b(output_layout(), live_);
      b.add_rows(buffer_, 0, live_);
      live = b.finish();
    }
    save_chunk(w, live);
  }
  void restore(StateReader& r) override {
    if (repeats_) {
      pass_ = r.read_i64();
      total_ = r.read_i64();
      start_epoch(input_epoch());
      input_ = build_iterator(ctx_, spec().inputs.at(0), epoch_);
    }
    produced_ = r.read_i64();
    input_->restore(r);
    pending_ = restore_chunk(r);
    offset_ = 0;
    input_done_ = r.read_u32() != 0;
    buffer_ = restore_chunk(r);
    live_ = buffer_.rows;
    recount_buffer();
    ahead_ = {};
    filled_ = false;  // a restored buffer may be short of capacity if the input had not ended
    largest_pulled_ = std::max(largest_pulled_, pending_.rows);  // the rest of one input chunk
  }

  // The buffer and the rest of the input chunk that refills it.
  Buffered buffered() const override {
    return {live_ + (offset_ < pending_.rows ? pending_.rows - offset_ : 0), capacity_ + largest_pulled_};
  }
  std::vector<const ChunkIterator*> inputs() const override {
    return input_ ? std::vector<const ChunkIterator*>{input_.get()} : std::vector<const ChunkIterator*>{};
  }

 protected:
  bool produce(Chunk& out) override {
    if (repeats_ && count_ >= 0 && pass_ >= count_) return false;
    fill();
    for (int empty_passes = 0; live_ == 0;) {
      // Drained. repeat(): the next epoch, unless that was the last or the input yields nothing (an
      // empty input would make repeat() spin forever; tf.data ends instead).
      if (!repeats_ || (count_ >= 0 && pass_ + 1 >= count_)) return false;
      if (++empty_passes > 1 && total_ == 0) return false;
      next_epoch();
      fill();
    }
    // One builder for the whole epoch: its buffers are recycled, and rows go straight into them.
    if (!out_) out_.emplace(output_layout(), ctx_.chunk_rows);
    ChunkBuilder& b = *out_;
    int64_t grown = 0;  // bytes the buffer's rows of varying size grew by
    if (b.fixed_rows() && b.compatible(buffer_)) {
      produce_fixed(b);
    }
    while (!b.full() && live_ > 0) {
      int64_t slot = draw(produced_);
      // The buffer is far bigger than the caches and slots are random: start loading the row that
      // kAhead elements later will take, so its cache misses overlap with this work.
      draw_ahead(produced_ + kAhead);
      b.add_row(buffer_, slot);
      ++produced_;
      if (next_input_row()) {
        if (has_row_columns_) grown -= row_column_bytes(buffer_, slot);
        overwrite_row(buffer_, slot, pending_, offset_);
        if (has_row_columns_) grown += row_column_bytes(buffer_, slot);
        ++offset_;
      } else {
        // Input exhausted: the last live element moves into the slot and the buffer shrinks.
        if (slot != live_ - 1) overwrite_row(buffer_, slot, buffer_, live_ - 1);
        --live_;
      }
    }
    if (grown != 0) {
      charged_ += grown;
      charge_fixed(grown, "its buffer");
    }
    int64_t n = b.rows();
    out = b.finish();
    out.first_index = repeats_ ? total_ : produced_ - n;
    out.epoch = epoch_;
    total_ += n;
    return true;
  }

 private:
  static constexpr int64_t kAhead = 8;
  static constexpr int64_t kBlocks = 64;

  // Epoch `epoch` of the input: its keys. The epoch within a shuffle_repeat is pass_.
  void start_epoch(int64_t epoch) {
    const Value* re = spec().arg("reshuffle_each_iteration");
    epoch_ = epoch;
    epoch_key_ = (!re || re->b) ? epoch : 0;
    key_ = RandomStream::derive_key(seed_, static_cast<uint64_t>(stage_), static_cast<uint64_t>(epoch_key_));
    blocks_from_ = -kBlocks;  // made with the old key
  }
  // The epoch number an unfused repeat(count) would have given its input for pass_.
  int64_t input_epoch() const { return outer_epoch_ * (count_ > 0 ? count_ : 1) + pass_; }

  // shuffle_repeat: the drained buffer starts the next epoch, with a new input iterator (the old one
  // goes first, so a cache below sees its epoch end before the next begins).
  void next_epoch() {
    ++pass_;
    start_epoch(input_epoch());
    input_.reset();
    input_ = build_iterator(ctx_, spec().inputs.at(0), epoch_);
    produced_ = 0;
    pending_ = Chunk{};
    offset_ = 0;
    input_done_ = false;
    filled_ = false;
    ahead_ = {};
  }

  // The slot output element i takes: uniform in [0, live_) from the stream (seed, stage, i, epoch).
  // Nearly always from the stream's first word by UniformBelow (a stream object and its two divisions
  // per element were over half of the stage's time on chess); from the stream when that word is rejected.
  int64_t slot_for(int64_t i) {
    const PhiloxCounter& first = first_block(i);
    if (below_.n() != static_cast<uint64_t>(live_)) below_ = UniformBelow(static_cast<uint64_t>(live_));
    if (const int64_t slot = below_.from_first_word(first[0]); slot >= 0) return slot;
    RandomStream rng(key_, static_cast<uint64_t>(i), static_cast<uint64_t>(epoch_key_), first);
    return rng.uniform_int(0, live_ - 1);
  }
  // The first block of element i's stream. Elements are drawn in order (give or take kAhead), so the
  // blocks are made kBlocks at a time, which vectorizes (RandomStream::first_blocks).
  const PhiloxCounter& first_block(int64_t i) {
    if (i < blocks_from_ || i >= blocks_from_ + kBlocks) {
      blocks_from_ = i;
      RandomStream::first_blocks(key_, static_cast<uint64_t>(i), static_cast<uint64_t>(epoch_key_), blocks_.data(),
                                 blocks_.size());
    }
    return blocks_[static_cast<size_t>(i - blocks_from_)];
  }
  int64_t draw(int64_t i) {
    const Drawn& d = ahead_[static_cast<size_t>(i % kAhead)];
    return d.index == i && d.live == live_ ? d.slot : slot_for(i);
  }
  // Draws element i's slot now, assuming the buffer is still live_ long then (draw() checks), and
  // prefetches that row of every fixed-size column.
  void draw_ahead(int64_t i) {
    Drawn& d = ahead_[static_cast<size_t>(i % kAhead)];
    d.index = i;
    d.live = live_;
    d.slot = slot_for(i);
    for (const Column& c : buffer_.columns) {
      if (c.ragged || c.dense.dtype() == DType::Bytes || c.dense.shape().empty() || c.dense.shape()[0] == 0) continue;
      size_t row_bytes = c.dense.byte_size() / static_cast<size_t>(c.dense.shape()[0]);
      const uint8_t* row = c.dense.raw() + static_cast<size_t>(d.slot) * row_bytes;
      for (size_t off = 0; off < row_bytes; off += 64) __builtin_prefetch(row + off);
      __builtin_prefetch(row + row_bytes - 1);
    }
  }

  // produce()'s loop for a buffer whose fields all have rows of one fixed size (numbers, fixed-length
  // bytes): the same draws and moves, with each row copied by one memcpy per field from pointers worked
  // out once, instead of add_row's and overwrite_row's checks of every row's layout (a fifth of the
  // stage's time on chess). Stops early, leaving the rest to the general loop, when an input chunk does
  // not have the buffer's layout.
  void produce_fixed(ChunkBuilder& b) {
    const size_t n = buffer_.columns.size();
    std::vector<uint8_t*> base(n);
    std::vector<size_t> row_bytes(n);
    std::vector<const uint8_t*> row(n), from(n);
    for (size_t k = 0; k < n; ++k) {
      base[k] = buffer_.columns[k].dense.raw();
      row_bytes[k] = b.row_bytes(k);
    }
    // The rows left of the current input chunk were checked when it came; later chunks when they come.
    pulled_ = false;
    bool pending_fits = offset_ >= pending_.rows || b.compatible(pending_);
    while (!b.full() && live_ > 0 && pending_fits) {
      const int64_t slot = draw(produced_);
      draw_ahead_fixed(produced_ + kAhead, base, row_bytes);
      for (size_t k = 0; k < n; ++k) row[k] = base[k] + static_cast<size_t>(slot) * row_bytes[k];
      b.add_fixed_row(row.data());
      ++produced_;
      int64_t from_row = 0;  // the slot's new element: row from_row of the chunk whose columns start at from
      if (next_input_row()) {
        if (pulled_) {
          pulled_ = false;
          pending_fits = b.compatible(pending_);
          if (!pending_fits) {  // the general loop takes over from the next element
            overwrite_row(buffer_, slot, pending_, offset_);
            ++offset_;
            break;
          }
        }
        for (size_t k = 0; k < n; ++k) from[k] = pending_.columns[k].dense.raw();
        from_row = offset_++;
      } else {
        // Input exhausted: the last live element moves into the slot and the buffer shrinks.
        from_row = --live_;
        if (from_row == slot) continue;
        for (size_t k = 0; k < n; ++k) from[k] = base[k];
      }
      for (size_t k = 0; k < n; ++k)
        if (row_bytes[k] > 0)
          std::memcpy(base[k] + static_cast<size_t>(slot) * row_bytes[k],
                      from[k] + static_cast<size_t>(from_row) * row_bytes[k], row_bytes[k]);
    }
  }

  // draw_ahead() with the fixed-size rows' addresses worked out by the caller.
  void draw_ahead_fixed(int64_t i, const std::vector<uint8_t*>& base, const std::vector<size_t>& row_bytes) {
    Drawn& d = ahead_[static_cast<size_t>(i % kAhead)];
    d.index = i;
    d.live = live_;
    d.slot = slot_for(i);
    for (size_t k = 0; k < base.size(); ++k) {
      if (row_bytes[k] == 0) continue;
      const uint8_t* r = base[k] + static_cast<size_t>(d.slot) * row_bytes[k];
      for (size_t off = 0; off < row_bytes[k]; off += 64) __builtin_prefetch(r + off);
      __builtin_prefetch(r + row_bytes[k] - 1);
    }
  }

  // Makes pending_[offset_] the next input row; false when the input is exhausted.
  bool next_input_row() {
    while (offset_ >= pending_.rows) {
      if (input_done_ || !pull(*input_, pending_)) {
        input_done_ = true;
        return false;
      }
      offset_ = 0;
      pulled_ = true;
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
      strings_as_rows(buffer_);
    }
    recount_buffer();
  }

  // Counts the whole buffer in the memory budget, and its bound: capacity rows of the size seen.
  void recount_buffer() {
    has_row_columns_ = false;
    for (const Column& c : buffer_.columns) has_row_columns_ = has_row_columns_ || c.ragged;
    const int64_t bytes = static_cast<int64_t>(chunk_bytes(buffer_));
    charge_fixed(bytes - charged_, "its buffer");
    charged_ = bytes;
    if (ctx_.memory && buffer_.rows > 0)
      ctx_.memory->raise_bound(stage_, static_cast<uint64_t>(bytes) / static_cast<uint64_t>(buffer_.rows) *
                                           static_cast<uint64_t>(capacity_));
  }

  // Bytes of row `r` in the columns stored one tensor per row.
  static int64_t row_column_bytes(const Chunk& c, int64_t r) {
    int64_t n = 0;
    for (const Column& col : c.columns)
      if (col.ragged) n += static_cast<int64_t>(col.rows[r].byte_size());
    return n;
  }

  // Byte strings change length, so a dense Bytes column (one blob) cannot take a new string in the
  // middle: in the buffer such columns hold one tensor per row instead, and overwriting a slot is O(1).
  void strings_as_rows(Chunk& c) {
    if (bytes_row_shape_.size() < c.columns.size()) bytes_row_shape_.resize(c.columns.size());
    for (size_t k = 0; k < c.columns.size(); ++k) {
      Column& col = c.columns[k];
      if (col.ragged || col.dense.dtype() != DType::Bytes) continue;
      bytes_row_shape_[k] = Shape(col.dense.shape().begin() + 1, col.dense.shape().end());
      std::vector<Tensor> rows;
      rows.reserve(static_cast<size_t>(c.rows));
      for (int64_t r = 0; r < c.rows; ++r) rows.push_back(column_row(col, r));
      col = Column{true, Tensor(), std::move(rows)};
    }
  }

  // The layout of output chunks: the buffer's, with its per-row byte-string columns dense again.
  Chunk output_layout() const {
    Chunk layout;
    for (size_t k = 0; k < buffer_.columns.size(); ++k) {
      if (k < bytes_row_shape_.size() && bytes_row_shape_[k]) {
        Shape s = *bytes_row_shape_[k];
        s.insert(s.begin(), 0);
        layout.columns.push_back(Column{false, Tensor::empty(DType::Bytes, s), {}});
      } else {
        const Column& c = buffer_.columns[k];
        layout.columns.push_back(c.ragged ? Column{true, Tensor(), {}} : c);
      }
    }
    return layout;
  }

  // Whether row `s` of `sc` has the per-row shape of the dense column `dc`.
  static bool same_row_shape(const Column& dc, const Column& sc, int64_t s) {
    const Shape& d = dc.dense.shape();
    if (sc.ragged) return sc.rows[s].shape() == Shape(d.begin() + 1, d.end());
    const Shape& o = sc.dense.shape();
    return o.size() == d.size() && std::equal(o.begin() + 1, o.end(), d.begin() + 1);
  }

  // dst row `d` := src row `s` (same fields; rows may differ in shape where the type allows it).
  static void overwrite_row(Chunk& dst, int64_t d, const Chunk& src, int64_t s) {
    for (size_t k = 0; k < dst.columns.size(); ++k) {
      Column& dc = dst.columns[k];
      const Column& sc = src.columns[k];
      if (!dc.ragged && !same_row_shape(dc, sc, s)) {
        // A field with an unknown dimension (a final partial batch among full ones): the buffer keeps
        // this column one tensor per row from now on, so rows of any shape fit.
        std::vector<Tensor> rows;
        rows.reserve(static_cast<size_t>(dst.rows));
        for (int64_t r = 0; r < dst.rows; ++r) rows.push_back(column_row(dc, r));
        dc = Column{true, Tensor(), std::move(rows)};
      }
      if (dc.ragged) {
        dc.rows[d] = sc.ragged ? sc.rows[s] : column_row(sc, s);
      } else if (dc.dense.dtype() == DType::Bytes) {
        throw std::logic_error("shuffle: a byte-string column of the buffer is not stored per row");
      } else {
        size_t row_bytes = dc.dense.byte_size() / static_cast<size_t>(std::max<int64_t>(1, dc.dense.shape()[0]));
        if (&dst == &src && d == s) continue;
        std::memmove(dc.dense.raw() + d * row_bytes, sc.dense.raw() + s * row_bytes, row_bytes);
      }
    }
  }

  struct Drawn {
    int64_t index = -1;
    int64_t live = 0;
    int64_t slot = 0;
  };
  IteratorPtr input_;
  std::array<Drawn, kAhead> ahead_{};
  std::vector<std::optional<Shape>> bytes_row_shape_;  // per column: set when stored per row in the buffer
  std::optional<ChunkBuilder> out_;
  PhiloxKey key_{};
  std::array<PhiloxCounter, kBlocks> blocks_{};  // first blocks of elements blocks_from_ ..
  int64_t blocks_from_ = -kBlocks;
  UniformBelow below_{1};  // slots below the buffer's live count (remade when it changes)
  int64_t capacity_ = 1;
  uint64_t seed_ = 0;
  int64_t epoch_key_ = 0;
  int64_t epoch_ = 0;
  bool repeats_ = false;     // shuffle_repeat
  int64_t count_ = -1;       // shuffle_repeat: epochs, -1 forever
  int64_t outer_epoch_ = 0;  // shuffle_repeat: the epoch it was built for (by a repeat further down)
  int64_t pass_ = 0;         // shuffle_repeat: the epoch within this stage
  int64_t total_ = 0;        // elements produced over all epochs (shuffle_repeat's first_index)
  Chunk buffer_;             // capacity rows, of which the first live_ are elements
  int64_t charged_ = 0;      // bytes of the buffer counted in the memory budget
  bool has_row_columns_ = false;
  int64_t live_ = 0;
  bool filled_ = false;
  Chunk pending_;
  int64_t offset_ = 0;
  bool input_done_ = false;
  bool pulled_ = false;  // next_input_row() took a new input chunk (produce_fixed checks its layout)
};

}  // namespace

IteratorPtr make_shuffle(RunContext& ctx, int stage, int64_t epoch, IteratorPtr input) {
  return std::make_unique<Shuffle>(ctx, stage, epoch, std::move(input));
}

IteratorPtr make_shuffle_repeat(RunContext& ctx, int stage, int64_t epoch) {
  return std::make_unique<Shuffle>(ctx, stage, epoch, nullptr);
}

}  // namespace pipec
