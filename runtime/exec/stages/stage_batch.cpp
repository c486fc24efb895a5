// batch(n, drop_remainder), padded_batch(n, padding_value, drop_remainder) and unbatch().
// Each output element is one batch; a chunk carries one batch ([1, n, ...] columns), and the last,
// smaller batch keeps its real size unless drop_remainder is set, exactly as tf.data does.
#include <unistd.h>

#include <optional>

#include <fmt/format.h>

#include "runtime/exec/chunk_builder.h"
#include "runtime/exec/stage_factories.h"
#include "runtime/exec/stages/pad_rows.h"
#include "runtime/exec/stages/stack_rows.h"

namespace pipec {

namespace {

class Batch : public ChunkIterator {
 public:
  Batch(RunContext& ctx, int stage, IteratorPtr input, bool padded)
      : ChunkIterator(ctx, stage), input_(std::move(input)), padded_(padded) {
    const Stage& s = spec();
    size_ = s.arg("size")->i;
    const Value* d = s.arg("drop_remainder");
    drop_ = d && d->b;
    if (const Value* pv = s.arg("padding_value")) padding_ = pv->as_double();
  }

  // The batch's buffers, sized for the whole batch at once: a size too large for memory is said with
  // the stage's location, before the allocation (which would be a bare bad_alloc, or succeed lazily and
  // fail later) when the batch needs more than the machine has.
  void make_builder() {
    int64_t row_bytes = 0;
    for (const Column& c : pending_.columns)
      if (!c.ragged && pending_.rows > 0) row_bytes += static_cast<int64_t>(c.dense.byte_size()) / pending_.rows;
    const double need = static_cast<double>(row_bytes) * static_cast<double>(size_);
    const double have = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
    const std::string what =
        fmt::format("a batch of {} elements of {} bytes each needs {:.3g} GB", size_, row_bytes, need / 1e9);
    if (have > 0 && need > have)
      throw StageError(spec(), fmt::format("{}, more than this machine's memory ({:.3g} GB)", what, have / 1e9));
    try {
      builder_.emplace(pending_, size_);
    } catch (const std::bad_alloc&) {
      builder_.reset();
      throw StageError(spec(), what + ": out of memory");
    }
  }

  void save(StateWriter& w) const override {
    w.write_i64(produced_);
    input_->save(w);
    save_chunk(w, offset_ < pending_.rows ? slice_rows(pending_, offset_, pending_.rows) : Chunk{});
    // The rows of the batch being built: those in the builder come before any in rows_.
    bool building = builder_ && builder_->rows() > 0;
    w.write_u64(rows_.size() + (building ? 1 : 0));
    if (building) {
      Chunk built = builder_->snapshot();
      built.epoch = epoch_;
      save_chunk(w, built);
    }
    for (const Chunk& c : rows_) save_chunk(w, c);
    w.write_u32(done_ ? 1 : 0);
  }
  void restore(StateReader& r) override {
    produced_ = r.read_i64();
    input_->restore(r);
    pending_ = restore_chunk(r);
    offset_ = 0;
    rows_.clear();
    builder_.reset();
    uint64_t n = r.read_u64();
    for (uint64_t i = 0; i < n; ++i) rows_.push_back(restore_chunk(r));
    epoch_ = rows_.empty() ? 0 : rows_.front().epoch;
    done_ = r.read_u32() != 0;
    largest_pulled_ = std::max(largest_pulled_, pending_.rows);  // the rest of one input chunk
  }

  // The rest of one input chunk and a batch short of full.
  Buffered buffered() const override {
    int64_t rows = (offset_ < pending_.rows ? pending_.rows - offset_ : 0) + (builder_ ? builder_->rows() : 0);
    for (const Chunk& c : rows_) rows += c.rows;
    return {rows, largest_pulled_ + size_ - 1};
  }
  std::vector<const ChunkIterator*> inputs() const override { return {input_.get()}; }

