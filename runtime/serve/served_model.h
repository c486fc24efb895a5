// A trained model served on the CPU: the per-example preprocessing cut from its training data (a plan
// of the source's fields, then the maps up to the model's inputs: compiler/compile/serving_plan.h) and
// the model's forward pass in inference mode (TrainProgram::inference) on the fast executor, with the
// trained weights. What a library built by `pipec build --train` runs behind pipe_predict
// (runtime/capi/pipe.h), and what a test runs in-process against `pipec run`'s evaluation.
//
// predict() may be called from several threads at once: each call takes an executor of its own from a
// pool (one is made the first time a call finds none idle), so concurrent requests never wait for each
// other and a request never sees another's activations. The weights are copied into each executor.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/core/tensor.h"
#include "runtime/model/model_graph.h"
#include "runtime/plan/plan.h"
#include "runtime/train/step_executor.h"

namespace pipec {

/// A request that cannot be served (inputs of the wrong count, dtype or shape, data the preprocessing
/// rejects), or a model that cannot be opened (weights that do not fit). The message says which input
/// or tensor and why.
class ServeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One input of a request: a field of the source's records, [rows, ...shape] of `dtype`.
struct ServedField {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;  // one example's
};

struct ServedModelOptions {
  int threads = 0;  // oneDNN threads per request; 0: one per core
};

class ServedModel {
 public:
  /// `preprocessing`: stage 0 the source (its element's fields are the request's inputs), then maps
  /// whose native kernels, when they have a symbol, are bound already (fn set) or run on the
  /// interpreter. `graph`: the inference graph. `weights`: its parameters and moving statistics.
  ServedModel(Plan preprocessing, ModelGraph graph, FlatBuffers<float> weights, ServedModelOptions options = {});
  ~ServedModel();

  const std::vector<ServedField>& inputs() const { return inputs_; }
  /// The prediction of one example: dtype and shape (the model's output).
  const ServedField& output() const { return output_; }
  const ModelGraph& graph() const { return graph_; }
  /// Maps of the preprocessing that run compiled code.
  int compiled_kernels() const;

  /// The model's outputs [rows, ...] for `inputs` (one per inputs(), in order, each [rows, ...]).
  /// Thread-safe. Throws ServeError.
  Tensor predict(const std::vector<Tensor>& inputs);
  /// The preprocessing alone: the model's input tensors for a request (tests compare them).
  std::vector<Tensor> preprocess(const std::vector<Tensor>& inputs) const;

 private:
  std::unique_ptr<StepExecutor> take_executor();
  void give_back(std::unique_ptr<StepExecutor> ex);

  Plan plan_;
  ModelGraph graph_;
  FlatBuffers<float> weights_;
  ServedModelOptions options_;
  std::vector<ServedField> inputs_;
  ServedField output_;
  std::mutex mu_;
  std::vector<std::unique_ptr<StepExecutor>> idle_;
};

}  // namespace pipec
