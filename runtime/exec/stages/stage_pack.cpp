// pack(length, fields, rows_open, truncate): sequence packing as Grain's first-fit packer and seqio's
// trainers do it (tf.data has no such transformation). Every element is an example whose fields are
// 1-D runs of tokens of one length; examples are laid first-fit into rows of exactly `length` tokens:
// an example goes to the oldest open row with room for it, or opens a new row, and when `rows_open`
// rows are open already the oldest is handed out first. A row that is exactly full is handed out at once;
// when the input ends the open rows follow, oldest first. Each row adds `segment_ids` (1, 2, ... per
// example in the row, 0 for padding) and `positions` (0-based within its example, 0 for padding);
// padding tokens are 0. The placement depends on nothing but the order of the input, so threads and
// chunk sizes never change the rows; a checkpoint holds the open rows and those not handed out yet.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>

#include <fmt/format.h>

#include "runtime/exec/stage_factories.h"

namespace pipec {

namespace {

// One row being filled (or filled, waiting to be handed out): the tokens of every packed field, then
// segment_ids and positions, each a [length] tensor; the tokens past `used` are padding.
struct Row {
  std::vector<Tensor> columns;
  int64_t used = 0;
  int32_t segments = 0;
  int64_t epoch = 0;  // a row belongs to the epoch of its first example
};

class Pack : public ChunkIterator {
 public:
  Pack(RunContext& ctx, int stage, IteratorPtr input) : ChunkIterator(ctx, stage), input_(std::move(input)) {
    const Stage& s = spec();
    length_ = s.arg("length")->i;
    if (const Value* v = s.arg("rows_open")) rows_open_ = v->i;
    const Value* t = s.arg("truncate");
    truncate_ = t && t->b;
    // The output's fields: the packed ones, in the input's order, then segment_ids and positions.
    for (const Field& f : s.element.fields) dtypes_.push_back(f.type->dtype);
    if (dtypes_.size() < 3) throw StageError(s, "without fields to pack");
    packed_fields_ = dtypes_.size() - 2;
  }

  // The open rows (oldest first) and the rows handed to ready_ but not out yet: with the input's state,
  // all a resumed run needs.
  void save(StateWriter& w) const override {
    w.write_i64(produced_);
    input_->save(w);
    w.write_u32(input_done_ ? 1 : 0);
    for (const std::deque<Row>* rows : {&open_, &ready_}) {
      w.write_u64(rows->size());
      for (const Row& row : *rows) save_row(w, row);
    }
  }
  void restore(StateReader& r) override {
    produced_ = r.read_i64();
    input_->restore(r);
    input_done_ = r.read_u32() != 0;
    for (std::deque<Row>* rows : {&open_, &ready_}) {
      rows->clear();
      const uint64_t n = r.read_u64();
      if (n > (1u << 30)) throw r.error("pack: row count out of range");
      for (uint64_t k = 0; k < n; ++k) rows->push_back(restore_row(r));
    }
    largest_pulled_ = std::max(largest_pulled_, static_cast<int64_t>(ready_.size()));
  }

  // At most rows_open rows are open; one input chunk hands at most one row per example to ready_.
  Buffered buffered() const override {
    return {static_cast<int64_t>(open_.size() + ready_.size()), rows_open_ + std::max<int64_t>(1, largest_pulled_)};
  }
  std::vector<const ChunkIterator*> inputs() const override { return {input_.get()}; }

 protected:
  bool produce(Chunk& out) override {
    while (ready_.empty()) {
      if (!input_done_) {
        Chunk in;
        if (pull(*input_, in)) {
          add(in);
          continue;
        }
        input_done_ = true;
      }
      if (open_.empty()) return false;
      while (!open_.empty()) {
        ready_.push_back(std::move(open_.front()));
        open_.pop_front();
      }
    }
    hand_out(out);
    return true;
  }

 private:
  // Places every example of `in`, in order.
  void add(const Chunk& in) {
    std::vector<Tensor> tokens(packed_fields_);
    for (int64_t r = 0; r < in.rows; ++r) {
      const int64_t element = in.first_index + r;
      int64_t n = -1;
      for (size_t f = 0; f < packed_fields_; ++f) {
        tokens[f] = column_row(in.columns.at(f), r);
        const Field& field = spec().element.fields[f];
        if (tokens[f].rank() != 1)
          throw StageError(spec(), fmt::format("element {}: field `{}` has shape {}, not a 1-D run of tokens", element,
                                               field.name, shape_to_string(tokens[f].shape())));
        const int64_t len = tokens[f].shape()[0];
        if (n >= 0 && len != n)
          throw StageError(spec(), fmt::format("element {}: field `{}` has {} tokens but `{}` has {}; the fields "
                                               "packed together must be equally long",
                                               element, field.name, len, spec().element.fields[0].name, n));
        n = len;
      }
      if (n > length_ && !truncate_)
        throw StageError(spec(), fmt::format("element {} is {} tokens long, longer than a row of {} (truncate = true "
                                             "keeps its first {} tokens)",
                                             element, n, length_, length_));
      n = std::min(n, length_);
      if (n > 0) place(tokens, n, in.epoch);  // an empty example has no token to carry its segment id
    }
  }

