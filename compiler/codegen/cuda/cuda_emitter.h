// The CUDA code generator for one map body: lowers the ExprFunction to the backend-neutral loop nests
// (compiler/codegen/loop_nest.h, the same lowering the LLVM JIT uses) and prints them as one CUDA C++
// kernel (cuda_printer.h). So the GPU supports exactly the ops the JIT compiles, with the same
// semantics; the values are the interpreter's (runtime/ops) except for the last bits of transcendental
// functions, where CUDA's libdevice and the host libm differ by an ulp or two.
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
/// `in_fields`, named `entry`. Bodies the loop nests do not support (see loop_nest.h: f16/bf16, byte
/// strings, unknown dims, argmax, size, ...) come back with the lowering's reason and stay on the CPU.
CudaEmitResult emit_cuda_map(const ExprFunction& fn, const std::vector<std::string>& in_fields,
                             const std::string& entry);

}  // namespace pipec::cuda_codegen
