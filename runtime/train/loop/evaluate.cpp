#include "runtime/train/loop/evaluate.h"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/ops/kernel.h"
#include "runtime/train/loop/batch_view.h"

namespace pipec {

namespace {

// A tensor's elements as doubles (targets may be any numeric dtype).
std::vector<double> as_doubles(const Tensor& t) {
  Tensor d = t.dtype() == DType::F64 ? t : cast_tensor(t, DType::F64);
  const double* p = d.data<double>();
  return std::vector<double>(p, p + d.num_elements());
}

int64_t argmax(const double* row, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (row[i] > row[best]) best = i;
  return best;
}

}  // namespace

double metric_sum(MetricKind metric, LossKind loss, bool class_labels, const Tensor& output, const Tensor& target) {
  const std::vector<double> y = as_doubles(output), t = as_doubles(target);
  const int64_t batch = output.shape().empty() ? 1 : output.shape()[0];
  if (batch == 0) return 0;
  const int64_t per_example = static_cast<int64_t>(y.size()) / batch;
  const int64_t classes = output.shape().size() > 1 ? output.shape().back() : 1;
  double sum = 0;
  if (metric == MetricKind::Mae || metric == MetricKind::Mse) {
    if (t.size() != y.size())
      throw std::logic_error(
          fmt::format("evaluation: {} needs a target shaped like the output", metric_kind_name(metric)));
    for (int64_t b = 0; b < batch; ++b) {
      double s = 0;
      for (int64_t i = 0; i < per_example; ++i) {
        double d = y[b * per_example + i] - t[b * per_example + i];
        s += metric == MetricKind::Mae ? std::fabs(d) : d * d;
      }
      sum += s / static_cast<double>(per_example);
    }
    return sum;
  }
  // accuracy
  if (loss == LossKind::BinaryCrossEntropy) {
    for (int64_t b = 0; b < batch; ++b) {
      double s = 0;
      for (int64_t i = 0; i < per_example; ++i) s += (y[b * per_example + i] > 0.5) == (t[b * per_example + i] > 0.5);
      sum += s / static_cast<double>(per_example);
    }
    return sum;
  }
  // cross_entropy: the class axis is the output's last.
  const int64_t positions = per_example / classes;
  for (int64_t b = 0; b < batch; ++b) {
    double s = 0;
    for (int64_t p = 0; p < positions; ++p) {
      const int64_t row = b * positions + p;
      int64_t predicted = argmax(&y[row * classes], classes);
      int64_t wanted = class_labels ? static_cast<int64_t>(t[row]) : argmax(&t[row * classes], classes);
      s += predicted == wanted;
    }
    sum += s / static_cast<double>(positions);
  }
  return sum;
}

Evaluator::Evaluator(const TrainProgram& t, const Plan& validation, const RunOptions& options,
                     std::unique_ptr<StepExecutor> executor)
    : t_(t), plan_(validation), options_(options), ex_(std::move(executor)) {
  if (!t.eval || !ex_) throw std::logic_error("evaluation: a train block without validation, or no executor");
}

EvalResult Evaluator::run(const FlatBuffers<float>& weights, int64_t step) {
  const ModelGraph& g = t_.eval->graph;
  ex_->buffers().params = weights.params;
  ex_->buffers().states = weights.states;
  ex_->sync_to_device();
  const ElementInfo& element = plan_.stages.back().element;
  std::vector<size_t> input_columns;
  for (const std::string& f : g.input_fields) input_columns.push_back(field_index(element, f));
  const size_t target_column = field_index(element, g.target_field);
  const GraphNode* loss_node = nullptr;
  for (const GraphNode& n : g.nodes)
    if (n.op == ModelOp::Loss) loss_node = &n;
  if (!loss_node) throw std::logic_error("evaluation: the inference graph has no loss node");
  const LossAttrs& loss = loss_node->attrs_as<LossAttrs>();
  const LossKind loss_kind = loss.kind;
  const bool class_labels = loss.sparse.value_or(false);

  EvalResult r;
  r.step = step;
  std::vector<double> sums(t_.eval->metrics.size(), 0.0);
  double loss_sum = 0;
  PipelineRun run(plan_, options_);
  Chunk c;
  while (run.next(c)) {
    for (int64_t row = 0; row < c.rows; ++row) {
      std::vector<Tensor> inputs;
      for (size_t k = 0; k < input_columns.size(); ++k)
        inputs.push_back(batch_of(c.columns[input_columns[k]], c.rows, row));
      Tensor target = batch_of(c.columns[target_column], c.rows, row);
      const int64_t n = target.shape().empty() ? 1 : target.shape()[0];
      double loss = 0;
      try {
        loss = ex_->run(inputs, &target, static_cast<uint64_t>(step), OpCategory::Loss);
      } catch (const std::exception& e) {
        throw std::runtime_error(
            fmt::format("evaluation after step {}, validation example {}: {}", step, r.examples, e.what()));
      }
      loss_sum += loss * static_cast<double>(n);
      const Tensor output = ex_->host_value(g.output);
      for (size_t m = 0; m < sums.size(); ++m)
        sums[m] += metric_sum(t_.eval->metrics[m], loss_kind, class_labels, output, target);
      r.examples += n;
    }
  }
  if (r.examples == 0)
    throw std::runtime_error(fmt::format("train `{}`: the validation data gave no batch to evaluate on", t_.name));
  r.loss = loss_sum / static_cast<double>(r.examples);
  for (size_t m = 0; m < sums.size(); ++m)
    r.metrics.push_back({metric_kind_name(t_.eval->metrics[m]), sums[m] / static_cast<double>(r.examples)});
  return r;
}

}  // namespace pipec
