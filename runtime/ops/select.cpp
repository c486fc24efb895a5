// Three-operand element-wise kernels: where(cond, a, b) and clip(x, lo, hi), with broadcasting.
#include "runtime/core/dtype_dispatch.h"
#include "runtime/ops/elementwise_loops.h"
#include "runtime/ops/kernel.h"
#include "runtime/ops/tensor_util.h"

namespace pipec {

namespace {

struct Prepared {
  Tensor a, b, c, out;
  BroadcastPlan plan;
};

Prepared prepare(Tensor a, Tensor b, Tensor c, DType out_dtype) {
  Prepared p{std::move(a), std::move(b), std::move(c), {}, {}};
  Shape shape = broadcast_shape({&p.a.shape(), &p.b.shape(), &p.c.shape()});
  p.plan = plan_broadcast(shape, {&p.a.shape(), &p.b.shape(), &p.c.shape()});
  p.out = Tensor::empty(out_dtype, shape);
  return p;
}

Tensor where_kernel(const KernelArgs& a);

// where on byte strings: pick string indices, then the strings.
Tensor where_bytes(const KernelArgs& a) {
  const Tensor& x = a.in.at(1);
  const Tensor& y = a.in.at(2);
  if (x.dtype() != DType::Bytes || y.dtype() != DType::Bytes) throw OpError("cannot mix byte strings and numbers");
  KernelArgs idx{a.instr, {a.in.at(0), iota(x.shape()), iota(y.shape(), x.num_elements())}, a.lead, a.rows};
  Tensor picked = where_kernel(idx);
  return take_strings(concat_strings({x, y}), picked);
}

Tensor where_kernel(const KernelArgs& a) {
  DType rt = a.out_dtype();
  if (rt == DType::Bytes) {
    if (a.in.at(1).dtype() == DType::Bytes) return where_bytes(a);
    rt = DType::I64;  // the index pass of where_bytes
  }
  Prepared p =
      prepare(cast_tensor(a.in.at(0), DType::Bool), cast_tensor(a.in.at(1), rt), cast_tensor(a.in.at(2), rt), rt);
  visit_by_size(dtype_size(rt), [&](auto tag) {
    using T = typename decltype(tag)::type;
    ternary_loop(p.plan, p.a.data<bool>(), p.b.data<T>(), p.c.data<T>(), p.out.data<T>(),
                 [](bool c, T x, T y) { return c ? x : y; });
  });
  return p.out;
}

// clip = min(max(x, lo), hi) like numpy: lo > hi gives hi; NaN stays NaN.
Tensor clip_kernel(const KernelArgs& a) {
  DType rt = a.out_dtype();
  Prepared p = prepare(cast_tensor(a.in.at(0), rt), cast_tensor(a.in.at(1), rt), cast_tensor(a.in.at(2), rt), rt);
  visit_numeric(rt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    ternary_loop(p.plan, p.a.data<T>(), p.b.data<T>(), p.c.data<T>(), p.out.data<T>(), [](T x, T lo, T hi) {
      auto v = load(x), l = load(lo), h = load(hi);
      v = v < l ? l : v;
      v = v > h ? h : v;
      return store<T>(v);
    });
  });
  return p.out;
}

}  // namespace

void register_select(KernelTable& t) {
  t.set(OpKind::Where, where_kernel);
  t.set(OpKind::Clip, clip_kernel);
}

}  // namespace pipec
