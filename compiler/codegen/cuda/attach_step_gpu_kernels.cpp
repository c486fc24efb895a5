#include "compiler/codegen/cuda/attach_step_gpu_kernels.h"

#include <cctype>

#include <fmt/format.h>

#include "compiler/codegen/cuda/cuda_emitter.h"

namespace pipec::cuda_codegen {

namespace {

// A graph's name as part of a C identifier.
std::string identifier(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

}  // namespace

int attach_step_gpu_kernels(ModelGraph& graph) {
  int made = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    GraphNode& n = graph.nodes[i];
    if (n.op != ModelOp::Expr || !n.fn) continue;
    // The node's inputs are its function's Input instructions in body order (as the executors feed them).
    std::vector<std::string> fields;
    std::string why;
    for (const Instr& in : n.fn->body) {
      if (op_has(in.op, OpFlag::Input)) fields.push_back(in.attrs.at("field").s);
      if (op_has(in.op, OpFlag::Random)) why = "a random op (keyed by the interpreter's context)";
    }
    std::shared_ptr<GpuKernel> kernel;
    if (why.empty()) {
      CudaEmitResult r = emit_cuda_map(*n.fn, fields, fmt::format("pipec_step_{}_node_{}", identifier(graph.name), i));
      kernel = r.kernel;
      why = r.error;
    }
    if (!kernel) {
      kernel = std::make_shared<GpuKernel>();
      kernel->unsupported = why.empty() ? "the CUDA generator gave no kernel" : why;
    } else {
      ++made;
    }
    n.gpu = kernel;
  }
  return made;
}

}  // namespace pipec::cuda_codegen
