// Shape kernels: slice, gather, reshape, expand_dims, squeeze, transpose. They move elements without
// looking at them, so they work by element size; byte strings go through index tensors.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "runtime/core/dtype_dispatch.h"
#include "runtime/ops/kernel.h"
#include "runtime/ops/slice_bounds.h"
#include "runtime/ops/tensor_util.h"

namespace pipec {

Tensor via_string_indices(const KernelArgs& a, KernelFn numeric) {
  KernelArgs idx{a.instr, {}, a.lead, a.rows, a.seed, a.first_index, a.epoch};
  int64_t base = 0;
  for (const Tensor& t : a.in) {
    if (t.dtype() != DType::Bytes) throw OpError("cannot mix byte strings and numbers");
    idx.in.push_back(iota(t.shape(), base));
    base += t.num_elements();
  }
  Tensor picked = numeric(idx);
  return take_strings(a.in.size() == 1 ? a.in[0] : concat_strings(a.in), picked);
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& perm) {
  if (static_cast<int64_t>(perm.size()) != x.rank()) throw OpError("the permutation does not match the rank");
  if (x.dtype() == DType::Bytes) return take_strings(x, permute(iota(x.shape()), perm));
  Shape st = contiguous_strides(x.shape()), shape, strides;
  std::vector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= x.rank() || seen[p]) throw OpError("perm must be a permutation of 0..rank-1");
    seen[p] = true;
    shape.push_back(x.shape()[p]);
    strides.push_back(st[p]);
  }
  Tensor out = Tensor::empty(x.dtype(), shape);
  strided_copy(x.raw(), 0, shape, strides, out.raw(), dtype_size(x.dtype()));
  return out;
}

namespace {

Shape element_shape(const Tensor& x, int lead) { return Shape(x.shape().begin() + lead, x.shape().end()); }

Shape with_rows(const KernelArgs& a, const Shape& elem) {
  if (!a.lead) return elem;
  Shape s{a.rows};
  s.insert(s.end(), elem.begin(), elem.end());
  return s;
}

Tensor slice_kernel(const KernelArgs& a) {
  const Tensor& x = a.in.at(0);
  if (x.dtype() == DType::Bytes) return via_string_indices(a, slice_kernel);
  std::vector<int64_t> starts = attr_ints(a.instr, "starts"), stops = attr_ints(a.instr, "stops"),
                       steps = attr_ints(a.instr, "steps");
  const int64_t rank = x.rank(), er = rank - a.lead;
  if (starts.size() != stops.size() || starts.size() != steps.size() || static_cast<int64_t>(starts.size()) > er)
    throw OpError(fmt::format("{} slice bounds for a tensor of rank {}", starts.size(), er));
  Shape st = contiguous_strides(x.shape()), shape(rank), strides(rank);
  int64_t base = 0;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t e = d - a.lead;
    SliceBounds r{0, x.shape()[d], 1};
    if (e >= 0 && e < static_cast<int64_t>(starts.size()))
      r = resolve_slice(starts[e], stops[e], steps[e], x.shape()[d]);
    shape[d] = r.len;
    strides[d] = r.step * st[d];
    if (r.len > 0) base += r.start * st[d];
  }
  Tensor out = Tensor::empty(x.dtype(), shape);
  strided_copy(x.raw(), base, shape, strides, out.raw(), dtype_size(x.dtype()));
  return out;
}

Tensor gather_kernel(const KernelArgs& a) {
  const Tensor& x = a.in.at(0);
  if (x.dtype() == DType::Bytes) return via_string_indices(a, gather_kernel);
  const int64_t er = x.rank() - a.lead;
  const int64_t axis_attr = attr_int(a.instr, "axis", 0);
  const int64_t ax = normalize_axis(axis_attr, er) + a.lead;
  std::vector<int64_t> idx = attr_ints(a.instr, "indices");
  const int64_t n = x.shape()[ax];
  for (int64_t& i : idx) {
    int64_t orig = i;
    if (i < 0) i += n;
    if (i < 0 || i >= n)
      throw OpError(fmt::format("index {} is out of range for axis {} of size {}", orig, axis_attr, n));
  }
  Shape shape = x.shape();
  const int64_t m = static_cast<int64_t>(idx.size());
  shape[ax] = m;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < ax; ++d) outer *= x.shape()[d];
  for (int64_t d = ax + 1; d < x.rank(); ++d) inner *= x.shape()[d];
  Tensor out = Tensor::empty(x.dtype(), shape);
  const size_t esize = dtype_size(x.dtype());
  visit_by_size(esize, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* s = reinterpret_cast<const T*>(x.raw());
    T* o = reinterpret_cast<T*>(out.raw());
    const int64_t* ix = idx.data();  // a local: byte stores could alias the vector's own pointer
    if (inner == 1) {
      for (int64_t k = 0; k < outer; ++k, s += n, o += m)
        for (int64_t j = 0; j < m; ++j) o[j] = s[ix[j]];
    } else {
      for (int64_t k = 0; k < outer; ++k, s += n * inner)
        for (int64_t j = 0; j < m; ++j, o += inner)
          std::memcpy(o, s + ix[j] * inner, static_cast<size_t>(inner) * esize);
    }
  });
  return out;
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + (dims[i] < 0 ? std::string("?") : std::to_string(dims[i]));
  return s + "]";
}

