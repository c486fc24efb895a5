// The one way from a spec to plans ready to run:
//
//   check (with -D overrides) -> choose what to compile -> lower -> verify -> optimizer passes (each
//   verified, see run_passes) -> kernels: LLVM (JIT into this process, or an object file for a
//   library) and CUDA for the maps after to(gpu).
//
// Every `pipec` command, the difftest, the benches and the test helpers go through compile(), so the
// verifier runs at the same points for all of them and a new step (a train block's compilation, say)
// is added in one place.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/codegen/llvm/jit.h"
#include "compiler/passes/pass_pipeline.h"
#include "compiler/sema/program.h"
#include "runtime/exec/pipeline_run.h"
#include "runtime/plan/plan.h"

namespace pipec {

/// Native code for the map/filter bodies that run on the CPU.
enum class CpuKernels {
  None,    // every body on the interpreter
  Jit,     // compiled into this process and attached (`pipec run`)
  Object,  // compiled into one object file for a library to link (`pipec build`)
};

struct CompileOptions {
  CheckOptions check;    // import folders, warnings, `-D NAME=VALUE` overrides
  PassOptions passes;    // -O level, disabled passes, a log of every pass
  /// Native CPU kernels. -O0 is the reference (the plan as lowered, on the interpreter), so at -O0
  /// none are made whatever this says.
  CpuKernels cpu_kernels = CpuKernels::None;
  codegen::JitOptions jit;   // CpuKernels::Jit: the kernel cache
  std::string object_path;   // CpuKernels::Object: where the object file goes
  /// Cpu: no CUDA kernels. Auto and Gpu: every map after to(gpu) gets its generated kernel (the
  /// runtime decides at run time whether a GPU is there to run it).
  DevicePolicy device = DevicePolicy::Cpu;
  /// Called with each pipeline's plan just after it is lowered and verified, before any pass
  /// (`pipec explain --passes` prints it).
  std::function<void(const Decl& pipeline, const Plan& lowered)> on_lowered;
};

/// What a request compiles. A `train` block (a pipeline feeding a model) will be one more target,
/// compiled by the same steps after its data pipeline.
enum class CompileTarget {
  CheckOnly,      // only the checked program and its diagnostics (`pipec check`)
  OnePipeline,    // the pipeline named in the request, or the only one, or the one a train block reads
  EveryPipeline,  // each pipeline of the main file, in order (`pipec explain`)
};

struct CompileRequest {
  std::string path;                 // the spec; diagnostics name it as given
  std::optional<std::string> text;  // its contents, when they do not come from reading `path`
  CompileTarget target = CompileTarget::OnePipeline;
  std::string pipeline;             // OnePipeline: the name (empty: see CompileTarget)
  CompileOptions options;
};

struct CompiledPipeline {
  const Decl* decl = nullptr;             // in CompileResult::program
  Plan plan;                              // optimized (unless -O0), kernels attached
  std::optional<codegen::JitReport> jit;  // CpuKernels::Jit at -O1: what was compiled, what was not and why
  int object_kernels = 0;                 // CpuKernels::Object: kernels in the object file
  int gpu_kernels = 0;                    // maps that got a CUDA kernel
};

enum class CompileStatus {
  Ok,
  SpecErrors,     // the diagnostics have errors (exit code 1)
  Unreadable,     // the spec could not be read (exit code 2)
  NoPipeline,     // no pipeline by that name, none at all, or several and no choice (exit code 2)
  InternalError,  // a plan that does not verify, a failed object file: a compiler bug or I/O (exit code 2)
};

struct CompileResult {
  std::unique_ptr<Program> program;  // always set; its diagnostics are in program->diags
  CompileStatus status = CompileStatus::Ok;
  std::string error;                 // what went wrong, for every status but Ok and SpecErrors
  std::vector<CompiledPipeline> pipelines;

  bool ok() const { return status == CompileStatus::Ok; }
};

/// Runs the steps for `request`. Stops at the first step that fails and says which in `status`; never
/// throws for a problem of the spec.
CompileResult compile(const CompileRequest& request);

/// `compile` for specs written in tests and tools: the text of `path`, the pipeline `name`, default
/// options but the ones given.
CompileResult compile_text(const std::string& path, const std::string& text, const std::string& pipeline,
                           const CompileOptions& options = {});

}  // namespace pipec
