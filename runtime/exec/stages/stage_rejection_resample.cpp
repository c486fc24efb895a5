// rejection_resample(class_fn, target_dist, initial_dist, seed): tf.data's rejection_resample, the same
// elements in the same order. tf.data builds it from datasets that each make their own pass over the
// input, and so does this stage (every pass sees the same elements, the input being deterministic):
//
//   the original branch: every element in order;
//   the filtered branch: element i kept when the filter's uniform draw number i is below the acceptance
//     of its class (runtime/core/tf_resample.h);
//   the mixing: choice k takes the original branch with weight m, the filtered one with 1 - m, drawn as
//     sample_from_datasets draws (TfSampleStream::choice_with), and ends at the first branch that ends.
//
// Without initial_dist the acceptances and m come from the estimate at each position: the filtered
// branch needs it at its own position, the mixing at its choice number, so each reads the classes in a
// pass of its own (an estimate at i looks ahead to the end of i's batch of 32). With initial_dist they
// are constants; tf.data then skips the mixing when m is 1 (the input unchanged) or 0 (the filtered
// branch alone), and so does this stage.
#include <fmt/format.h>

#include <cstring>

#include "runtime/core/tf_resample.h"
#include "runtime/core/tf_sample_stream.h"
#include "runtime/exec/chunk_builder.h"
#include "runtime/exec/stage_factories.h"
#include "runtime/exec/stages/map_apply.h"
#include "runtime/ops/kernel.h"

namespace pipec {

namespace {

std::vector<float> distribution_arg(const Stage& s, const char* name) {
  std::vector<float> out;
  if (const Value* v = s.arg(name))
    for (const Value& x : v->items) out.push_back(static_cast<float>(x.as_double()));
  return out;
}

// One pass over the input with each element's class; `keep_rows`: the elements too, not only classes.
class ClassPass {
 public:
  ClassPass(const RunContext& ctx, const Stage& stage, IteratorPtr input, const std::vector<std::string>& fields,
            int64_t classes, bool keep_rows)
      : ctx_(ctx), stage_(stage), input_(std::move(input)), fields_(fields), classes_(classes), keep_rows_(keep_rows) {}

  // Whether an element is left; `pull` is the owner's (its time is the input's).
  template <class Pull>
  bool ready(Pull&& pull) {
    while (offset_ >= static_cast<int64_t>(pending_classes_.size())) {
      if (ended_) return false;
      Chunk c;
      if (!pull(*input_, c)) {
        ended_ = true;
        rows_ = Chunk{};
        pending_classes_.clear();
        offset_ = 0;
        return false;
      }
      pending_classes_ = classes_of(c);
      offset_ = 0;
      if (keep_rows_) rows_ = std::move(c);
    }
    return true;
  }
  int64_t klass() const { return pending_classes_[static_cast<size_t>(offset_)]; }
  const Chunk& rows() const { return rows_; }
  int64_t row() const { return offset_; }
  // Moves past the current element.
  void advance() {
    ++offset_;
    ++position_;
  }
  int64_t position() const { return position_; }
  int64_t rows_held() const { return keep_rows_ ? static_cast<int64_t>(pending_classes_.size()) - offset_ : 0; }
  const ChunkIterator* input() const { return ended_ ? nullptr : input_.get(); }

  // The input's state, the classes (and elements) pulled but not handed on, and the position.
  void save(StateWriter& w) const {
    w.write_u32(ended_ ? 1 : 0);
    w.write_i64(position_);
    if (ended_) return;
    input_->save(w);
    w.write_vector(std::vector<int64_t>(pending_classes_.begin() + offset_, pending_classes_.end()));
    if (keep_rows_) save_chunk(w, offset_ < rows_.rows ? slice_rows(rows_, offset_, rows_.rows) : Chunk{});
  }
  void restore(StateReader& r) {
    ended_ = r.read_u32() != 0;
    position_ = r.read_i64();
    offset_ = 0;
    pending_classes_.clear();
    rows_ = Chunk{};
    if (ended_) return;
    input_->restore(r);
    pending_classes_ = r.read_vector<int64_t>();
    if (keep_rows_) rows_ = restore_chunk(r);
    if (keep_rows_ && rows_.rows != static_cast<int64_t>(pending_classes_.size()))
      throw r.error("rejection_resample: the saved elements and classes differ in number");
  }

