// window(size, shift, stride, drop_remainder): tf.data's `window(size, shift, stride, drop_remainder)`
// with each window batched (`.flat_map(lambda w: w.batch(size))`). Window i takes the elements
// i * shift + k * stride (k < size) that exist; the last windows are shorter unless drop_remainder,
// and a window ends only when no element is left to start one, exactly as tf.data's buffer does.
#include <algorithm>
#include <deque>

#include "runtime/exec/chunk_builder.h"
#include "runtime/exec/stage_factories.h"
#include "runtime/exec/stages/stack_rows.h"

namespace pipec {

namespace {

constexpr StackNames kWindowStack{"window", ""};

class Window : public ChunkIterator {
 public:
  Window(RunContext& ctx, int stage, IteratorPtr input) : ChunkIterator(ctx, stage), input_(std::move(input)) {
    const Stage& s = spec();
    size_ = s.arg("size")->i;
    const Value* shift = s.arg("shift");
    shift_ = shift ? shift->i : size_;
    if (const Value* v = s.arg("stride")) stride_ = v->i;
    const Value* d = s.arg("drop_remainder");
    drop_ = d && d->b;
    span_ = (size_ - 1) * stride_ + 1;
  }

  // The rows held (the next window's and the rest of the last input chunk), each piece with its epoch,
  // and how many input elements the last shift still has to skip.
  void save(StateWriter& w) const override {
    w.write_i64(produced_);
    input_->save(w);
    w.write_i64(to_skip_);
    w.write_u32(input_done_ ? 1 : 0);
    w.write_u64(held_.size());
    for (size_t k = 0; k < held_.size(); ++k)
      save_chunk(w, k == 0 && front_ > 0 ? slice_rows(held_[0], front_, held_[0].rows) : held_[k]);
  }
  void restore(StateReader& r) override {
    produced_ = r.read_i64();
    input_->restore(r);
    to_skip_ = r.read_i64();
    input_done_ = r.read_u32() != 0;
    held_.clear();
    front_ = 0;
    held_rows_ = 0;
    const uint64_t n = r.read_u64();
    for (uint64_t k = 0; k < n; ++k) {
      held_.push_back(restore_chunk(r));
      held_rows_ += held_.back().rows;
      largest_pulled_ = std::max(largest_pulled_, held_.back().rows);
    }
  }

  // A window's span of rows and the rest of one input chunk.
  Buffered buffered() const override { return {held_rows_, span_ + largest_pulled_}; }
  std::vector<const ChunkIterator*> inputs() const override { return {input_.get()}; }

 protected:
  bool produce(Chunk& out) override {
    while (held_rows_ < span_ && !input_done_) {
      Chunk in;
      if (!pull(*input_, in)) {
        input_done_ = true;
        break;
      }
      const int64_t skip = std::min(to_skip_, in.rows);  // what the last shift passed over
      to_skip_ -= skip;
      if (skip == in.rows) continue;
      if (skip > 0) in = slice_rows(in, skip, in.rows);
      held_rows_ += in.rows;
      held_.push_back(std::move(in));
    }
    if (held_rows_ == 0 || (drop_ && held_rows_ < span_)) return false;
    const int64_t n = 1 + (std::min(held_rows_, span_) - 1) / stride_;
    try {
      std::optional<ChunkBuilder> rows;
      for (int64_t k = 0; k < n; ++k) {
        auto [piece, row] = locate(k * stride_);
        if (!rows) rows.emplace(held_[piece], n);
        rows->add_row(held_[piece], row);
      }
      out = as_single_element(densify(rows->finish(), kWindowStack), kWindowStack);
    } catch (const std::runtime_error& e) {
      throw StageError(spec(), e.what());
    }
    out.epoch = held_.front().epoch;  // a window belongs to the epoch of its first element
    out.first_index = produced_;
    produced_ += 1;
    drop_front(shift_);
    return true;
  }

 private:
  // Which held chunk row `i` of the held rows is in, and its row there.
  std::pair<size_t, int64_t> locate(int64_t i) const {
    i += front_;
    size_t k = 0;
    while (i >= held_[k].rows) i -= held_[k++].rows;
    return {k, i};
  }

  // Passes over `n` elements: the held ones first, then (later, as they come) the input's.
  void drop_front(int64_t n) {
    const int64_t held = std::min(n, held_rows_);
    to_skip_ += n - held;
    held_rows_ -= held;
    int64_t left = held;
    while (left > 0) {
      const int64_t here = held_.front().rows - front_;
      if (left < here) {
        front_ += left;
        break;
      }
      left -= here;
      held_.pop_front();
      front_ = 0;
    }
  }

  IteratorPtr input_;
  int64_t size_ = 1, shift_ = 1, stride_ = 1;
  int64_t span_ = 1;  // input elements a full window covers: (size - 1) * stride + 1
  bool drop_ = false;
  std::deque<Chunk> held_;  // input chunks whose rows are not passed over yet
  int64_t front_ = 0;       // rows of held_.front() already passed over
  int64_t held_rows_ = 0;   // rows of held_ not passed over
  int64_t to_skip_ = 0;     // input elements a shift past the held rows still has to pass over
  bool input_done_ = false;
};

}  // namespace

IteratorPtr make_window(RunContext& ctx, int stage, IteratorPtr input) {
  return std::make_unique<Window>(ctx, stage, std::move(input));
}

}  // namespace pipec
