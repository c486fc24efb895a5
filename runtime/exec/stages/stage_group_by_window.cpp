// group_by_window(key, window_size, reduce) and bucket_by_length(length, boundaries, batch_sizes, ...):
// tf.data's group_by_window, and its bucket_by_sequence_length, which is a group_by_window keyed by
// bucket. Each element goes to the group of its key; a group that reaches its window size is reduced
// at once (batched, or padded and batched) and its batches are the next elements. When the input ends,
// the groups left are reduced in increasing key order, as tf.data's (a std::map there) are. The
// function (the key, or the length) runs on whole input chunks, on the thread that pulls: the order of
// the output depends on nothing but the input's.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "runtime/exec/stage_factories.h"
#include "runtime/exec/stages/map_apply.h"
#include "runtime/exec/stages/pad_rows.h"
#include "runtime/exec/stages/stack_rows.h"
#include "runtime/ops/kernel.h"

namespace pipec {

namespace {

constexpr StackNames kGroupStack{"batch", "use padded_batch in reduce"};

class GroupByWindow : public ChunkIterator {
 public:
  GroupByWindow(RunContext& ctx, int stage, IteratorPtr input, bool buckets)
      : ChunkIterator(ctx, stage), input_(std::move(input)), buckets_(buckets) {
    const Stage& s = spec();
    if (!s.fn) throw StageError(s, "without its function");
    in_fields_ = function_input_fields(*ctx.plan, stage);
    const Value* drop = s.arg(buckets ? "drop_remainder" : "reduce_drop_remainder");
    drop_ = drop && drop->b;
    const Value* pv = s.arg(buckets ? "padding_value" : "reduce_padding_value");
    if (pv) padding_ = pv->as_double();
    if (buckets) {
      padded_ = true;
      if (const Value* b = s.arg("boundaries"))
        for (const Value& v : b->items) boundaries_.push_back(v.i);
      for (const Value& v : s.arg("batch_sizes")->items) sizes_.push_back(v.i);
      const Value* to_boundary = s.arg("pad_to_bucket_boundary");
      to_boundary_ = to_boundary && to_boundary->b;
      plain_batch_ = *std::max_element(sizes_.begin(), sizes_.end());
    } else {
      padded_ = s.arg("reduce")->s == "padded_batch";
      window_ = s.arg("window_size")->i;
      reduce_size_ = s.arg("reduce_size")->i;
    }
  }

  // Every group's elements (in key order, each with its epoch) and the batches reduced but not yet
  // handed out: with the input's state, all a resumed run needs.
  void save(StateWriter& w) const override {
    w.write_i64(produced_);
    input_->save(w);
    w.write_u32(input_done_ ? 1 : 0);
    w.write_u64(groups_.size());
    for (const auto& [key, rows] : groups_) {
      w.write_i64(key);
      w.write_u64(rows.size());
      for (const Chunk& c : rows) save_chunk(w, c);
    }
    w.write_u64(ready_.size());
    for (const Chunk& c : ready_) save_chunk(w, c);
  }
  void restore(StateReader& r) override {
    produced_ = r.read_i64();
    input_->restore(r);
    input_done_ = r.read_u32() != 0;
    groups_.clear();
    lengths_.clear();
    ready_.clear();
    held_ = 0;
    const uint64_t n = r.read_u64();
    for (uint64_t k = 0; k < n; ++k) {
      const int64_t key = r.read_i64();
      std::vector<Chunk>& rows = groups_[key];
      const uint64_t m = r.read_u64();
      for (uint64_t j = 0; j < m; ++j) rows.push_back(restore_chunk(r));
      // The checkpoint holds no lengths (they only feed the padding figures): batches with these rows
      // are left out of them.
      lengths_[key].assign(m, -1);
      held_ += static_cast<int64_t>(m);
    }
    const uint64_t ready = r.read_u64();
    for (uint64_t k = 0; k < ready; ++k) ready_.push_back(restore_chunk(r));
    // The batches ready came from one input chunk, at most one per row of it.
    largest_pulled_ = std::max(largest_pulled_, static_cast<int64_t>(ready));
  }

