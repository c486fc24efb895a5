// Loop nests -> one CUDA C++ kernel: the second printer of compiler/codegen/loop_nest.h (the first is
// llvm/emit_kernel.cpp), so the GPU runs exactly the op set the JIT compiles, with the same semantics.
//
// The kernel computes one output element per thread: a grid-stride loop runs over rows x elements of
// every result in turn and calls the result's device function `result<j>(ctx, row, i1..ik)`, which
// evaluates the result's expression DAG at that point. Each DAG node becomes one `const T nK = ...;`
// statement (nodes are printed once, in their operands' order). A Reduce node is a sequential inner
// loop in the interpreter's order and accumulator type; nodes that do not depend on its loop variable
// are printed before the loop, so they are computed once. Random nodes compute the one Philox block
// that holds their draw (the prelude's p_uniform_f32/p_uniform_f64/p_normal; random_int scans the
// draws before it when rejections are possible), keyed exactly as the interpreter keys them.
// Constant tables are `__device__` arrays with exact (hexadecimal float) literals.
//
// The kernel ABI is runtime/plan/gpu_kernel.h's: the nest's inputs, then its outputs, then rows,
// first_index, epoch and the run seed.
#pragma once

#include <string>

#include "compiler/codegen/loop_nest.h"

namespace pipec::cuda_codegen {

/// Constant tables over this many elements in all keep the map on the CPU: a table is source text
/// (about 20 bytes per element) and NVRTC's time grows linearly with it: about 1 s per 2^16 elements,
/// so the loop nests' own limit (kMaxTableElements, 2^20) would take some 16 s.
constexpr int64_t kMaxCudaTableElements = 1 << 17;

/// Prints `nest` as CUDA C++ source (the prelude, then the kernel `entry`). Returns false with
/// `why_not` set when the nest cannot be printed (tables over kMaxCudaTableElements elements).
bool print_cuda_kernel(const codegen::LoopNest& nest, const std::string& entry, std::string& source,
                       std::string& why_not);

}  // namespace pipec::cuda_codegen
