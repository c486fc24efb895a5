// Numpy broadcasting for element-wise kernels: the result shape of several operands, and a loop plan
// that walks them together as an outer loop over contiguous inner runs, so the innermost loop is a plain
// array loop the compiler can vectorize.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "runtime/core/tensor.h"

namespace pipec {

/// The broadcast of `shapes` (right-aligned, dims equal or 1). Throws OpError when they do not broadcast.
Shape broadcast_shape(const std::vector<const Shape*>& shapes);

/// A loop over `out` and up to three operands broadcast to it. Dimensions of size 1 are dropped and
/// neighbouring dimensions that every operand walks contiguously are merged, so [R, 8, 8, 24] * [24]
/// becomes R*64 runs of 24.
struct BroadcastPlan {
  static constexpr int kMaxOperands = 4;  // the output is operand 0
  using Offsets = std::array<int64_t, kMaxOperands>;

  int num_operands = 0;
  int64_t total = 0;                   // elements of the output
  int64_t inner = 1;                   // length of each contiguous run
  Offsets inner_stride{};              // per operand: 1 (walks the run) or 0 (one value for the run)
  std::vector<int64_t> outer_dims;     // the loop over runs, outermost first
  std::vector<Offsets> outer_strides;  // per outer dim, per operand, in elements

  /// Calls f(offsets, inner) once per run with each operand's element offset.
  template <class F>
  void for_each(F&& f) const {
    if (total == 0) return;
    Offsets off{};
    int64_t runs = total / inner;
    if (outer_dims.size() == 1) {  // the common case: one outer dimension
      const Offsets& st = outer_strides[0];
      for (int64_t r = 0; r < runs; ++r) {
        f(off, inner);
        for (int k = 0; k < num_operands; ++k) off[k] += st[k];
      }
      return;
    }
    std::vector<int64_t> ctr(outer_dims.size(), 0);
    for (int64_t r = 0; r < runs; ++r) {
      f(off, inner);
      for (int d = static_cast<int>(outer_dims.size()) - 1; d >= 0; --d) {
        for (int k = 0; k < num_operands; ++k) off[k] += outer_strides[d][k];
        if (++ctr[d] < outer_dims[d]) break;
        for (int k = 0; k < num_operands; ++k) off[k] -= outer_strides[d][k] * outer_dims[d];
        ctr[d] = 0;
      }
    }
  }
};

/// Plans the loop over `out` (contiguous) and `operands`, each of which must broadcast to `out`.
BroadcastPlan plan_broadcast(const Shape& out, const std::vector<const Shape*>& operands);

}  // namespace pipec
