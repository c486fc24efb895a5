#include "runtime/ops/broadcast.h"

#include <algorithm>

#include "runtime/ops/kernel_error.h"

namespace pipec {

Shape broadcast_shape(const std::vector<const Shape*>& shapes) {
  size_t rank = 0;
  for (const Shape* s : shapes) rank = std::max(rank, s->size());
  Shape out(rank, 1);
  for (const Shape* s : shapes) {
    size_t pad = rank - s->size();
    for (size_t d = 0; d < s->size(); ++d) {
      int64_t v = (*s)[d];
      int64_t& o = out[pad + d];
      if (v == o || v == 1) continue;
      if (o == 1) {
        o = v;
        continue;
      }
      std::string msg = "shapes";
      for (size_t k = 0; k < shapes.size(); ++k) msg += (k ? " and " : " ") + shape_to_string(*shapes[k]);
      throw OpError(msg + " do not broadcast");
    }
  }
  return out;
}

BroadcastPlan plan_broadcast(const Shape& out, const std::vector<const Shape*>& operands) {
  BroadcastPlan p;
  p.num_operands = static_cast<int>(operands.size()) + 1;
  if (p.num_operands > BroadcastPlan::kMaxOperands) throw OpError("too many operands to broadcast");
  p.total = shape_num_elements(out);
  const size_t rank = out.size();
  // Per dimension (outermost first): size and each operand's stride, dropping dims of size 1.
  std::vector<int64_t> dims;
  std::vector<BroadcastPlan::Offsets> strides;
  std::vector<BroadcastPlan::Offsets> full(rank);
  for (int k = 0; k < p.num_operands; ++k) {
    const Shape& s = k == 0 ? out : *operands[k - 1];
    if (s.size() > rank) throw OpError("operand rank exceeds the result rank");
    size_t pad = rank - s.size();
    int64_t stride = 1;
    for (size_t d = rank; d-- > 0;) {
      int64_t size = d >= pad ? s[d - pad] : 1;
      if (size != out[d] && size != 1)
        throw OpError("shape " + shape_to_string(s) + " does not broadcast to " + shape_to_string(out));
      full[d][k] = (size == 1) ? 0 : stride;
      stride *= size;
    }
  }
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;
    if (!dims.empty()) {
      // Merge into the previous dimension when every operand continues contiguously.
      bool merge = true;
      for (int k = 0; k < p.num_operands; ++k)
        if (strides.back()[k] != full[d][k] * out[d]) merge = false;
      if (merge) {
        dims.back() *= out[d];
        strides.back() = full[d];
        continue;
      }
    }
    dims.push_back(out[d]);
    strides.push_back(full[d]);
  }
  if (dims.empty()) {
    dims.push_back(1);
    strides.push_back(BroadcastPlan::Offsets{});
  }
  p.inner = dims.back();
  p.inner_stride = strides.back();
  dims.pop_back();
  strides.pop_back();
  if (dims.empty()) {
    dims.push_back(1);
    strides.push_back(BroadcastPlan::Offsets{});
  }
  p.outer_dims = std::move(dims);
  p.outer_strides = std::move(strides);
  return p;
}

}  // namespace pipec
