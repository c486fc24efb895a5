#include "compiler/codegen/cuda/attach_gpu_kernels.h"

#include <fmt/format.h>

#include "compiler/codegen/cuda/cuda_emitter.h"

namespace pipec::cuda_codegen {

int attach_gpu_kernels(Plan& plan) {
  int made = 0;
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    Stage& s = plan.stages[i];
    if (s.kind != StageKind::Map || !s.fn || s.inputs.empty()) continue;
    const Stage& input = plan.stages.at(s.inputs[0]);
    if (!input.element.on_gpu) continue;
    std::vector<std::string> fields;
    for (const Field& f : input.element.fields) fields.push_back(f.name);
    CudaEmitResult r = emit_cuda_map(*s.fn, fields, fmt::format("pipec_map_{}", i));
    if (r.kernel) {
      s.gpu = r.kernel;
      ++made;
    } else {
      auto k = std::make_shared<GpuKernel>();
      k->unsupported = r.error;
      s.gpu = k;
    }
  }
  return made;
}

}  // namespace pipec::cuda_codegen
