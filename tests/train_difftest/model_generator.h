// Random small training cases for the training difftest (tests/train_difftest): from a seed, a `.pipe`
// spec with a model, a loss and an optimizer, the run settings (threads, conv algorithm, batch) and the
// description of the data fields it reads.
//
// The draws cover the whole space with no bias toward a known case: every layer kind (conv2d,
// conv2d_transpose, dense, both window pools, both global pools, upsample2d nearest and bilinear, relu,
// leaky_relu, gelu, tanh, sigmoid, softmax over any axis, batch_norm, layer_norm, dropout, add,
// flatten, concat of two inputs or two branches, blocks with `times`, embedding of integer ids of rank
// 0 to 2 and of the integer types i32, i64 and u8) with random sizes, strides,
// dilations and paddings; every loss with each kind of target it takes (values, probabilities in [0, 1],
// one-hot rows, probability rows, integer class labels); every optimizer with random settings (eps
// log-uniform in [1e-8, 1e-2], beta1, beta2, momentum, weight decay, global_clipnorm) and a constant
// rate or each schedule; every precision; 1 or 2 threads; Winograd (where oneDNN has it) or direct
// convolutions. Shapes are small (at most 10x10 images, a few channels, batches of 1 to 6) so that a
// case takes a fraction of a second.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/dtype.h"
#include "runtime/core/tensor.h"

namespace pipec::train_difftest {

/// What the loss's target holds; the data draws follow it.
enum class TargetKind {
  Values,         // any real numbers (mse, mae, huber)
  Unit,           // numbers in [0, 1], some exactly 0 or 1 (binary_cross_entropy)
  OneHot,         // one 1 per row of the last axis (cross_entropy)
  Probabilities,  // rows of the last axis summing to 1 (cross_entropy)
  Labels,         // integer class labels, the output's shape without its class axis (cross_entropy)
};

const char* target_kind_name(TargetKind k);
/// The kind named by target_kind_name; false for another word.
bool target_kind_from_name(const std::string& name, TargetKind& out);

/// One field of the data: `data/<name>.npy` holds every batch's rows of it.
struct DataField {
  std::string name;
  DType dtype = DType::F32;  // f32; i64 for class labels; i32, i64 or u8 for embedding ids
  Shape shape;               // per example
  double scale = 1;          // float inputs: drawn uniformly in [-scale, scale]
  int64_t ids = 0;           // integer inputs (embedding ids): drawn uniformly from [0, ids)
};

/// How a case runs, besides its spec (case.json in a case folder).
struct CaseSettings {
  uint64_t seed = 0;  // the executors' seed (dropout's masks) and every draw of the case
  int threads = 1;    // the fast executor's oneDNN threads
  bool direct_conv = false;
  /// A mixed_bf16 case's layers on f32 kernels (`--cpu-bf16 emulated`) rather than the default (bf16
  /// kernels where the CPU has bf16 instructions).
  bool emulated_bf16 = false;
  int64_t batch = 4;
  int64_t steps = 20;
  /// Data-parallel replicas the executor under test splits each batch over (`train_difftest
  /// --replicas N`); 1: the fast executor alone.
  int replicas = 1;
};

struct TrainCase {
  std::string spec;  // the text of spec.pipe
  CaseSettings settings;
  std::vector<DataField> inputs;  // in the model call's order
  DataField target;
  TargetKind target_kind = TargetKind::Values;
  int64_t classes = 0;  // Labels: the number of classes
};

/// The case of `seed` (deterministic).
TrainCase generate_train_case(uint64_t seed);

}  // namespace pipec::train_difftest
