// Which values of a mixed_bf16 step graph the fast executor stores as bf16 (2 bytes) on bf16 kernels.
// A value qualifies when it is produced already rounded to bf16 (a round node's output, or an expr
// node's result that its function computes as cast(cast(x: f32, bf16), f32), the fused rounding) and
// every node reading it can read bf16: an expr node with a compiled kernel (which widens on load, a
// 16-bit shift), or conv2d and dense (not conv2d_transpose) reading it as x or, in their backward
// nodes, as x or dy (oneDNN's bf16 primitives read it as it is). The stored bits are the bf16 value the
// f32 buffer held, so training is bit for bit the same; half the bytes move.
//
// One function of the graph, so that the JIT (which compiles the expr kernels' bf16 variants,
// compiler/codegen/llvm/jit.cpp) and the fast executor (which allocates, rounds and calls the layers
// accordingly, and checks that every kernel it needs has its variant) decide alike.
#pragma once

#include <vector>

#include "runtime/model/model_graph.h"

namespace pipec {

/// Per value of `g`: stored as bf16 on bf16 kernels. All false unless `g.precision` is mixed_bf16.
/// Expr readers and producers count only when they have a compiled kernel (GraphNode::native).
std::vector<bool> plan_bf16_storage(const ModelGraph& g);

/// Whether expr node `n`'s result `j` is its function's fused rounding to bf16 (the f32 it holds is a
/// bf16 value).
bool expr_result_rounded_to_bf16(const GraphNode& n, size_t j);

}  // namespace pipec
