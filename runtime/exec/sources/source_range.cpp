// range(stop) / range(start, stop, step): {value: i64}.
#include "runtime/exec/stage_factories.h"

namespace pipec {

namespace {

class RangeSource : public ChunkIterator {
 public:
  RangeSource(RunContext& ctx, int stage, int64_t epoch) : ChunkIterator(ctx, stage), epoch_(epoch) {
    const Stage& s = spec();
    const Value* a = s.arg("start_or_stop");
    const Value* b = s.arg("stop");
    const Value* st = s.arg("step");
    if (b) {
      start_ = a->i;
      stop_ = b->i;
    } else {
      stop_ = a->i;
    }
    step_ = st ? st->i : 1;
    // Python's length of range(start, stop, step).
    if (step_ > 0) total_ = stop_ > start_ ? (stop_ - start_ + step_ - 1) / step_ : 0;
    else total_ = start_ > stop_ ? (start_ - stop_ - step_ - 1) / -step_ : 0;
  }
  void save(StateWriter& w) const override { w.write_i64(produced_); }
  void restore(StateReader& r) override { produced_ = r.read_i64(); }

 protected:
  bool produce(Chunk& out) override {
    int64_t n = std::min(ctx_.chunk_rows, total_ - produced_);
    if (n <= 0) return false;
    Tensor t = Tensor::empty(DType::I64, {n});
    int64_t* p = t.data<int64_t>();
    for (int64_t i = 0; i < n; ++i) p[i] = start_ + (produced_ + i) * step_;
    out = Chunk{};
    out.rows = n;
    out.columns.push_back(Column{false, t, {}});
    out.first_index = produced_;
    out.epoch = epoch_;
    produced_ += n;
    return true;
  }

 private:
  int64_t epoch_;
  int64_t start_ = 0, stop_ = 0, step_ = 1, total_ = 0;
};

}  // namespace

IteratorPtr make_range_source(RunContext& ctx, int stage, int64_t epoch) {
  return std::make_unique<RangeSource>(ctx, stage, epoch);
}

}  // namespace pipec
