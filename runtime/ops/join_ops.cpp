// stack and concat: join several tensors along a new or an existing axis (block copies).
#include <cstring>

#include <fmt/format.h>

#include "runtime/ops/kernel.h"

namespace pipec {

namespace {

// The operands in one dtype: the result's (bytes results are joined through string numbers).
std::vector<Tensor> unify(const KernelArgs& a) {
  if (a.in.empty()) throw OpError("needs at least one tensor");
  DType rt = a.out_dtype() == DType::Bytes ? a.in[0].dtype() : a.out_dtype();
  std::vector<Tensor> xs;
  for (const Tensor& t : a.in) xs.push_back(cast_tensor(t, rt));
  return xs;
}

bool any_bytes(const KernelArgs& a) {
  for (const Tensor& t : a.in)
    if (t.dtype() == DType::Bytes) return true;
  return false;
}

Tensor stack_kernel(const KernelArgs& a) {
  if (any_bytes(a)) return via_string_indices(a, stack_kernel);
  std::vector<Tensor> xs = unify(a);
  const Shape& e = xs[0].shape();
  for (size_t j = 1; j < xs.size(); ++j)
    if (xs[j].shape() != e)
      throw OpError(
          fmt::format("item {} has shape {} but item 0 has {}", j, shape_to_string(xs[j].shape()), shape_to_string(e)));
  const int64_t er = static_cast<int64_t>(e.size()) - a.lead;
  const int64_t ax = normalize_axis(attr_int(a.instr, "axis", 0), er, true) + a.lead;
  const size_t esize = dtype_size(xs[0].dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < ax; ++d) outer *= e[d];
  for (size_t d = static_cast<size_t>(ax); d < e.size(); ++d) inner *= e[d];
  Shape shape = e;
  shape.insert(shape.begin() + ax, static_cast<int64_t>(xs.size()));
  Tensor out = Tensor::empty(xs[0].dtype(), shape);
  const size_t block = static_cast<size_t>(inner) * esize;
  uint8_t* o = out.raw();
  for (int64_t k = 0; k < outer; ++k)
    for (const Tensor& x : xs) {
      if (block) std::memcpy(o, x.raw() + k * block, block);
      o += block;
    }
  return out;
}

Tensor concat_kernel(const KernelArgs& a) {
  if (any_bytes(a)) return via_string_indices(a, concat_kernel);
  std::vector<Tensor> xs = unify(a);
  const Shape& e = xs[0].shape();
  const int64_t er = static_cast<int64_t>(e.size()) - a.lead;
  if (er < 1) throw OpError("needs tensors of rank 1 or more");
  const int64_t ax = normalize_axis(attr_int(a.instr, "axis", -1), er) + a.lead;
  Shape shape = e;
  shape[ax] = 0;
  for (size_t j = 0; j < xs.size(); ++j) {
    const Shape& s = xs[j].shape();
    bool ok = s.size() == e.size();
    for (size_t d = 0; ok && d < e.size(); ++d)
      if (static_cast<int64_t>(d) != ax && s[d] != e[d]) ok = false;
    if (!ok)
      throw OpError(fmt::format("item {} has shape {} but item 0 has {}", j, shape_to_string(s), shape_to_string(e)));
    shape[ax] += s[ax];
  }
  const size_t esize = dtype_size(xs[0].dtype());
  int64_t outer = 1, rest = 1;
  for (int64_t d = 0; d < ax; ++d) outer *= e[d];
  for (size_t d = static_cast<size_t>(ax) + 1; d < e.size(); ++d) rest *= e[d];
  Tensor out = Tensor::empty(xs[0].dtype(), shape);
  uint8_t* o = out.raw();
  for (int64_t k = 0; k < outer; ++k)
    for (const Tensor& x : xs) {
      size_t block = static_cast<size_t>(x.shape()[ax] * rest) * esize;
      if (block) std::memcpy(o, x.raw() + k * block, block);
      o += block;
    }
  return out;
}

}  // namespace

void register_join_ops(KernelTable& t) {
  t.set(OpKind::Stack, stack_kernel);
  t.set(OpKind::Concat, concat_kernel);
}

}  // namespace pipec
