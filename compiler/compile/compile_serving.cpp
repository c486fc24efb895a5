#include "compiler/compile/compile_serving.h"

#include <fmt/format.h>

#include "compiler/compile/finish_plan.h"
#include "compiler/compile/serving_plan.h"

namespace pipec {

ServingCompile compile_serving(CompileRequest request) {
  ServingCompile out;
  const CompileOptions served_options = request.options;
  // The training data's plan as lowered, before the optimizer moves or fuses its maps: the first plan
  // compile() lowers for a train block is its data.
  std::optional<Plan> lowered;
  const Decl* data_decl = nullptr;
  request.target = CompileTarget::Train;
  request.options.cpu_kernels = CpuKernels::None;
  request.options.object_path.clear();
  request.options.on_lowered = [&](const Decl& decl, const Plan& plan) {
    if (lowered) return;
    lowered = plan;
    data_decl = &decl;
  };
  out.result = compile(request);
  if (!out.result.ok()) return out;
  if (!lowered || out.result.trains.empty()) {
    out.error = "internal error: the train block's data was not lowered";
    return out;
  }
  const TrainProgram& t = out.result.trains[0].program;
  std::optional<Plan> cut = cut_serving_plan(*lowered, t.inference.input_fields, out.error);
  if (!cut) return out;

  CompiledPipeline served;
  served.decl = data_decl;
  served.plan = std::move(*cut);
  CompileOptions o = served_options;
  o.on_lowered = nullptr;
  o.shard.reset();
  o.device = DevicePolicy::Cpu;
  if (!finish_plan(*data_decl, o, served, out.error)) return out;
  // The optimizer may have added stages that only time a run (prefetch): a request runs the maps alone.
  Plan& p = served.plan;
  std::vector<Stage> kept;
  for (size_t k = 0; k < p.stages.size(); ++k) {
    if (k > 0 && p.stages[k].kind != StageKind::Map) {
      if (stage_has(p.stages[k].kind, StageFlag::KeepsFields)) continue;
      out.error = fmt::format("internal error: the optimizer turned the served preprocessing into `{}`",
                              stage_name(p.stages[k].kind));
      return out;
    }
    kept.push_back(std::move(p.stages[k]));
    if (kept.size() > 1) kept.back().inputs = {static_cast<int>(kept.size()) - 2};
  }
  p.stages = std::move(kept);
  // A request's inputs are the source's fields the model needs: numbers DLPack can carry.
  for (const Field& f : served.plan.stages.front().element.fields)
    if (!f.type || f.type->kind != TypeKind::Tensor || f.type->dtype == DType::Bytes) {
      out.error = fmt::format(
          "{}the model's preprocessing reads `{}` ({}), which a request cannot carry (DLPack has no strings or "
          "variable-length fields): serve a model whose data source gives fixed-size numeric fields",
          served.plan.stages.front().loc.valid() ? served.plan.stages.front().loc.to_string() + ": " : "", f.name,
          f.type ? type_to_string(*f.type) : "no type");
      return out;
    }
  out.plan = std::move(served.plan);
  out.object_kernels = served.object_kernels;
  return out;
}

}  // namespace pipec