  // First fit: the oldest open row with room; else a new row (a full one goes out at once, and when
  // rows_open rows are open the oldest goes out to make room).
  void place(const std::vector<Tensor>& tokens, int64_t n, int64_t epoch) {
    for (auto it = open_.begin(); it != open_.end(); ++it) {
      if (length_ - it->used < n) continue;
      append(*it, tokens, n);
      if (it->used == length_) {
        ready_.push_back(std::move(*it));
        open_.erase(it);
      }
      return;
    }
    Row row = new_row(epoch);
    append(row, tokens, n);
    if (row.used == length_) {
      ready_.push_back(std::move(row));
      return;
    }
    if (static_cast<int64_t>(open_.size()) == rows_open_) {
      ready_.push_back(std::move(open_.front()));
      open_.pop_front();
    }
    open_.push_back(std::move(row));
  }

  Row new_row(int64_t epoch) const {
    Row row;
    for (DType dt : dtypes_) row.columns.push_back(Tensor::zeros(dt, {length_}));
    row.epoch = epoch;
    return row;
  }

  void append(Row& row, const std::vector<Tensor>& tokens, int64_t n) const {
    for (size_t f = 0; f < packed_fields_; ++f) {
      const size_t w = dtype_size(dtypes_[f]);
      std::memcpy(row.columns[f].raw() + row.used * w, tokens[f].raw(), static_cast<size_t>(n) * w);
    }
    row.segments += 1;
    int32_t* segment_ids = row.columns[packed_fields_].data<int32_t>() + row.used;
    int32_t* positions = row.columns[packed_fields_ + 1].data<int32_t>() + row.used;
    for (int64_t i = 0; i < n; ++i) {
      segment_ids[i] = row.segments;
      positions[i] = static_cast<int32_t>(i);
    }
    row.used += n;
  }

  // The ready rows of the first one's epoch, no more than the largest input chunk held, as one chunk.
  void hand_out(Chunk& out) {
    const int64_t epoch = ready_.front().epoch;
    int64_t k = 0;
    const int64_t most = std::max<int64_t>(1, largest_pulled_);
    while (k < static_cast<int64_t>(ready_.size()) && k < most && ready_[static_cast<size_t>(k)].epoch == epoch) ++k;
    out = Chunk{};
    out.rows = k;
    out.epoch = epoch;
    out.first_index = produced_;
    uint64_t tokens = 0;
    for (size_t c = 0; c < dtypes_.size(); ++c) {
      Tensor t = Tensor::empty(dtypes_[c], {k, length_});
      const size_t bytes = static_cast<size_t>(length_) * dtype_size(dtypes_[c]);
      for (int64_t r = 0; r < k; ++r)
        std::memcpy(t.raw() + static_cast<size_t>(r) * bytes, ready_[static_cast<size_t>(r)].columns[c].raw(), bytes);
      out.columns.push_back(Column{false, std::move(t), {}});
    }
    for (int64_t r = 0; r < k; ++r) {
      tokens += static_cast<uint64_t>(ready_.front().used);
      ready_.pop_front();
    }
    produced_ += k;
    ctx_.stats.at(static_cast<size_t>(stage_))->add_packed(tokens, static_cast<uint64_t>(k * length_));
  }

  void save_row(StateWriter& w, const Row& row) const {
    w.write_i64(row.used);
    w.write_i64(row.segments);
    w.write_i64(row.epoch);
    Chunk c;
    c.rows = 1;
    for (const Tensor& t : row.columns) c.columns.push_back(Column{true, {}, {t}});
    save_chunk(w, c);
  }
  Row restore_row(StateReader& r) const {
    Row row;
    row.used = r.read_i64();
    const int64_t segments = r.read_i64();
    row.epoch = r.read_i64();
    if (row.used < 0 || row.used > length_ || segments < 0 || segments > row.used)
      throw r.error("pack: a saved row's counts are out of range");
    row.segments = static_cast<int32_t>(segments);
    Chunk c = restore_chunk(r);
    if (c.columns.size() != dtypes_.size()) throw r.error("pack: a saved row has the wrong number of fields");
    for (size_t k = 0; k < dtypes_.size(); ++k) {
      const Column& col = c.columns[k];
      if (!col.ragged || col.rows.size() != 1 || col.rows[0].dtype() != dtypes_[k] ||
          col.rows[0].shape() != Shape{length_})
        throw r.error("pack: a saved row does not match the stage's fields");
      row.columns.push_back(col.rows[0]);
    }
    return row;
  }

  IteratorPtr input_;
  int64_t length_ = 1;         // tokens per row
  int64_t rows_open_ = 8;      // rows first-fit may still add to
  bool truncate_ = false;      // an example longer than a row keeps its first length_ tokens (else an error)
  std::vector<DType> dtypes_;  // the output's fields: packed fields, segment_ids, positions
  size_t packed_fields_ = 0;
  std::deque<Row> open_;   // oldest first
  std::deque<Row> ready_;  // full or pushed out, in the order they are handed out
  bool input_done_ = false;
};

}  // namespace

IteratorPtr make_pack(RunContext& ctx, int stage, IteratorPtr input) {
  return std::make_unique<Pack>(ctx, stage, std::move(input));
}

}  // namespace pipec