  // The groups' elements and the batches of one input chunk's full windows. bucket_by_length's buckets
  // each hold less than their batch size; group_by_window's keys are not known in advance.
  Buffered buffered() const override {
    const int64_t rows = held_ + static_cast<int64_t>(ready_.size());
    if (!buckets_) return {rows, kUnbounded};
    int64_t bound = largest_pulled_;
    for (int64_t s : sizes_) bound += s - 1;
    return {rows, bound};
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
        if (buckets_ && plain_rows_ > 0 && !drop_) count_plain_batch();
      }
      if (groups_.empty()) return false;
      reduce(groups_.begin());
    }
    out = std::move(ready_.front());
    ready_.pop_front();
    out.first_index = produced_;
    produced_ += 1;
    return true;
  }

 private:
  // Each row of `in` joins its key's group; a group that is full is reduced.
  void add(const Chunk& in) {
    if (in.rows == 0) return;
    std::vector<Column> result;
    try {
      result = apply_stage_function(ctx_, spec(), in_fields_, in, true);
    } catch (const StageError&) {
      throw;
    } catch (const std::exception& e) {
      throw StageError::from(spec(), e);
    }
    const Tensor values =
        cast_tensor(result.at(0).ragged ? stack_column(result.at(0)) : result.at(0).dense, DType::I64);
    for (int64_t r = 0; r < in.rows; ++r) {
      const int64_t key = buckets_ ? bucket_of(values.data<int64_t>()[r]) : values.data<int64_t>()[r];
      std::vector<Chunk>& rows = groups_[key];
      rows.push_back(slice_rows(in, r, r + 1));
      if (buckets_) {
        const int64_t length = std::max<int64_t>(values.data<int64_t>()[r], 0);
        lengths_[key].push_back(length);
        plain_tokens_ += length;
        plain_longest_ = std::max(plain_longest_, length);
        if (++plain_rows_ == plain_batch_) count_plain_batch();
      }
      held_ += 1;
      if (static_cast<int64_t>(rows.size()) == window_of(key)) reduce(groups_.find(key));
    }
  }

  // A column of one scalar per row as one tensor (the interpreter may give each row its own).
  static Tensor stack_column(const Column& c) {
    Tensor t = Tensor::empty(c.rows.at(0).dtype(), {static_cast<int64_t>(c.rows.size())});
    const size_t w = dtype_size(t.dtype());
    for (size_t r = 0; r < c.rows.size(); ++r) std::memcpy(t.raw() + r * w, c.rows[r].raw(), w);
    return t;
  }

  // The bucket of a length, as tf.data computes it: bucket k holds the lengths in [boundary k - 1,
  // boundary k), the first from the smallest i32 and the last up to the largest (excluded).
  int64_t bucket_of(int64_t length) const {
    constexpr int64_t lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
    if (length < lo || length >= hi)
      throw StageError(spec(),
                       fmt::format("an element's length is {}, outside the buckets' range [{}, {})", length, lo, hi));
    int64_t k = 0;
    while (k < static_cast<int64_t>(boundaries_.size()) && length >= boundaries_[static_cast<size_t>(k)]) ++k;
    return k;
  }

  int64_t window_of(int64_t key) const { return buckets_ ? sizes_.at(static_cast<size_t>(key)) : window_; }

  // The window's batches: tf.data's reduce_func, `window.batch(n)` or `window.padded_batch(n, ...)`;
  // bucket_by_length's window is one padded batch of its bucket's size.
  void reduce(std::map<int64_t, std::vector<Chunk>>::iterator group) {
    const int64_t key = group->first;
    // tf.data asserts this when it pads the last bucket's window, after the batches before it.
    if (buckets_ && to_boundary_ && key == static_cast<int64_t>(boundaries_.size()))
      throw StageError(spec(), fmt::format("with pad_to_bucket_boundary every element's length must be less than "
                                           "the last boundary ({})",
                                           boundaries_.back()));
    std::vector<Chunk> rows = std::move(group->second);
    groups_.erase(group);
    std::vector<int64_t> lengths;
    if (auto l = lengths_.find(key); l != lengths_.end()) {
      lengths = std::move(l->second);
      lengths_.erase(l);
    }
    held_ -= static_cast<int64_t>(rows.size());
    const int64_t n = static_cast<int64_t>(rows.size());
    const int64_t size = buckets_ ? sizes_.at(static_cast<size_t>(key)) : reduce_size_;
    for (int64_t begin = 0; begin < n; begin += size) {
      const int64_t end = std::min(n, begin + size);
      if (drop_ && end - begin < size) break;
      const std::vector<Chunk> part(rows.begin() + begin, rows.begin() + end);
      Chunk batch;
      try {
        batch = padded_ ? pad_rows(part, end - begin, padding_, fixed_shapes(key))
                        : stack_rows(part, end - begin, kGroupStack);
      } catch (const std::runtime_error& e) {
        throw StageError(spec(), e.what());
      }
      batch.epoch = part.front().epoch;  // a batch belongs to the epoch of its first element
      ready_.push_back(std::move(batch));
      if (buckets_) count_bucket_batch(lengths, begin, end, key);
    }
  }

