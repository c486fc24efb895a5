// The FLOP rules model_ops.def names in its `flops` column: each counts one node's floating-point
// operations per example (per step for the Update kinds, which run once a step). A multiply-add counts
// two; other element-wise work one per element (a few for the ops that make several passes); backward
// kinds count what their loops compute. The counts describe the math, not any executor's speed.
#pragma once

#include "runtime/model/model_graph.h"

namespace pipec::flops_rules {

inline int64_t input_elements(const ModelGraph& g, const GraphNode& n, size_t k) {
  return g.values.at(n.inputs.at(k)).elements_per_example();
}
inline int64_t output_elements(const ModelGraph& g, const GraphNode& n, size_t k) {
  return g.values.at(n.outputs.at(k)).elements_per_example();
}

/// K per element of the first input, or of the first output.
template <int K>
int64_t per_input(const ModelGraph& g, const GraphNode& n) {
  return K * input_elements(g, n, 0);
}
template <int K>
int64_t per_output(const ModelGraph& g, const GraphNode& n) {
  return K * output_elements(g, n, 0);
}

/// Not counted (a cast: round nodes, as casts in expr nodes).
int64_t none(const ModelGraph& g, const GraphNode& n);
/// An expr node: one per element of every instruction that computes (not inputs, constants, data
/// movement or casts).
int64_t expr(const ModelGraph& g, const GraphNode& n);
int64_t conv2d(const ModelGraph& g, const GraphNode& n);
int64_t conv2d_backward_input(const ModelGraph& g, const GraphNode& n);
int64_t conv2d_backward_kernel(const ModelGraph& g, const GraphNode& n);
int64_t conv2d_transpose(const ModelGraph& g, const GraphNode& n);
int64_t conv2d_transpose_backward_input(const ModelGraph& g, const GraphNode& n);
int64_t conv2d_transpose_backward_kernel(const ModelGraph& g, const GraphNode& n);
int64_t dense(const ModelGraph& g, const GraphNode& n);
int64_t dense_backward_input(const ModelGraph& g, const GraphNode& n);
int64_t dense_backward_kernel(const ModelGraph& g, const GraphNode& n);
/// max_pool2d, avg_pool2d: the window's size per output element; their backward per element of dy.
int64_t pool2d(const ModelGraph& g, const GraphNode& n);
int64_t pool2d_backward(const ModelGraph& g, const GraphNode& n);
/// upsample2d and its backward: one per upsampled element (nearest), 8 per element of the larger image
/// (bilinear).
int64_t upsample2d(const ModelGraph& g, const GraphNode& n);
/// One add per element of dy (the rows added into the embeddings' gradient); the forward lookup is
/// data movement (`none`).
int64_t embedding_backward(const ModelGraph& g, const GraphNode& n);
/// 12 per parameter, per step.
int64_t optimizer_step(const ModelGraph& g, const GraphNode& n);

}  // namespace pipec::flops_rules
