// repeat(count): re-creates its input for each epoch (count times, or forever). The epoch number is
// part of every random key below, so each pass reshuffles and re-draws. The outermost repeat of a run
// started at a later pass (RunOptions::first_pass) begins there, its input built for that pass.
#include "runtime/exec/stage_factories.h"

namespace pipec {

namespace {

class Repeat : public ChunkIterator {
 public:
  Repeat(RunContext& ctx, int stage, int64_t outer_epoch) : ChunkIterator(ctx, stage), outer_epoch_(outer_epoch) {
    const Value* c = spec().arg("count");
    count_ = c ? c->i : -1;
    if (stage == ctx.first_pass_stage && outer_epoch == 0) epoch_ = ctx.first_pass;
  }

  void save(StateWriter& w) const override {
    w.write_i64(produced_);
    w.write_i64(epoch_);
    w.write_u32(input_ ? 1 : 0);
    if (input_) input_->save(w);
  }
  void restore(StateReader& r) override {
    produced_ = r.read_i64();
    epoch_ = r.read_i64();
    input_.reset();
    if (r.read_u32()) {
      input_ = build_iterator(ctx_, spec().inputs[0], input_epoch());
      input_->restore(r);
    }
  }
  std::vector<const ChunkIterator*> inputs() const override {
    return input_ ? std::vector<const ChunkIterator*>{input_.get()} : std::vector<const ChunkIterator*>{};
  }

 protected:
  bool produce(Chunk& out) override {
    for (int empty_passes = 0;;) {
      if (count_ >= 0 && epoch_ >= count_) return false;
      if (!input_) input_ = build_iterator(ctx_, spec().inputs[0], input_epoch());
      if (pull(*input_, out)) {
        out.first_index = produced_;
        produced_ += out.rows;
        return true;
      }
      input_.reset();
      ++epoch_;
      // An input that yields nothing would make repeat() spin forever; tf.data ends instead.
      if (++empty_passes > 1 && produced_ == 0) return false;
    }
  }

 private:
  int64_t input_epoch() const { return outer_epoch_ * (count_ > 0 ? count_ : 1) + epoch_; }

  int64_t outer_epoch_;
  int64_t count_ = -1;
  int64_t epoch_ = 0;
  IteratorPtr input_;
};

}  // namespace

IteratorPtr make_repeat(RunContext& ctx, int stage, int64_t epoch) {
  return std::make_unique<Repeat>(ctx, stage, epoch);
}

}  // namespace pipec
