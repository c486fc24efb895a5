#include "compiler/codegen/stage_kernel.h"

namespace pipec::codegen {

bool stage_loop_nest(const Plan& plan, int index, LoopNest& nest, std::string& why_not) {
  const Stage& s = plan.stages.at(static_cast<size_t>(index));
  if (!has_element_kernel(s) || !s.fn || s.inputs.size() != 1) {
    why_not = "not a map, filter or scan";
    return false;
  }
  const std::vector<std::string> fields = function_input_fields(plan, index);
  if (!lower_to_loop_nest(*s.fn, fields, nest, why_not)) return false;
  if (s.kind == StageKind::Filter && (nest.outputs.size() != 1 || nest.outputs[0].elems != 1)) {
    why_not = "the filter's predicate is not one flag per element";
    return false;
  }
  // map_filter: the map's fields, then the keep flag (map_filter_fusion), which the runtime reads as
  // one byte per row (stage_map.cpp).
  if (s.kind == StageKind::MapFilter &&
      (nest.outputs.empty() || nest.outputs.back().elems != 1 || nest.outputs.back().dtype != DType::Bool)) {
    why_not = "the fused filter's keep flag is not one bool per element";
    return false;
  }
  for (const LoopInput& in : nest.inputs)
    if (in.field_index < 0) {
      why_not = "the input field `" + in.field + "` is not in the input element";
      return false;
    }
  return true;
}

std::string kernel_symbol(int index) { return "pipec_kernel_" + std::to_string(index); }

std::string kernel_symbol(const std::vector<int>& within, int index) {
  std::string out = "pipec_kernel_";
  for (int flat_map : within) out += std::to_string(flat_map) + "_";
  return out + std::to_string(index);
}

std::vector<int> kernel_input_fields(const LoopNest& nest) {
  std::vector<int> out;
  for (const LoopInput& in : nest.inputs) out.push_back(in.field_index);
  return out;
}

}  // namespace pipec::codegen
