// cache(): the first complete pass over the input is kept in memory and replayed by later passes
// (after a repeat). A pass that stops early leaves no cache, as in tf.data.
#include "runtime/exec/stage_factories.h"

namespace pipec {

namespace {

struct CacheStore {
  std::vector<Chunk> chunks;
  bool complete = false;
};

class Cache : public ChunkIterator {
 public:
  Cache(RunContext& ctx, int stage, int64_t epoch) : ChunkIterator(ctx, stage), epoch_(epoch) {
    auto& slot = ctx.shared.at(stage);
    if (!slot) slot = std::make_shared<CacheStore>();
    store_ = std::static_pointer_cast<CacheStore>(slot);
    if (const Value* w = spec().arg("where"); w && w->kind == Value::String)
      throw StageError(spec(), "caching to files is not supported yet; use cache() to cache in memory");
  }

  void save(StateWriter& w) const override {
    w.write_i64(produced_);
    w.write_u32(store_->complete ? 1 : 0);
    w.write_u64(store_->chunks.size());
    for (const Chunk& c : store_->chunks) save_chunk(w, c);
    w.write_u64(replay_pos_);
    w.write_u32(input_ ? 1 : 0);
    if (input_) input_->save(w);
  }
  void restore(StateReader& r) override {
    produced_ = r.read_i64();
    store_->complete = r.read_u32() != 0;
    uint64_t n = r.read_u64();
    store_->chunks.clear();
    for (uint64_t i = 0; i < n; ++i) store_->chunks.push_back(restore_chunk(r));
    replay_pos_ = r.read_u64();
    input_.reset();
    if (r.read_u32()) {
      input_ = build_iterator(ctx_, spec().inputs[0], epoch_);
      input_->restore(r);
    }
  }

 protected:
  bool produce(Chunk& out) override {
    if (store_->complete && !input_) {
      if (replay_pos_ >= store_->chunks.size()) return false;
      out = store_->chunks[replay_pos_++];
      out.epoch = epoch_;
      return true;
    }
    if (!input_) {
      store_->chunks.clear();
      input_ = build_iterator(ctx_, spec().inputs[0], epoch_);
    }
    if (!pull(*input_, out)) {
      store_->complete = true;
      input_.reset();
      replay_pos_ = store_->chunks.size();
      return false;
    }
    store_->chunks.push_back(out);
    return true;
  }

 private:
  int64_t epoch_;
  std::shared_ptr<CacheStore> store_;
  IteratorPtr input_;
  size_t replay_pos_ = 0;
};

}  // namespace

IteratorPtr make_cache(RunContext& ctx, int stage, int64_t epoch) { return std::make_unique<Cache>(ctx, stage, epoch); }

}  // namespace pipec
