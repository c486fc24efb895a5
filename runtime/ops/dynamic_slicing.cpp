// Indexing and slicing with indices and bounds computed at run time (dynamic_index, dynamic_slice).
// Constant ones are checked by the compiler and lowered to slice/gather; these carry the checks and
// Python's clamping to run time. Indices and bounds may have any integer dtype.
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "runtime/core/dtype_dispatch.h"
#include "runtime/ops/kernel.h"
#include "runtime/ops/slice_bounds.h"
#include "runtime/ops/tensor_util.h"

namespace pipec {

namespace {

// Element k of an integer tensor. A u64 above the i64 range cannot index anything: `huge` says so.
struct RunTimeInt {
  int64_t value = 0;
  bool huge = false;
  uint64_t huge_value = 0;
  std::string text() const { return huge ? std::to_string(huge_value) : std::to_string(value); }
};

RunTimeInt read_int(const Tensor& t, int64_t k) {
  if (!is_integer(t.dtype())) throw OpError(fmt::format("an index must be an integer, not {}", dtype_name(t.dtype())));
  RunTimeInt r;
  visit_numeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const T v = t.data<T>()[k];
      if constexpr (std::is_same_v<T, uint64_t>) {
        if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          r.huge = true;
          r.huge_value = v;
          return;
        }
      }
      r.value = static_cast<int64_t>(v);
    }
  });
  return r;
}

// A slice bound or step read at run time, as the i64 resolve_slice takes: values beyond i64 clamp the
// same way as the largest ones, and i64's minimum (kSliceNone, "omitted") moves up by one, which clamps
// alike (no dimension is that long).
int64_t slice_operand(const Tensor& t) {
  if (t.num_elements() != 1)
    throw OpError(fmt::format("a slice bound must be a scalar, not {}", shape_to_string(t.shape())));
  RunTimeInt v = read_int(t, 0);
  if (v.huge) return std::numeric_limits<int64_t>::max();
  return v.value == kSliceNone ? kSliceNone + 1 : v.value;
}

Shape element_shape(const Tensor& x, int lead) { return Shape(x.shape().begin() + lead, x.shape().end()); }

// x[..., i, ...] along element axis `axis` for each row (lead = 1: index r of `i` picks in row r of x).
Tensor dynamic_index_kernel(const KernelArgs& a) {
  const Tensor& x = a.in.at(0);
  const Tensor& i = a.in.at(1);
  if (x.dtype() == DType::Bytes) {
    // Move string numbers, then pick the strings.
    KernelArgs idx = a;
    idx.in[0] = iota(x.shape());
    return take_strings(x, dynamic_index_kernel(idx));
  }
  const Shape elem = element_shape(x, a.lead);
  const int64_t ax = normalize_axis(attr_int(a.instr, "axis", 0), static_cast<int64_t>(elem.size()));
  const int64_t rows = a.lead ? x.shape()[0] : 1;
  if (i.num_elements() != rows)
    throw OpError(fmt::format("the index has shape {}, not one value per row", shape_to_string(i.shape())));
  int64_t pre = 1, post = 1;
  for (int64_t d = 0; d < ax; ++d) pre *= elem[d];
  for (size_t d = static_cast<size_t>(ax) + 1; d < elem.size(); ++d) post *= elem[d];
  const int64_t n = elem[ax];
  Shape out_shape = x.shape();
  out_shape.erase(out_shape.begin() + a.lead + ax);
  Tensor out = Tensor::empty(x.dtype(), out_shape);
  const size_t esize = dtype_size(x.dtype());
  const size_t slab = static_cast<size_t>(post) * esize;
  for (int64_t r = 0; r < rows; ++r) {
    RunTimeInt v = read_int(i, r);
    int64_t j = v.huge ? n : v.value < 0 ? v.value + n : v.value;
    if (j < 0 || j >= n) {
      // With rows (lead = 1) the row is known here; one element at a time, the interpreter names it.
      const std::string msg = fmt::format("index {} is out of range for a dimension of size {}", v.text(), n);
      throw OpError(a.lead ? fmt::format("element {}: {}", a.first_index + r, msg) : msg);
    }
    const uint8_t* src = x.raw() + static_cast<size_t>(r * pre * n * post) * esize;
    uint8_t* dst = out.raw() + static_cast<size_t>(r * pre * post) * esize;
    for (int64_t p = 0; p < pre; ++p)
      if (slab)
        std::memcpy(dst + static_cast<size_t>(p) * slab, src + static_cast<size_t>((p * n + j) * post) * esize, slab);
  }
  return out;
}

// x[start:stop:step] along element axis `axis` of one element (a PerRow kernel: lead is 0). Constant
// bounds are attributes; each absent one is the next operand.
Tensor dynamic_slice_kernel(const KernelArgs& a) {
  const Tensor& x = a.in.at(0);
  if (x.dtype() == DType::Bytes) {
    KernelArgs idx = a;
    idx.in[0] = iota(x.shape());
    return take_strings(x, dynamic_slice_kernel(idx));
  }
  if (a.lead) throw OpError("internal: dynamic_slice runs one element at a time");
  size_t next = 1;
  auto bound = [&](const char* name) {
    if (const Value* v = find_attr(a.instr, name)) {
      if (v->kind != Value::Int) throw OpError(fmt::format("attribute `{}` must be an integer", name));
      return v->i;
    }
    if (next >= a.in.size()) throw OpError(fmt::format("no operand for the slice's {}", name));
    return slice_operand(a.in[next++]);
  };
  const int64_t start = bound("start"), stop = bound("stop"), step = bound("step");
  const int64_t ax = normalize_axis(attr_int(a.instr, "axis", 0), x.rank());
  SliceBounds r = resolve_slice(start, stop, step, x.shape()[ax]);  // throws on a zero step
  Shape shape = x.shape();
  Shape strides = contiguous_strides(x.shape());
  shape[ax] = r.len;
  const int64_t base = r.len > 0 ? r.start * strides[ax] : 0;
  strides[ax] *= r.step;
  Tensor out = Tensor::empty(x.dtype(), shape);
  strided_copy(x.raw(), base, shape, strides, out.raw(), dtype_size(x.dtype()));
  return out;
}

}  // namespace

void register_dynamic_slicing(KernelTable& t) {
  t.set(OpKind::DynamicIndex, dynamic_index_kernel);
  t.set(OpKind::DynamicSlice, dynamic_slice_kernel);
}

}  // namespace pipec
