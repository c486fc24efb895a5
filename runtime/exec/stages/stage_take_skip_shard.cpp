// take(n), skip(n) and shard(num_shards, index): which elements pass, by their position.
#include "runtime/exec/stage_factories.h"

namespace pipec {

namespace {

class Positional : public ChunkIterator {
 public:
  Positional(RunContext& ctx, int stage, IteratorPtr input) : ChunkIterator(ctx, stage), input_(std::move(input)) {
    const Stage& s = spec();
    kind_ = s.kind;
    if (kind_ == StageKind::Shard) {
      n_ = s.arg("num_shards")->i;
      index_ = s.arg("index")->i;
    } else {
      n_ = s.arg("count")->i;
    }
  }

  void save(StateWriter& w) const override {
    w.write_i64(produced_);
    w.write_i64(seen_);
    input_->save(w);
  }
  void restore(StateReader& r) override {
    produced_ = r.read_i64();
    seen_ = r.read_i64();
    input_->restore(r);
  }
  std::vector<const ChunkIterator*> inputs() const override { return {input_.get()}; }

 protected:
  bool produce(Chunk& out) override {
    for (;;) {
      if (kind_ == StageKind::Take && n_ >= 0 && seen_ >= n_) return false;
      Chunk in;
      if (!pull(*input_, in)) return false;
      int64_t base = seen_;
      seen_ += in.rows;
      if (kind_ == StageKind::Take) {
        int64_t keep = n_ < 0 ? in.rows : std::min(in.rows, n_ - base);
        out = keep == in.rows ? std::move(in) : slice_rows(in, 0, keep);
      } else if (kind_ == StageKind::Skip) {
        int64_t from = std::max<int64_t>(0, n_ - base);
        if (from >= in.rows) continue;
        out = from == 0 ? std::move(in) : slice_rows(in, from, in.rows);
      } else {
        std::vector<uint8_t> keep(in.rows);
        int64_t any = 0;
        for (int64_t r = 0; r < in.rows; ++r) any += keep[r] = (base + r) % n_ == index_;
        if (any == 0) continue;
        out = select_rows(in, keep);
      }
      if (out.rows == 0) continue;
      out.first_index = produced_;
      produced_ += out.rows;
      return true;
    }
  }

 private:
  IteratorPtr input_;
  StageKind kind_ = StageKind::Take;
  int64_t n_ = 0;
  int64_t index_ = 0;
  int64_t seen_ = 0;
};

}  // namespace

IteratorPtr make_take_skip_shard(RunContext& ctx, int stage, IteratorPtr input) {
  return std::make_unique<Positional>(ctx, stage, std::move(input));
}

}  // namespace pipec
