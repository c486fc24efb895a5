// Initial weights as Keras draws them by default: glorot_uniform kernels (uniform in [-limit, limit),
// limit = sqrt(6 / (fan_in + fan_out)), the fans including the receptive field), embedding tables
// uniform in [-0.05, 0.05) (Keras' RandomUniform default), zero biases,
// batch_norm's and layer_norm's gamma 1 and beta 0, moving mean 0 and moving variance 1.
//
// Random draws come from Philox, keyed by the run seed and the parameter's name: parameter `name` draws
// its i-th value from RandomStream(seed, kInitStreamBase ^ fnv1a64(name), 0, 0) as
// (2 * uniform_float() - 1) * limit, in order. So the same spec and seed give the same weights on any
// machine, and a parameter keeps its values when other layers are added or removed.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "runtime/model/model_graph.h"

namespace pipec {

constexpr uint64_t kInitStreamBase = 0x696e6974ull << 32;  // "init"

uint64_t fnv1a64(std::string_view s);

/// Fills the flat buffers (sized here) with the initial parameters and state of `g`.
template <class T>
void initialize_parameters(const ModelGraph& g, uint64_t seed, std::vector<T>& params, std::vector<T>& states);

}  // namespace pipec
