// The JIT: compiles every compilable map/filter stage of a plan to native code with LLVM (ORC LLJIT)
// and attaches it as Stage::native, so the runtime calls the kernel instead of the interpreter.
//
// Per stage: loop nest (compiler/codegen/loop_nest.h) -> LLVM IR (emit_kernel.h) -> O3 for the host
// CPU -> object code (host_compiler.h), or the same object from the disk cache (kernel_cache.h) when
// the IR, host and pipec version are unchanged -> linked into one LLJIT session per plan, which the
// stages' NativeKernel::keep_alive owns. libm and memset/memcpy resolve to this process's functions
// as absolute symbols, so the pipec binary needs no -rdynamic.
#pragma once

#include <string>
#include <vector>

#include "runtime/model/model_graph.h"
#include "runtime/plan/plan.h"

namespace pipec::codegen {

struct JitOptions {
  bool use_cache = true;
  std::string cache_dir;  // empty: default_cache_dir()
};

struct StageJitStatus {
  int stage = -1;
  std::vector<int> within;  // a stage of a flat_map's inner pipeline: the flat_map stages holding it, outermost first
  bool native = false;      // a kernel is attached
  bool from_cache = false;  // ... loaded from the disk cache
  double compile_ms = 0;    // time in LLVM (0 for cache hits)
  std::string why_not;      // when !native: what kept it on the interpreter

  /// "stage 3", or "stage 1 of flat_map 2's pipeline" for one in an inner pipeline.
  std::string where() const;
};

struct JitReport {
  std::vector<StageJitStatus> stages;  // one per map/filter stage, those of flat_maps' inner pipelines too
  int compiled = 0;                    // kernels compiled by LLVM in this call
  int cached = 0;                      // kernels loaded from the cache
  double compile_ms = 0;               // total time of this call (lowering, LLVM, cache, linking)

  /// "compiled 1 kernel in 85 ms", "1 kernel from cache", "no kernels (map@2: op `foo` is not compiled)".
  std::string summary() const;
};

/// Compiles and attaches kernels to every compilable map/filter stage, and to those of each flat_map's
/// inner pipeline (recursively; the flat_map gets a copy of its inner plan with them attached). Never
/// throws for a stage that cannot be compiled: it stays on the interpreter and its status says why.
JitReport attach_native_kernels(Plan& plan, const JitOptions& opts = {});

/// Compiles the expr nodes of a training step graph (element-wise chains: activations and their
/// gradients, the loss's pieces the gradient pass wrote as expressions) the same way, per example
/// with the batch as rows, and attaches them as GraphNode::native for the fast executor. The report's
/// `stage` is the node's index. Nodes that cannot be compiled (a random op, a dtype other than f32, an
/// op the loop nests do not lower) stay on the interpreter. The optimizer_step node gets its update as
/// one generated loop over the flat buffers (emit_optimizer.h; the ABI is runtime/train/math/optimizer.h's).
JitReport attach_step_kernels(ModelGraph& graph, const JitOptions& opts = {});

/// The unoptimized LLVM IR of every compilable map/filter kernel, inner pipelines' too (`pipec explain --llvm`).
std::string kernels_llvm_ir(const Plan& plan);

}  // namespace pipec::codegen