 private:
  // The class of every row of `c` (the next input chunk), each checked to be in [0, classes).
  std::vector<int64_t> classes_of(const Chunk& c) const {
    if (c.rows == 0) return {};
    const Stage& s = stage_;
    std::vector<Column> result;
    try {
      result = apply_stage_function(ctx_, s, fields_, c, true);
    } catch (const StageError&) {
      throw;
    } catch (const std::exception& e) {
      throw StageError::from(s, e);
    }
    const Column& col = result.at(0);
    // The interpreter may give each row a tensor of its own, a compiled kernel one for the chunk.
    std::vector<int64_t> out(static_cast<size_t>(c.rows));
    if (col.ragged) {
      for (int64_t r = 0; r < c.rows; ++r)
        out[static_cast<size_t>(r)] = cast_tensor(col.rows.at(static_cast<size_t>(r)), DType::I64).data<int64_t>()[0];
    } else {
      const Tensor all = cast_tensor(col.dense, DType::I64);
      std::memcpy(out.data(), all.data<int64_t>(), out.size() * sizeof(int64_t));
    }
    for (int64_t r = 0; r < c.rows; ++r) {
      const int64_t k = out[static_cast<size_t>(r)];
      if (k < 0 || k >= classes_)
        throw StageError(s, fmt::format("element {} of the input has class {}, outside [0, {}): target_dist has {} "
                                        "class{}",
                                        position_ + r, k, classes_, classes_, classes_ == 1 ? "" : "es"));
    }
    return out;
  }

  const RunContext& ctx_;
  const Stage& stage_;
  IteratorPtr input_;
  const std::vector<std::string>& fields_;
  int64_t classes_;
  bool keep_rows_;
  bool ended_ = false;
  Chunk rows_;
  std::vector<int64_t> pending_classes_;
  int64_t offset_ = 0;
  int64_t position_ = 0;  // elements handed on so far
};

// The estimate at increasing positions: the counts after each batch of 32 classes of its own pass.
class Estimate {
 public:
  Estimate(ClassPass pass, const std::vector<float>& target)
      : pass_(std::move(pass)), target_(target), counts_(target.size(), kTfEstimateSmoothing) {}

  // The acceptances at input position `i` (never less than the last asked for); null when i's batch
  // holds no element (the estimate, like tf.data's, ends with the input's last batch).
  template <class Pull>
  const TfAcceptance* at(int64_t i, Pull&& pull) {
    while (batches_ <= i / kTfEstimateBatch) {
      int64_t seen = 0;
      for (; seen < kTfEstimateBatch && pass_.ready(pull); ++seen) {
        ++counts_[static_cast<size_t>(pass_.klass())];
        pass_.advance();
      }
      if (seen == 0) return nullptr;
      ++batches_;
      current_ = tf_acceptance(tf_estimated_distribution(counts_), target_);
    }
    return &current_;
  }

  void save(StateWriter& w) const {
    pass_.save(w);
    w.write_i64(batches_);
    w.write_vector(counts_);
  }
  void restore(StateReader& r) {
    pass_.restore(r);
    batches_ = r.read_i64();
    counts_ = r.read_vector<int64_t>();
    if (counts_.size() != target_.size()) throw r.error("rejection_resample: the saved counts are not one per class");
    if (batches_ > 0) current_ = tf_acceptance(tf_estimated_distribution(counts_), target_);
  }
  const ChunkIterator* input() const { return pass_.input(); }

 private:
  ClassPass pass_;
  const std::vector<float>& target_;
  std::vector<int64_t> counts_;
  int64_t batches_ = 0;  // batches folded into counts_
  TfAcceptance current_;
};

class RejectionResample : public ChunkIterator {
 public:
  // Which branches tf.data builds for a given initial distribution.
  enum class Mode { Unchanged, FilteredOnly, Mixed };

  RejectionResample(RunContext& ctx, int stage, int64_t epoch)
      : ChunkIterator(ctx, stage), epoch_(epoch), fields_(function_input_fields(*ctx.plan, stage)) {
    const Stage& s = spec();
    if (!s.fn) throw StageError(s, "without its class function");
    target_ = distribution_arg(s, "target_dist");
    if (target_.empty()) throw StageError(s, "without target_dist");
    const std::vector<float> initial = distribution_arg(s, "initial_dist");
    const Value* seed = s.arg("seed");
    seed2_ = TfSampleStream::truncated_seed(seed ? seed->i : static_cast<int64_t>(ctx.seed));
    const int64_t classes = static_cast<int64_t>(target_.size());
    auto pass = [&](bool rows) {
      return ClassPass(ctx, s, build_iterator(ctx, s.inputs.at(0), epoch), fields_, classes, rows);
    };
    if (!initial.empty()) {
      if (initial.size() != target_.size()) throw StageError(s, "initial_dist and target_dist differ in length");
      fixed_ = tf_acceptance(initial, target_);
      const float m = tf_static_original(initial, target_);
      mode_ = m == 1.0f ? Mode::Unchanged : m == 0.0f ? Mode::FilteredOnly : Mode::Mixed;
    } else {
      mixing_estimate_.emplace(pass(false), target_);
      filter_estimate_.emplace(pass(false), target_);
    }
    if (mode_ != Mode::FilteredOnly) original_.emplace(pass(true));
    if (mode_ != Mode::Unchanged) filtered_.emplace(pass(true));
  }