// Aligns target[j..] with elem[i..]: -1 takes one dim, a known dim must equal its partner, unit dims of
// elem may be dropped and unit dims of target inserted. Backtracks (ranks are small).
bool align_dims(const Shape& elem, const std::vector<int64_t>& target, size_t i, size_t j, Shape& out) {
  if (j == target.size()) {
    for (; i < elem.size(); ++i)
      if (elem[i] != 1) return false;
    return true;
  }
  if (i < elem.size() && (target[j] == -1 || target[j] == elem[i])) {
    out[j] = elem[i];
    if (align_dims(elem, target, i + 1, j + 1, out)) return true;
  }
  if (i < elem.size() && elem[i] == 1 && align_dims(elem, target, i + 1, j, out)) return true;
  if (target[j] == 1) {
    out[j] = 1;
    if (align_dims(elem, target, i, j + 1, out)) return true;
  }
  return false;
}

// The shape `target` (dims, -1 = unknown) takes for an element of shape `elem`. One unknown is inferred
// from the element count; several are matched against elem's dims in order, dropping or inserting unit
// dims (the reshapes that indexing and squeeze produce).
Shape resolve_shape(const Shape& elem, const std::vector<int64_t>& target) {
  const int64_t n = shape_num_elements(elem);
  auto fail = [&]() -> Shape {
    throw OpError(fmt::format("cannot reshape {} ({} elements) to {}", shape_to_string(elem), n, dims_text(target)));
  };
  int unknown = 0;
  int64_t known = 1;
  for (int64_t d : target) {
    if (d == -1) ++unknown;
    else if (d < 0) fail();
    else known *= d;
  }
  Shape out(target.begin(), target.end());
  if (unknown == 1) {
    if (known == 0 || n % known != 0) return fail();
    for (int64_t& d : out)
      if (d == -1) d = n / known;
  } else if (unknown > 1 && !align_dims(elem, target, 0, 0, out)) {
    return fail();
  }
  if (shape_num_elements(out) != n) return fail();
  return out;
}

Tensor reshape_kernel(const KernelArgs& a) {
  const Tensor& x = a.in.at(0);
  Shape elem = resolve_shape(element_shape(x, a.lead), attr_ints(a.instr, "shape"));
  return x.reshaped(with_rows(a, elem));
}

Tensor expand_dims_kernel(const KernelArgs& a) {
  const Tensor& x = a.in.at(0);
  Shape elem = element_shape(x, a.lead);
  int64_t ax = normalize_axis(attr_int(a.instr, "axis", 0), static_cast<int64_t>(elem.size()), true);
  elem.insert(elem.begin() + ax, 1);
  return x.reshaped(with_rows(a, elem));
}

Tensor squeeze_kernel(const KernelArgs& a) {
  const Tensor& x = a.in.at(0);
  Shape elem = element_shape(x, a.lead);
  if (find_attr(a.instr, "axis")) {
    int64_t axis = attr_int(a.instr, "axis", 0);
    int64_t ax = normalize_axis(axis, static_cast<int64_t>(elem.size()));
    if (elem[ax] != 1) throw OpError(fmt::format("dimension {} has size {}, not 1", axis, elem[ax]));
    elem.erase(elem.begin() + ax);
  } else {
    // All unit dims the static type dropped: dims unknown at compile time stay, even when they are 1.
    elem = resolve_shape(elem, a.instr.type.shape);
  }
  return x.reshaped(with_rows(a, elem));
}

Tensor transpose_kernel(const KernelArgs& a) {
  std::vector<int64_t> perm;
  for (int k = 0; k < a.lead; ++k) perm.push_back(k);
  for (int64_t p : attr_ints(a.instr, "perm")) perm.push_back(p + a.lead);
  return permute(a.in.at(0), perm);
}

}  // namespace

void register_shape_ops(KernelTable& t) {
  t.set(OpKind::Slice, slice_kernel);
  t.set(OpKind::Gather, gather_kernel);
  t.set(OpKind::Reshape, reshape_kernel);
  t.set(OpKind::ExpandDims, expand_dims_kernel);
  t.set(OpKind::Squeeze, squeeze_kernel);
  t.set(OpKind::Transpose, transpose_kernel);
}

}  // namespace pipec
