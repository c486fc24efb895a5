// concatenate(a, b, ...): every element of a, then every element of b (tf.data's concatenate). Each
// input is built when the one before it ends, so only one is open at a time.
#include "runtime/exec/stage_factories.h"

namespace pipec {

namespace {

class Concatenate : public ChunkIterator {
 public:
  Concatenate(RunContext& ctx, int stage, int64_t epoch) : ChunkIterator(ctx, stage), epoch_(epoch) {
    for (int in : spec().inputs) orders_.push_back(field_order(spec().element, ctx.plan->stages.at(in).element));
  }

  // Which input is open, and its state: the one before it has ended, the ones after it are not built.
  void save(StateWriter& w) const override {
    w.write_i64(produced_);
    w.write_i64(current_);
    w.write_u32(input_ ? 1 : 0);
    if (input_) input_->save(w);
  }
  void restore(StateReader& r) override {
    produced_ = r.read_i64();
    current_ = r.read_i64();
    if (current_ < 0 || current_ > static_cast<int64_t>(orders_.size()))
      throw r.error("concatenate: input out of range");
    input_.reset();
    if (r.read_u32() != 0) {
      if (current_ == static_cast<int64_t>(orders_.size())) throw r.error("concatenate: no input left to restore");
      open_current();
      input_->restore(r);
    }
  }

  std::vector<const ChunkIterator*> inputs() const override {
    if (!input_) return {};
    return {input_.get()};
  }

 protected:
  bool produce(Chunk& out) override {
    while (current_ < static_cast<int64_t>(orders_.size())) {
      if (!input_) open_current();
      Chunk in;
      if (!pull(*input_, in)) {
        input_.reset();
        ++current_;
        continue;
      }
      if (in.rows == 0) continue;
      reorder_columns(in, orders_[static_cast<size_t>(current_)]);
      out = std::move(in);
      out.first_index = produced_;
      out.epoch = epoch_;
      produced_ += out.rows;
      return true;
    }
    return false;
  }

 private:
  void open_current() { input_ = build_iterator(ctx_, spec().inputs.at(static_cast<size_t>(current_)), epoch_); }

  int64_t epoch_;
  std::vector<std::vector<size_t>> orders_;  // per input: where each of this stage's fields is in its chunks
  int64_t current_ = 0;                      // the input being read; inputs().size() when all have ended
  IteratorPtr input_;                        // null before the current input is built and after the last
};

}  // namespace

IteratorPtr make_concatenate(RunContext& ctx, int stage, int64_t epoch) {
  return std::make_unique<Concatenate>(ctx, stage, epoch);
}

}  // namespace pipec
