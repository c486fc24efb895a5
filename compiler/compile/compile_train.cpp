#include "compiler/compile/compile_train.h"

#include <fmt/format.h>

#include "compiler/codegen/cuda/attach_step_gpu_kernels.h"
#include "compiler/codegen/llvm/jit.h"
#include "compiler/compile/finish_plan.h"
#include "compiler/lower/lower.h"
#include "compiler/train/lower_train.h"
#include "compiler/train/passes/step_passes.h"

namespace pipec {

namespace {

std::vector<const Decl*> train_blocks(const Program& program) {
  std::vector<const Decl*> out;
  for (const auto& d : program.main().decls)
    if (d->kind == DeclKind::Train) out.push_back(d.get());
  return out;
}

// The train block called `name`; with no name, the only one. Null (with `error` saying why and listing
// the blocks) when there is no such choice.
const Decl* pick_train(const Program& program, const std::string& name, std::string& error) {
  std::vector<const Decl*> blocks = train_blocks(program);
  if (blocks.empty()) {
    error = "the spec declares no train block";
    return nullptr;
  }
  if (!name.empty()) {
    for (const Decl* d : blocks)
      if (d->name == name) return d;
    error = fmt::format("no train block named `{}`; the spec declares:", name);
  } else if (blocks.size() == 1) {
    return blocks[0];
  } else {
    error = "the spec declares several train blocks; choose one with --train:";
  }
  for (const Decl* d : blocks) error += " " + d->name;
  return nullptr;
}

// The step graph of `block` appended to r.trains; false (with r.status set) when it cannot be built.
bool compile_step_graph(CompileResult& r, const Decl& block, const PassOptions& passes) {
  std::optional<TrainProgram> t;
  try {
    t = lower_train(*r.program, block, r.program->diags);
    if (t) run_step_passes(t->step, passes.opt_level, passes.disabled);
    // Evaluation computes in the block's precision too: the same casts, no loss scale (no backward).
    if (t && t->eval) mixed_precision(t->eval->graph);
    // The served forward pass gets the step's passes too (relu fused into its layer; the precision's casts).
    if (t) run_step_passes(t->inference, passes.opt_level, passes.disabled);
  } catch (const std::logic_error& e) {  // a step graph that does not verify
    r.status = CompileStatus::InternalError;
    r.error = fmt::format("internal error: {}", e.what());
    r.error_decl = &block;
    return false;
  }
  if (!t) {
    r.status = CompileStatus::SpecErrors;
    if (!r.program->diags.has_errors()) {
      r.status = CompileStatus::InternalError;
      r.error = fmt::format("internal error: train `{}` was not compiled and no diagnostic says why", block.name);
      r.error_decl = &block;
    }
    return false;
  }
  r.trains.push_back(CompiledTrain{&block, std::move(*t), {}, {}});
  return true;
}

}  // namespace

bool has_train_block(const Program& program) { return !train_blocks(program).empty(); }

void compile_train_graphs(CompileResult& r, const PassOptions& passes) {
  for (const Decl* d : train_blocks(*r.program)) {
    if (d->syntax_error) continue;
    // One block's errors do not hide the next one's.
    if (!compile_step_graph(r, *d, passes) && r.status == CompileStatus::InternalError) return;
  }
  if (r.program->diags.has_errors()) r.status = CompileStatus::SpecErrors;
}

void compile_train_target(const CompileRequest& request, CompileResult& r) {
  const Decl* block = pick_train(*r.program, request.train.block, r.error);
  if (!block) {
    r.status = CompileStatus::NoTrain;
    return;
  }
  if (!compile_step_graph(r, *block, request.options.passes)) return;
  CompiledTrain& train = r.trains.back();
  // The step's element-wise chains through the JIT, as a pipeline's maps (the fast executor calls
  // them; -O0 and the reference executor keep the interpreter).
  if (request.options.passes.opt_level > 0 && request.options.cpu_kernels == CpuKernels::Jit) {
    train.step_jit = codegen::attach_step_kernels(train.program.step, request.options.jit);
    if (train.program.eval) codegen::attach_step_kernels(train.program.eval->graph, request.options.jit);
  }
  // The same chains printed as CUDA kernels, for the GPU executor (NVRTC compiles them when it runs).
  if (request.options.passes.opt_level > 0) cuda_codegen::attach_step_gpu_kernels(train.program.step);
  const TrainProgram& t = train.program;

  // The data: the pipeline the block names, or its inline dataset lowered as `<block>.data`.
  const Expr& data = *train_data_expr(*block);
  const Decl* data_decl = block;
  if (data.kind == ExprKind::Name)
    if (const Decl* d = data.as<NameExpr>()->target.decl; d && d->kind == DeclKind::Pipeline) data_decl = d;
  CompiledPipeline& out = r.pipelines.emplace_back();
  out.decl = data_decl;
  try {
    out.plan = lower_dataset(*r.program, data, t.data_pipeline.empty() ? t.name + ".data" : t.data_pipeline);
  } catch (const std::exception& e) {
    r.status = CompileStatus::InternalError;
    r.error = fmt::format("internal error: lowering the data of train `{}` failed: {}", t.name, e.what());
    r.error_decl = block;
    return;
  }
  try {
    train.length = train_length(t, request.train.steps, request.train.epochs, out.plan.stages.back().element.infinite);
  } catch (const TrainLengthError& e) {
    r.status = CompileStatus::NoTrain;
    r.error = e.what();
    return;
  }
  append_data_repeat(out.plan, train.length);
  // Under multi_worker each worker reads its share of the data; the validation data is not sharded.
  if (!shard_for_worker(request.options, out, r)) return;
  if (!finish_plan(*data_decl, request.options, out, r.error)) {
    r.status = CompileStatus::InternalError;
    r.error_decl = data_decl;
    return;
  }

  // The validation data (r.pipelines[1]): read once per evaluation, as written.
  if (!t.eval) return;
  const Expr* validation = train_validation_expr(*block);
  if (!validation) return;
  const Decl* validation_decl = block;
  if (validation->kind == ExprKind::Name)
    if (const Decl* d = validation->as<NameExpr>()->target.decl; d && d->kind == DeclKind::Pipeline)
      validation_decl = d;
  CompiledPipeline& val = r.pipelines.emplace_back();
  val.decl = validation_decl;
  try {
    val.plan =
        lower_dataset(*r.program, *validation, t.eval->pipeline.empty() ? t.name + ".validation" : t.eval->pipeline);
  } catch (const std::exception& e) {
    r.status = CompileStatus::InternalError;
    r.error = fmt::format("internal error: lowering the validation data of train `{}` failed: {}", t.name, e.what());
    r.error_decl = block;
    return;
  }
  if (!finish_plan(*validation_decl, request.options, val, r.error)) {
    r.status = CompileStatus::InternalError;
    r.error_decl = validation_decl;
  }
}

}  // namespace pipec
