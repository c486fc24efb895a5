// Loop nests -> one LLVM function with the PipecKernelFn signature (runtime/plan/native_kernel.h).
//
// The exported function `symbol(const PipecKernelArgs*)` loads the input and output pointers and calls
// an internal body function whose pointer parameters are `noalias` (inputs also `readonly`), so that
// the loop vectorizer can assume the buffers do not overlap. The body runs, per output, a loop nest
// `row -> i1 -> ... -> ik` (innermost over contiguous output elements) and evaluates the output's
// expression DAG at each point; constant tables become private global constants. Math the interpreter
// takes from libm (tanh, exp, log, log1p, sin, cos, atan2, pow, fmod, in their float and double
// versions) is called by name, so results are bit-identical to the interpreter's when the same libm
// resolves them; sqrt, floor, ceil, fabs, copysign are LLVM intrinsics (exact IEEE operations).
// Random ops: each row first calls the runtime's pipec_random_fill for the draws it needs (into stack
// buffers), and returns its nonzero code at once if it fails.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "compiler/codegen/loop_nest.h"

namespace llvm {
class Function;
class Module;
class Value;
}  // namespace llvm

namespace pipec::codegen {

/// The fields of the PipecKernelArgs an entry point received: its input and output pointers (i8*), and
/// rows, first_index, epoch, seed (i64), loaded in the entry's block.
struct KernelEntryArgs {
  std::function<llvm::Value*(int)> input, output;
  llvm::Value *rows = nullptr, *first_index = nullptr, *epoch = nullptr, *seed = nullptr;
};

/// The exported entry point `symbol(const PipecKernelArgs*)` of a kernel whose work is in `body`: it
/// unpacks the arguments, calls `body` with what `body_args` picks of them, and returns body's i32 (0
/// when body returns nothing). The one place that knows the PipecKernelArgs layout.
llvm::Function* emit_kernel_entry(llvm::Module& module, const std::string& symbol, llvm::Function* body,
                                  const std::function<std::vector<llvm::Value*>(const KernelEntryArgs&)>& body_args);

/// Adds the kernel for `nest` to `module` as an external function named `symbol`.
llvm::Function* emit_kernel(const LoopNest& nest, llvm::Module& module, const std::string& symbol);

/// The C library functions emitted kernels may call (libm, and memset/memcpy that LLVM's loop idiom
/// pass introduces), with their addresses in this process: the JIT defines them as absolute symbols.
std::vector<std::pair<std::string, void*>> kernel_runtime_symbols();

}  // namespace pipec::codegen
