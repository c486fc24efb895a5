// The optimizer's update over the flat buffers -> one LLVM function with the PipecKernelFn signature
// (runtime/plan/native_kernel.h), the ABI runtime/train/math/optimizer.h describes at OptimizerKernelScalars:
// inputs {g, scalars}, outputs {w, m, v} read and written in place, `rows` elements of each.
//
// The optimizer's kind and its constants (beta1, beta2, eps, momentum, whether weights decay or
// gradients are clipped) are compiled in; what changes every step (the bias-corrected rate, the decay
// factor, the clipping scale) is read from `scalars`. The body is the loop of runtime/train/math/optimizer.cpp
// operation for operation (no fast-math flags, sqrt as the exact intrinsic), so the compiled update
// gives the same weights bit for bit; the O3 pipeline vectorizes it for the host CPU.
#pragma once

#include <string>

#include "runtime/train/math/optimizer.h"

namespace llvm {
class Function;
class Module;
}  // namespace llvm

namespace pipec::codegen {

/// Adds the update of `c` to `module` as an external function named `symbol`.
llvm::Function* emit_optimizer_kernel(const OptimizerConfig& c, llvm::Module& module, const std::string& symbol);

}  // namespace pipec::codegen
