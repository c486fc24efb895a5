// The one way from a spec to plans ready to run:
//
//   check (with -D overrides) -> choose what to compile -> lower -> verify -> optimizer passes (each
//   verified, see run_passes) -> kernels: LLVM (JIT into this process, or an object file for a
//   library) and CUDA for the maps after to(gpu).
//
// A train block compiles the same way: check -> choose the block -> its data pipeline through the steps
// above (with the repeat its length needs) and its model lowered -> the gradient pass -> the
// training-step graph -> its verifier (compile_train.cpp).
//
// Every `pipec` command, the language server, the difftest, the benches and the test helpers go through
// compile(), so the verifier runs at the same points for all of them and a new step is added in one place.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/codegen/llvm/jit.h"
#include "compiler/passes/pass_pipeline.h"
#include "compiler/sema/program.h"
#include "runtime/exec/auto_shard.h"
#include "runtime/exec/pipeline_run.h"
#include "runtime/model/train_program.h"
#include "runtime/plan/plan.h"
#include "runtime/train/loop/train_length.h"

namespace pipec {

/// Native code for the map/filter bodies that run on the CPU.
enum class CpuKernels {
  None,    // every body on the interpreter
  Jit,     // compiled into this process and attached (`pipec run`)
  Object,  // compiled into one object file for a library to link (`pipec build`)
};

struct CompileOptions {
  CheckOptions check;  // import folders, warnings, `-D NAME=VALUE` overrides
  PassOptions passes;  // -O level, disabled passes, a log of every pass
  /// Native CPU kernels. -O0 is the reference (the plan as lowered, on the interpreter), so at -O0
  /// none are made whatever this says.
  CpuKernels cpu_kernels = CpuKernels::None;
  codegen::JitOptions jit;  // CpuKernels::Jit: the kernel cache
  /// The folder a run resolves relative paths against (the spec's), set by `pipec run` and `pipec
  /// explain`. When set (and not CpuKernels::Object), the class_dict.csv files one_hot_colors names
  /// are read before compiling, so its map gets a kernel (compiler/compile/inline_colour_files.h).
  std::string data_dir;
  std::string object_path;  // CpuKernels::Object: where the object file goes
  /// Cpu: no CUDA kernels. Auto and Gpu: every map after to(gpu) gets its generated kernel (the
  /// runtime decides at run time whether a GPU is there to run it).
  DevicePolicy device = DevicePolicy::Cpu;
  /// Called with each pipeline's plan just after it is lowered and verified (and sharded), before any
  /// pass (`pipec explain --passes` prints it).
  std::function<void(const Decl& pipeline, const Plan& lowered)> on_lowered;
  /// multi_worker: compile the plan that worker `index` of `workers` runs (runtime/exec/auto_shard.h),
  /// sharded right after lowering and before any pass, at every -O level, since it changes what the
  /// pipeline yields. Applies to a train block's data (not its validation data) and to every pipeline
  /// compiled; file patterns are counted against data_dir. CompiledPipeline::shard says what was done; a
  /// pipeline that cannot be sharded so (a batch the workers do not divide) is CompileStatus::ShardError.
  struct WorkerShard {
    int64_t workers = 1;
    int64_t index = 0;
  };
  std::optional<WorkerShard> shard;
};

/// What a request compiles.
enum class CompileTarget {
  CheckOnly,        // the checked program and its diagnostics, with every train block's step graph
                    // compiled so that what `pipec run` would refuse is reported (`pipec check`)
  OnePipeline,      // the pipeline named in the request, or the only one, or the one a train block reads
  EveryPipeline,    // each pipeline of the main file, in order, then each train block's step graph
                    // (`pipec explain`)
  Train,            // the train block named in the request, or the only one: its data pipeline (compiled as
                    // OnePipeline compiles one, with the repeat its length needs) and its step graph
  TrainOrPipeline,  // what `pipec run` runs when told neither: Train when the main file has a train
                    // block, OnePipeline otherwise
};

/// Train: which block, and the command line's length, which replaces the block's steps and epochs.
struct TrainRequest {
  std::string block;              // empty: the only train block
  std::optional<int64_t> steps;   // --steps
  std::optional<int64_t> epochs;  // --epochs
};

struct CompileRequest {
  std::string path;                 // the spec; diagnostics name it as given
  std::optional<std::string> text;  // its contents, when they do not come from reading `path`
  CompileTarget target = CompileTarget::OnePipeline;
  std::string pipeline;  // OnePipeline: the name (empty: see CompileTarget)
  TrainRequest train;    // Train and TrainOrPipeline
  CompileOptions options;
};

struct CompiledPipeline {
  const Decl* decl = nullptr;             // in CompileResult::program
  Plan plan;                              // optimized (unless -O0), kernels attached
  std::optional<codegen::JitReport> jit;  // CpuKernels::Jit at -O1: what was compiled, what was not and why
  int object_kernels = 0;                 // CpuKernels::Object: kernels in the object file
  int gpu_kernels = 0;                    // maps that got a CUDA kernel
  std::optional<ShardReport> shard;       // CompileOptions::shard: how this worker's plan was sharded
};

/// A train block's training step (runtime/model/train_program.h).
struct CompiledTrain {
  const Decl* decl = nullptr;   // the train block, in CompileResult::program
  TrainProgram program;         // the step graph (forward, loss, backward, update) and the block's settings
  TrainLength length;           // Train: the run's length, the request's overrides applied
  codegen::JitReport step_jit;  // Train with the JIT: the step graph's expr nodes compiled (one entry each)
};

enum class CompileStatus {
  Ok,
  SpecErrors,     // the diagnostics have errors (exit code 1)
  Unreadable,     // the spec could not be read (exit code 2)
  NoPipeline,     // no pipeline by that name, none at all, or several and no choice (exit code 2)
  NoTrain,        // no train block by that name, none at all, or several and no choice; or a length that
                  // never ends (--epochs of data that repeats forever) (exit code 2)
  InternalError,  // a plan that does not verify, a failed object file: a compiler bug or I/O (exit code 2)
  ShardError,     // CompileOptions::shard: the pipeline cannot be sharded so (exit code 1); `error` is the
                  // diagnostic, "spec.pipe:12:5: error: ..."
};

struct CompileResult {
  std::unique_ptr<Program> program;  // always set; its diagnostics are in program->diags
  CompileStatus status = CompileStatus::Ok;
  std::string error;  // what went wrong, for every status but Ok and SpecErrors
  /// The declaration (in `program`) whose step failed, when `error` is about one: the pipeline whose
  /// plan does not verify, the train block whose step graph does not. The language server shows
  /// `error` on its name.
  const Decl* error_decl = nullptr;
  /// Train: one, the data pipeline (its decl is the pipeline the block names, or the block itself when
  /// its data is written inline).
  std::vector<CompiledPipeline> pipelines;
  /// CheckOnly and EveryPipeline: every train block of the main file, in order; Train: the one.
  std::vector<CompiledTrain> trains;

  bool ok() const { return status == CompileStatus::Ok; }
};

/// Runs the steps for `request`. Stops at the first step that fails and says which in `status`; never
/// throws for a problem of the spec.
CompileResult compile(const CompileRequest& request);

/// What `pipec check` compiles for one spec: CheckOnly with the checker's `options` and the default
/// passes. `text`, when given, is the spec's contents (an editor's unsaved buffer) instead of reading
/// `path`. The language server compiles every buffer with it too, so the editor shows what `pipec check`
/// reports.
CompileRequest check_request(const std::string& path, const CheckOptions& options = {},
                             std::optional<std::string> text = std::nullopt);

/// `compile` for specs written in tests and tools: the text of `path`, the pipeline `name`, default
/// options but the ones given.
CompileResult compile_text(const std::string& path, const std::string& text, const std::string& pipeline,
                           const CompileOptions& options = {});

}  // namespace pipec
