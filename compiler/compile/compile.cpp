#include "compiler/compile/compile.h"

#include <fmt/format.h>

#include "compiler/codegen/cuda/attach_gpu_kernels.h"
#include "compiler/codegen/llvm/aot.h"
#include "compiler/compile/compile_train.h"
#include "compiler/compile/finish_plan.h"
#include "compiler/compile/inline_colour_files.h"
#include "compiler/compile/pick_pipeline.h"
#include "compiler/lower/lower.h"

namespace pipec {

namespace {

// The pipelines `request` asks for; empty with `error` set when there is no such choice (EveryPipeline
// of a spec whose train blocks write their data inline may have none).
std::vector<const Decl*> chosen_pipelines(const Program& program, const CompileRequest& request, std::string& error) {
  std::vector<const Decl*> out;
  if (request.target == CompileTarget::OnePipeline) {
    if (const Decl* d = pick_pipeline(program, request.pipeline, error)) out.push_back(d);
    return out;
  }
  for (const auto& d : program.main().decls)
    if (d->kind == DeclKind::Pipeline) out.push_back(d.get());
  if (out.empty() && !has_train_block(program)) error = "the spec declares no pipeline";
  return out;
}

// Lower, then the steps every plan goes through: one pipeline. False with r's status and error set.
bool compile_pipeline(const Decl& decl, const CompileOptions& o, CompiledPipeline& out, CompileResult& r) {
  out.decl = &decl;
  try {
    out.plan = lower_pipeline(*r.program, decl);
  } catch (const std::exception& e) {
    r.status = CompileStatus::InternalError;
    r.error = fmt::format("internal error: lowering pipeline `{}` failed: {}", decl.name, e.what());
    return false;
  }
  if (!shard_for_worker(o, out, r)) return false;
  if (!finish_plan(decl, o, out, r.error)) {
    r.status = CompileStatus::InternalError;
    return false;
  }
  return true;
}

}  // namespace

bool shard_for_worker(const CompileOptions& o, CompiledPipeline& out, CompileResult& r) {
  if (!o.shard) return true;
  try {
    AutoShard sharded = auto_shard(out.plan, o.shard->workers, o.shard->index, o.data_dir);
    out.plan = std::move(sharded.plan);
    out.shard = std::move(sharded.report);
    return true;
  } catch (const ShardError& e) {
    r.status = CompileStatus::ShardError;
    r.error = e.diagnostic();
  } catch (const std::exception& e) {
    r.status = CompileStatus::InternalError;
    r.error = fmt::format("internal error: sharding the plan of `{}` failed: {}", out.plan.name, e.what());
  }
  r.error_decl = out.decl;
  return false;
}

bool finish_plan(const Decl& decl, const CompileOptions& o, CompiledPipeline& out, std::string& error) {
  if (auto problems = verify_plan(out.plan); !problems.empty()) {
    error = fmt::format("internal error: the plan of `{}` does not verify after lowering:\n", out.plan.name);
    for (const auto& p : problems) error += "  " + p + "\n";
    error.pop_back();
    return false;
  }
  if (o.on_lowered) o.on_lowered(decl, out.plan);
  try {
    run_passes(out.plan, o.passes);  // verifies after every pass
  } catch (const PassError& e) {
    error = e.what();
    return false;
  }
  // The code generators see the final (optimized) stages.
  // A run (and explain, which shows what a run compiles) reads class_dict.csv files now; a built
  // library reads them when it runs.
  if (o.cpu_kernels != CpuKernels::Object && o.passes.opt_level > 0 && !o.data_dir.empty())
    inline_colour_files(out.plan, o.data_dir);
  if (o.device != DevicePolicy::Cpu) out.gpu_kernels = cuda_codegen::attach_gpu_kernels(out.plan);
  if (o.passes.opt_level <= 0) return true;
  switch (o.cpu_kernels) {
    case CpuKernels::None: break;
    case CpuKernels::Jit: out.jit = codegen::attach_native_kernels(out.plan, o.jit); break;
    case CpuKernels::Object: try { out.object_kernels = codegen::emit_kernels_object(out.plan, o.object_path);
      } catch (const std::exception& e) {
        error = fmt::format("code generation failed: {}", e.what());
        return false;
      }
      break;
  }
  return true;
}

CompileResult compile(const CompileRequest& request) {
  const CompileOptions& o = request.options;
  CompileResult r;
  r.program = request.text ? check_text(request.path, *request.text, o.check) : check_file(request.path, o.check);
  if (!r.program->io_error.empty()) {
    r.status = CompileStatus::Unreadable;
    r.error = r.program->io_error;
    return r;
  }
  if (r.program->diags.has_errors()) {
    r.status = CompileStatus::SpecErrors;
    return r;
  }
  CompileTarget target = request.target;
  if (target == CompileTarget::TrainOrPipeline)
    target = has_train_block(*r.program) ? CompileTarget::Train : CompileTarget::OnePipeline;
  switch (target) {
    case CompileTarget::CheckOnly: compile_train_graphs(r, o.passes); return r;
    case CompileTarget::Train: compile_train_target(request, r); return r;
    case CompileTarget::OnePipeline:
    case CompileTarget::EveryPipeline:
    case CompileTarget::TrainOrPipeline: break;
  }

  CompileRequest chosen = request;
  chosen.target = target;
  std::vector<const Decl*> decls = chosen_pipelines(*r.program, chosen, r.error);
  if (decls.empty() && !r.error.empty()) {
    r.status = CompileStatus::NoPipeline;
    return r;
  }
  if (o.cpu_kernels == CpuKernels::Object && decls.size() > 1) {
    r.status = CompileStatus::InternalError;
    r.error = "internal error: an object file holds the kernels of one pipeline; several were asked for";
    return r;
  }
  for (const Decl* d : decls) {
    CompiledPipeline& out = r.pipelines.emplace_back();
    if (!compile_pipeline(*d, o, out, r)) {
      r.error_decl = d;
      return r;
    }
  }
  if (target == CompileTarget::EveryPipeline) compile_train_graphs(r, o.passes);
  return r;
}

CompileRequest check_request(const std::string& path, const CheckOptions& options, std::optional<std::string> text) {
  CompileRequest request;
  request.path = path;
  request.text = std::move(text);
  request.target = CompileTarget::CheckOnly;
  request.options.check = options;
  return request;
}

CompileResult compile_text(const std::string& path, const std::string& text, const std::string& pipeline,
                           const CompileOptions& options) {
  CompileRequest request;
  request.path = path;
  request.text = text;
  request.pipeline = pipeline;
  request.options = options;
  return compile(request);
}

}  // namespace pipec
