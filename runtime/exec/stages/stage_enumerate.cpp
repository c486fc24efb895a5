// enumerate(start, field): each element gets its position, counted from `start`, as a new first field
// (tf.data's enumerate). The count restarts when the stage is built again, as tf.data's does on every
// epoch of a repeat after it.
#include "runtime/exec/stage_factories.h"

namespace pipec {

namespace {

class Enumerate : public ChunkIterator {
 public:
  Enumerate(RunContext& ctx, int stage, IteratorPtr input) : ChunkIterator(ctx, stage), input_(std::move(input)) {
    if (const Value* v = spec().arg("start")) start_ = v->i;
  }

  void save(StateWriter& w) const override {
    w.write_i64(produced_);
    input_->save(w);
  }
  void restore(StateReader& r) override {
    produced_ = r.read_i64();
    input_->restore(r);
  }
  std::vector<const ChunkIterator*> inputs() const override { return {input_.get()}; }

 protected:
  bool produce(Chunk& out) override {
    Chunk in;
    do {
      if (!pull(*input_, in)) return false;
    } while (in.rows == 0);
    Column index;
    index.dense = Tensor::empty(DType::I64, {in.rows});
    int64_t* p = index.dense.data<int64_t>();
    // Wraps like tf.data's int64 counter would (never in practice), without signed overflow here.
    for (int64_t r = 0; r < in.rows; ++r)
      p[r] = static_cast<int64_t>(static_cast<uint64_t>(start_) + static_cast<uint64_t>(produced_ + r));
    out = std::move(in);
    out.columns.insert(out.columns.begin(), std::move(index));
    out.first_index = produced_;
    produced_ += out.rows;
    return true;
  }

 private:
  IteratorPtr input_;
  int64_t start_ = 0;
};

}  // namespace

IteratorPtr make_enumerate(RunContext& ctx, int stage, IteratorPtr input) {
  return std::make_unique<Enumerate>(ctx, stage, std::move(input));
}

}  // namespace pipec
