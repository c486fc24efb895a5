// sample_from([a, b, ...], weights, seed, stop_on_empty): tf.data's sample_from_datasets. Choice i is
// TensorFlow's own random draw for (weights, seed, i) (runtime/core/tf_sample_stream.h), so the output
// equals tf.data's for the same seed; the rest is the directed interleave shared with choose_from. A
// dataset of weight 0 is never built, as tf.data drops it. The draws do not depend on the epoch: a
// repeat after it sees the same choices every pass, as tf.data's (rerandomize_each_iteration unset).
#include "runtime/core/tf_sample_stream.h"
#include "runtime/exec/stages/directed_interleave.h"

namespace pipec {

namespace {

// The weights the stage was lowered with: one number per dataset, or none (all equal).
std::vector<float> weights_of(const Stage& s, size_t datasets) {
  std::vector<float> w(datasets, 1.0f);
  if (const Value* v = s.arg("weights")) {
    if (v->kind != Value::List || v->items.size() != datasets)
      throw StageError(s, "sample_from needs one weight per dataset");
    for (size_t k = 0; k < datasets; ++k) {
      const Value& x = v->items[k];
      w[k] = static_cast<float>(x.kind == Value::Float ? x.f : static_cast<double>(x.i));
    }
  }
  return w;
}

class SampleFrom : public DirectedInterleave {
 public:
  // `datasets`: the stage's inputs, null where the weight is 0; `chosen`: the datasets a draw names, in
  // order (those of weight > 0), and `weights` theirs.
  SampleFrom(RunContext& ctx, int stage, int64_t epoch, std::vector<IteratorPtr> datasets, std::vector<int64_t> chosen,
             const std::vector<float>& weights, int64_t seed, bool stop_on_empty)
      : DirectedInterleave(ctx, stage, epoch, std::move(datasets), stop_on_empty),
        chosen_(std::move(chosen)),
        stream_(weights, seed) {}

 protected:
  // Never ends by itself: the datasets end it. The base saves how many draws were made.
  std::optional<int64_t> next_choice(int64_t choice) override {
    return chosen_[static_cast<size_t>(stream_.choice(static_cast<uint64_t>(choice)))];
  }

 private:
  std::vector<int64_t> chosen_;
  TfSampleStream stream_;
};

}  // namespace

IteratorPtr make_sample_from(RunContext& ctx, int stage, int64_t epoch) {
  const Stage& s = ctx.plan->stages.at(stage);
  const std::vector<float> all = weights_of(s, s.inputs.size());
  std::vector<IteratorPtr> datasets(s.inputs.size());
  std::vector<int64_t> chosen;
  std::vector<float> weights;
  for (size_t k = 0; k < s.inputs.size(); ++k) {
    if (!(all[k] > 0)) continue;
    datasets[k] = build_iterator(ctx, s.inputs[k], epoch);
    chosen.push_back(static_cast<int64_t>(k));
    weights.push_back(all[k]);
  }
  if (chosen.empty()) throw StageError(s, "sample_from: every weight is 0, so no dataset can be chosen");
  const Value* seed = s.arg("seed");
  const Value* stop = s.arg("stop_on_empty");
  return std::make_unique<SampleFrom>(ctx, stage, epoch, std::move(datasets), std::move(chosen), weights,
                                      seed ? seed->i : static_cast<int64_t>(ctx.seed), stop && stop->b);
}

}  // namespace pipec