 protected:
  bool produce(Chunk& out) override {
    // A batch that lies whole in one input chunk of numeric columns shares that chunk's storage.
    // Otherwise dense input rows are copied once, straight into the batch's own buffers (builder_, kept from
    // batch to batch). Ragged inputs, padded_batch and rows restored from a checkpoint go through
    // rows_, pieces of input chunks that stack() or pad() assemble at the end.
    int64_t have = builder_ ? builder_->rows() : 0;
    for (const Chunk& c : rows_) have += c.rows;
    std::optional<Chunk> whole;  // a batch that lies whole in one input chunk: its rows, not copied
    while (have < size_ && !done_) {
      if (offset_ >= pending_.rows) {
        if (!pull(*input_, pending_)) {
          done_ = true;
          break;
        }
        offset_ = 0;
        continue;
      }
      // (Only when the batch is at least half of the chunk: the view keeps the whole chunk alive, and
      // memory is counted by the batch's own size.)
      if (have == 0 && !padded_ && rows_.empty() && pending_.rows - offset_ >= size_ && 2 * size_ >= pending_.rows &&
          numeric_dense(pending_)) {
        epoch_ = pending_.epoch;
        whole = rows_view(pending_, offset_, offset_ + size_);
        offset_ += size_;
        have = size_;
        break;
      }
      int64_t take = std::min(size_ - have, pending_.rows - offset_);
      if (have == 0) epoch_ = pending_.epoch;  // a batch belongs to the epoch of its first element
      if (!padded_ && rows_.empty() && all_dense(pending_)) {
        if (!builder_ || !builder_->compatible(pending_)) {
          if (builder_ && builder_->rows() > 0) rows_.push_back(builder_->finish());
          make_builder();
        }
        if (rows_.empty()) {
          builder_->add_rows(pending_, offset_, offset_ + take, ctx_.pool);
          offset_ += take;
          have += take;
          continue;
        }
      }
      if (builder_ && builder_->rows() > 0) rows_.insert(rows_.begin(), builder_->finish());
      rows_.push_back(offset_ == 0 && take == pending_.rows ? pending_ : slice_rows(pending_, offset_, offset_ + take));
      offset_ += take;
      have += take;
    }
    if (have == 0 || (have < size_ && drop_)) {
      rows_.clear();
      if (builder_) builder_->finish();
      return false;
    }
    try {
      if (whole) out = as_single_element(std::move(*whole));
      else if (rows_.empty()) out = as_single_element(builder_->finish());
      else out = padded_ ? pad_rows(rows_, have, padding_) : stack_rows(rows_, have);
    } catch (const std::runtime_error& e) {
      throw StageError(spec(), e.what());
    }
    // A batch belongs to the epoch of its elements: maps after it key their random ops by it.
    out.epoch = epoch_;
    rows_.clear();
    out.first_index = produced_;
    produced_ += 1;
    return true;
  }

 private:
  static bool all_dense(const Chunk& c) {
    for (const Column& col : c.columns)
      if (col.ragged) return false;
    return true;
  }
  // Whether every column is one numeric tensor, whose rows can be shared (Tensor::rows_view).
  static bool numeric_dense(const Chunk& c) {
    for (const Column& col : c.columns)
      if (col.ragged || col.dense.dtype() == DType::Bytes || col.dense.rank() < 1) return false;
    return true;
  }
  // Rows [begin, end) of `c`, sharing its storage: a batch of the shuffle's (or a map's) output costs
  // no copy when it lies whole in one of its chunks, as batches of 512 in chunks of 1024 do.
  static Chunk rows_view(const Chunk& c, int64_t begin, int64_t end) {
    Chunk v;
    v.rows = end - begin;
    v.epoch = c.epoch;
    for (const Column& col : c.columns) v.columns.push_back(Column{false, col.dense.rows_view(begin, end), {}});
    return v;
  }

  IteratorPtr input_;
  bool padded_;
  int64_t size_ = 1;
  bool drop_ = false;
  double padding_ = 0;
  Chunk pending_;
  int64_t offset_ = 0;
  int64_t epoch_ = 0;  // epoch of the first element of the batch being built
  std::vector<Chunk> rows_;
  std::optional<ChunkBuilder> builder_;  // the batch being built from dense rows
  bool done_ = false;
};

class Unbatch : public ChunkIterator {
 public:
  Unbatch(RunContext& ctx, int stage, IteratorPtr input) : ChunkIterator(ctx, stage), input_(std::move(input)) {}
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
    // Every input row is a batch; its leading dimension becomes rows.
    try {
      out = unstack_rows(in);
    } catch (const std::runtime_error& e) {
      throw StageError(spec(), e.what());
    }
    out.first_index = produced_;
    out.epoch = in.epoch;
    produced_ += out.rows;
    return true;
  }

 private:
  IteratorPtr input_;
};

}  // namespace

IteratorPtr make_batch(RunContext& ctx, int stage, IteratorPtr input, bool padded) {
  return std::make_unique<Batch>(ctx, stage, std::move(input), padded);
}

IteratorPtr make_unbatch(RunContext& ctx, int stage, IteratorPtr input) {
  return std::make_unique<Unbatch>(ctx, stage, std::move(input));
}

}  // namespace pipec
