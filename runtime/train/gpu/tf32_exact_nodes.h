// Which conv and dense nodes of a mixed-precision step multiply values that TF32 holds exactly.
//
// mixed_bf16 and mixed_fp16 round every operand a layer multiplies to the 16-bit type (round nodes,
// compiler/train/passes/mixed_precision.cpp) and keep it in f32 storage. TF32, the tensor cores' format
// for f32 data, keeps f32's 8-bit exponent and 10 of its 23 mantissa bits: it holds every bf16 value
// (7 mantissa bits, the same exponent) and every fp16 value (10 mantissa bits, a narrower exponent)
// exactly. On TF32 tensor cores such a node's products are therefore exact and accumulated in f32 (by
// the tensor cores' adders, whose rounding may differ from IEEE round-to-nearest: errors of f32's order,
// far below the 16-bit rounding the values already carry), several times faster than the f32 engines.
#pragma once

#include <vector>

#include "runtime/model/model_graph.h"

namespace pipec::gpu {

/// Per node of `g`: true for a node cuDNN or cuBLASLt runs (conv2d, conv2d_transpose, dense and their
/// backward kinds) whose two multiplied operands, inputs 0 and 1, are both rounded: outputs of round
/// nodes, or outputs of expr nodes whose function ends them with the round's two casts (a fused round).
/// Anything else (another expr's output, any value of an fp32 graph) is false: its values may need all
/// of f32's mantissa.
std::vector<bool> tf32_exact_nodes(const ModelGraph& g);

}  // namespace pipec::gpu
