// The CUDA code generator: one map body (an ExprFunction) -> one CUDA C++ kernel.
//
// Each instruction becomes a device function giving its value at (row, flat element index), so the
// kernel computes every output element in one thread with no intermediate buffers and no per-op
// launches: element-wise ops index their operands through numpy broadcasting, slice/gather/reshape
// and unpack_bits are index arithmetic, constants are tables, random ops compute the Philox block that
// holds their draw. The kernel's grid-stride loop covers rows x elements of every result in turn.
//
// The values follow the reference interpreter (runtime/ops) exactly, except for the last bits of
// transcendental functions (CUDA's libdevice and the host libm differ by an ulp or two).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/plan/expr_function.h"
#include "runtime/plan/gpu_kernel.h"

namespace pipec::cuda_codegen {

struct CudaEmitResult {
  std::shared_ptr<GpuKernel> kernel;  // null when the body cannot be lowered
  std::string error;                  // why not: the op and its spec location
};

/// Generates the kernel for `fn` (a map body) whose parameters read fields of an element with fields
/// `in_fields`, named `entry`. Bodies with ops, dtypes (f16, bf16, byte strings) or shapes (unknown
/// dims) the generator does not handle come back with an error and stay on the CPU.
CudaEmitResult emit_cuda_map(const ExprFunction& fn, const std::vector<std::string>& in_fields, const std::string& entry);

}  // namespace pipec::cuda_codegen