  // The padding figures of a batch of bucket `key` (rows [begin, end) of its window): its lengths and
  // its slots, each row as long as the batch's longest, or the boundary's with pad_to_bucket_boundary.
  void count_bucket_batch(const std::vector<int64_t>& lengths, int64_t begin, int64_t end, int64_t key) {
    if (static_cast<int64_t>(lengths.size()) < end) return;
    uint64_t tokens = 0;
    int64_t longest = 0;
    for (int64_t i = begin; i < end; ++i) {
      const int64_t l = lengths[static_cast<size_t>(i)];
      if (l < 0) return;  // restored from a checkpoint: unknown
      tokens += static_cast<uint64_t>(l);
      longest = std::max(longest, l);
    }
    if (to_boundary_) longest = boundaries_.at(static_cast<size_t>(key)) - 1;
    ctx_.stats.at(static_cast<size_t>(stage_))->add_bucketed(tokens, static_cast<uint64_t>((end - begin) * longest));
  }

  // What padded_batch(plain_batch_) would have made of the input so far: one more batch.
  void count_plain_batch() {
    ctx_.stats.at(static_cast<size_t>(stage_))
        ->add_plain_padded(plain_tokens_, static_cast<uint64_t>(plain_rows_ * plain_longest_), plain_batch_);
    plain_rows_ = plain_longest_ = 0;
    plain_tokens_ = 0;
  }

  // pad_to_bucket_boundary: every dimension the element's type leaves unknown is padded to the
  // bucket's boundary - 1 (tf.data's padded_shapes with None filled in); otherwise none is fixed.
  std::vector<Shape> fixed_shapes(int64_t bucket) const {
    if (!buckets_ || !to_boundary_) return {};
    std::vector<Shape> out;
    const Stage& in = ctx_.plan->stages.at(static_cast<size_t>(spec().inputs.at(0)));
    for (const Field& f : in.element.fields) {
      Shape s = f.type->shape;
      for (int64_t& d : s)
        d = d < 0 ? boundaries_.at(static_cast<size_t>(bucket)) - 1 : -1;  // known dimensions need no padding
      out.push_back(std::move(s));
    }
    return out;
  }

  IteratorPtr input_;
  bool buckets_;         // bucket_by_length: keys are buckets, each with its own batch size
  bool padded_ = false;  // the windows are padded (bucket_by_length, reduce = padded_batch)
  bool drop_ = false;    // a batch short of its size is dropped
  double padding_ = 0;   // what numbers and bools pad with
  bool to_boundary_ = false;
  std::vector<int64_t> boundaries_, sizes_;  // bucket_by_length's
  int64_t window_ = 1, reduce_size_ = 1;     // group_by_window's
  std::vector<std::string> in_fields_;
  std::map<int64_t, std::vector<Chunk>> groups_;     // each key's elements, one row each, in input order
  std::map<int64_t, std::vector<int64_t>> lengths_;  // bucket_by_length: their lengths (-1: restored)
  // padded_batch(plain_batch_) over the input, for the padding figures: the batch being filled.
  int64_t plain_batch_ = 1, plain_rows_ = 0, plain_longest_ = 0;
  uint64_t plain_tokens_ = 0;
  int64_t held_ = 0;         // rows in groups_
  std::deque<Chunk> ready_;  // batches reduced, not yet handed out
  bool input_done_ = false;
};

}  // namespace

IteratorPtr make_group_by_window(RunContext& ctx, int stage, IteratorPtr input) {
  return std::make_unique<GroupByWindow>(ctx, stage, std::move(input), false);
}

IteratorPtr make_bucket_by_length(RunContext& ctx, int stage, IteratorPtr input) {
  return std::make_unique<GroupByWindow>(ctx, stage, std::move(input), true);
}

}  // namespace pipec
