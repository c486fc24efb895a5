// zip(a, b, ...): element i of each input, fields merged; ends with the shortest input.
#include "runtime/exec/chunk_builder.h"
#include "runtime/exec/stage_factories.h"

namespace pipec {

namespace {

class Zip : public ChunkIterator {
 public:
  Zip(RunContext& ctx, int stage, int64_t epoch, std::vector<IteratorPtr> inputs)
      : ChunkIterator(ctx, stage),
        epoch_(epoch),
        inputs_(std::move(inputs)),
        pending_(inputs_.size()),
        offset_(inputs_.size(), 0) {}

  void save(StateWriter& w) const override {
    w.write_i64(produced_);
    for (size_t i = 0; i < inputs_.size(); ++i) {
      inputs_[i]->save(w);
      save_chunk(w, offset_[i] < pending_[i].rows ? slice_rows(pending_[i], offset_[i], pending_[i].rows) : Chunk{});
    }
  }
  void restore(StateReader& r) override {
    produced_ = r.read_i64();
    for (size_t i = 0; i < inputs_.size(); ++i) {
      inputs_[i]->restore(r);
      pending_[i] = restore_chunk(r);
      offset_[i] = 0;
      largest_pulled_ = std::max(largest_pulled_, pending_[i].rows);
    }
  }

  // The rest of one chunk of each input.
  Buffered buffered() const override {
    int64_t rows = 0;
    for (size_t i = 0; i < inputs_.size(); ++i) rows += std::max<int64_t>(0, pending_[i].rows - offset_[i]);
    return {rows, static_cast<int64_t>(inputs_.size()) * largest_pulled_};
  }
  std::vector<const ChunkIterator*> inputs() const override {
    std::vector<const ChunkIterator*> out;
    for (const IteratorPtr& in : inputs_) out.push_back(in.get());
    return out;
  }

 protected:
  bool produce(Chunk& out) override {
    // Make sure every input has rows pending; the output takes as many as all of them have.
    int64_t n = INT64_MAX;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      while (offset_[i] >= pending_[i].rows) {
        if (!pull(*inputs_[i], pending_[i])) return false;
        offset_[i] = 0;
      }
      n = std::min(n, pending_[i].rows - offset_[i]);
    }
    out = Chunk{};
    out.rows = n;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      Chunk part = slice_rows(pending_[i], offset_[i], offset_[i] + n);
      offset_[i] += n;
      for (Column& c : part.columns) out.columns.push_back(std::move(c));
    }
    out.first_index = produced_;
    out.epoch = epoch_;
    produced_ += n;
    return true;
  }

 private:
  int64_t epoch_;
  std::vector<IteratorPtr> inputs_;
  std::vector<Chunk> pending_;
  std::vector<int64_t> offset_;
};

}  // namespace

IteratorPtr make_zip(RunContext& ctx, int stage, int64_t epoch, std::vector<IteratorPtr> inputs) {
  return std::make_unique<Zip>(ctx, stage, epoch, std::move(inputs));
}

}  // namespace pipec