  void save(StateWriter& w) const override {
    w.write_i64(produced_);
    w.write_i64(choices_);
    w.write_u32(done_ ? 1 : 0);
    for (const std::optional<ClassPass>* p : {&original_, &filtered_})
      if (*p) (*p)->save(w);
    for (const std::optional<Estimate>* e : {&mixing_estimate_, &filter_estimate_})
      if (*e) (*e)->save(w);
  }
  void restore(StateReader& r) override {
    produced_ = r.read_i64();
    choices_ = r.read_i64();
    done_ = r.read_u32() != 0;
    for (std::optional<ClassPass>* p : {&original_, &filtered_})
      if (*p) {
        (*p)->restore(r);
        largest_pulled_ = std::max(largest_pulled_, (*p)->rows_held());
      }
    for (std::optional<Estimate>* e : {&mixing_estimate_, &filter_estimate_})
      if (*e) (*e)->restore(r);
  }
  // The rest of one chunk of each branch's pass (the estimates keep classes, not elements).
  Buffered buffered() const override {
    int64_t rows = 0;
    for (const std::optional<ClassPass>* p : {&original_, &filtered_})
      if (*p) rows += (*p)->rows_held();
    return {rows, 2 * largest_pulled_};
  }
  std::vector<const ChunkIterator*> inputs() const override {
    std::vector<const ChunkIterator*> out;
    for (const std::optional<ClassPass>* p : {&original_, &filtered_})
      if (*p && (*p)->input()) out.push_back((*p)->input());
    for (const std::optional<Estimate>* e : {&mixing_estimate_, &filter_estimate_})
      if (*e && (*e)->input()) out.push_back((*e)->input());
    return out;
  }

 protected:
  bool produce(Chunk& out) override {
    auto pull_in = [this](ChunkIterator& in, Chunk& c) { return pull(in, c); };
    std::optional<ChunkBuilder> rows;
    while (!done_ && (!rows || !rows->full())) {
      ClassPass* from = next_branch(pull_in);
      if (!from) {
        done_ = true;
        break;
      }
      if (!rows) rows.emplace(from->rows(), ctx_.chunk_rows);
      rows->add_row(from->rows(), from->row());
      from->advance();
    }
    if (!rows || rows->rows() == 0) return false;
    out = rows->finish();
    out.first_index = produced_;
    out.epoch = epoch_;
    produced_ += out.rows;
    return true;
  }

 private:
  // The branch whose current element is the next output; null when the output ends.
  template <class Pull>
  ClassPass* next_branch(Pull& pull_in) {
    if (mode_ == Mode::Unchanged) return original_->ready(pull_in) ? &*original_ : nullptr;
    if (mode_ == Mode::FilteredOnly) return next_kept(pull_in) ? &*filtered_ : nullptr;
    const TfAcceptance* a = mixing_estimate_ ? mixing_estimate_->at(choices_, pull_in) : &fixed_;
    if (!a) return nullptr;  // the estimate has ended: so has tf.data's dataset of weights
    const std::optional<int64_t> k =
        TfSampleStream::choice_with({a->original, 1.0f - a->original}, seed2_, static_cast<uint64_t>(choices_));
    if (!k)
      throw StageError(spec(), fmt::format("choice {}: neither branch can be chosen (the original's weight is {})",
                                           choices_, a->original));
    ++choices_;
    // stop_on_empty_dataset = True: the first branch chosen after it ended ends the output.
    if (*k == 0) return original_->ready(pull_in) ? &*original_ : nullptr;
    return next_kept(pull_in) ? &*filtered_ : nullptr;
  }

  // Moves the filtered branch to its next kept element; false when the input ends first. Every element
  // it looks at takes one draw: draw number i is the element's position.
  template <class Pull>
  bool next_kept(Pull& pull_in) {
    while (filtered_->ready(pull_in)) {
      const int64_t i = filtered_->position();
      const TfAcceptance* a = filter_estimate_ ? filter_estimate_->at(i, pull_in) : &fixed_;
      if (!a) return false;
      if (tf_stateful_uniform(seed2_, static_cast<uint64_t>(i)) < a->accept[static_cast<size_t>(filtered_->klass())])
        return true;
      filtered_->advance();
    }
    return false;
  }

  int64_t epoch_;
  std::vector<std::string> fields_;
  std::vector<float> target_;
  uint64_t seed2_ = 0;
  Mode mode_ = Mode::Mixed;
  TfAcceptance fixed_;  // with initial_dist
  std::optional<ClassPass> original_, filtered_;
  std::optional<Estimate> mixing_estimate_, filter_estimate_;  // without it
  int64_t choices_ = 0;
  bool done_ = false;
};

}  // namespace

IteratorPtr make_rejection_resample(RunContext& ctx, int stage, int64_t epoch) {
  return std::make_unique<RejectionResample>(ctx, stage, epoch);
}

}  // namespace pipec
