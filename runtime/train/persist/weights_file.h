// Weights in and out of safetensors files: `pipec run --init` and `--save`, and the tensors of a training
// checkpoint (runtime/train/persist/train_checkpoint.h). A tensor is named as `pipec explain` shows it, and a
// file whose tensors do not fit the model is refused with every mismatch listed.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/model/model_graph.h"
#include "runtime/train/persist/safetensors.h"
#include "runtime/train/step_executor.h"

namespace pipec {

/// --init or --save failed: a file that cannot be read or written, or weights of another model.
class WeightsFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A named tensor of the flat buffers (or of the optimizer's slots) to be filled from a file.
struct TensorSlot {
  std::string name;
  Shape shape;
  float* data = nullptr;
};

/// Every parameter, then every state tensor of `g`, as views of `buffers`.
std::vector<TensorSlot> weight_slots(const ModelGraph& g, FlatBuffers<float>& buffers);

/// Copies the tensors of `f` into `into`. Returns what does not fit, one line each: a tensor missing,
/// one of another shape, one the file has that `into` does not ("`x` is not <owner>", owner e.g. "a
/// parameter of model `net`"). Nothing is copied when something does not fit.
std::vector<std::string> copy_tensors(const SafetensorsFile& f, const std::vector<TensorSlot>& into,
                                      const std::string& owner);

/// "(2 problems):\n  `a` is missing\n  ..." — at most 8 listed.
std::string problems_text(const std::vector<std::string>& problems);

/// Copies the weights of a safetensors file into the buffers; every parameter and state tensor of `g`
/// must be there with its shape, and nothing else. Throws WeightsFileError.
void load_weights(const ModelGraph& g, const std::string& path, FlatBuffers<float>& buffers);
/// Writes every parameter and state tensor of `g`, named as `pipec explain` shows them.
void save_weights(const ModelGraph& g, const std::string& path, const FlatBuffers<float>& buffers,
                  const std::string& train_name);

}  // namespace pipec
