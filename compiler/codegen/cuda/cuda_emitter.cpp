#include "compiler/codegen/cuda/cuda_emitter.h"

#include "compiler/codegen/cuda/cuda_printer.h"
#include "compiler/codegen/loop_nest.h"

namespace pipec::cuda_codegen {

CudaEmitResult emit_cuda_map(const ExprFunction& fn, const std::vector<std::string>& in_fields,
                             const std::string& entry) {
  CudaEmitResult r;
  codegen::LoopNest nest;
  if (!codegen::lower_to_loop_nest(fn, in_fields, nest, r.error)) return r;
  auto k = std::make_shared<GpuKernel>();
  k->entry = entry;
  for (const codegen::LoopInput& in : nest.inputs) {
    if (in.field_index < 0) {
      r.error = "the input field `" + in.field + "` is not in the input element";
      return r;
    }
    k->input_fields.push_back(in.field_index);
  }
  try {
    if (!print_cuda_kernel(nest, entry, k->source, r.error)) return r;
  } catch (const std::exception& e) {
    // A node the printer does not know: a bug, but one that keeps the map on the CPU, not a crash.
    r.error = std::string("the CUDA printer failed: ") + e.what();
    return r;
  }
  r.kernel = std::move(k);
  return r;
}

}  // namespace pipec::cuda_codegen
