// Random kernels: random_uniform, random_normal, random_int.
//
// Element e (the chunk's first_index + row) of epoch p draws from RandomStream(seed, op_id, e, p), the
// values of its [shape] tensor in row-major order, so results depend on neither chunking nor threads.
// seed is the instruction's `seed` attribute, else the run seed. Formulas (the contract the JIT and GPU
// kernels reproduce):
//   uniform: u = uniform_double() for f64 results, else uniform_float(); value = lo + (hi - lo) * u,
//            computed in f64 for f64 and in f32 otherwise, rounded once to the result dtype (so for
//            f16/bf16 a value just below hi may round up to hi).
//   normal:  z = normal() (Box-Muller, f64); value = mean + std * z in f64, rounded to the result dtype.
//   int:     uniform_int(lo, hi - 1) on i64 bounds (float bounds truncate); needs lo < hi.
// Operands: lo/hi (mean/std) are the instruction's operands in that order when present; a missing one
// takes its default (0 and 1).
#include <fmt/format.h>

#include "runtime/core/dtype_dispatch.h"
#include "runtime/core/philox.h"
#include "runtime/ops/elementwise_loops.h"
#include "runtime/ops/kernel.h"
#include "runtime/ops/tensor_util.h"

namespace pipec {

namespace {

struct Setup {
  Shape elem, out_shape;
  int64_t rows = 1, per_row = 0;
  uint64_t seed = 0;
  uint64_t op_id = 0;
};

Setup setup(const KernelArgs& a) {
  Setup s;
  s.elem = attr_ints(a.instr, "shape");
  for (int64_t d : s.elem)
    if (d < 0) throw OpError("random shapes must be non-negative");
  s.rows = a.lead ? a.rows : 1;
  s.out_shape = s.elem;
  if (a.lead) s.out_shape.insert(s.out_shape.begin(), a.rows);
  s.per_row = shape_num_elements(s.elem);
  s.seed =
      static_cast<uint64_t>(find_attr(a.instr, "seed") ? attr_int(a.instr, "seed", 0) : static_cast<int64_t>(a.seed));
  s.op_id = static_cast<uint64_t>(attr_int(a.instr, "op_id", 0));
  return s;
}

template <class F>
void for_each_stream(const KernelArgs& a, const Setup& s, F&& draw_row) {
  for (int64_t r = 0; r < s.rows; ++r) {
    RandomStream stream(s.seed, s.op_id, static_cast<uint64_t>(a.first_index + r), static_cast<uint64_t>(a.epoch));
    draw_row(stream, r * s.per_row);
  }
}

Tensor operand_or(const KernelArgs& a, size_t i, double fallback, DType dtype) {
  if (i < a.in.size()) return cast_tensor(a.in[i], dtype);
  return tensor_from_value(Value::make_float(fallback), dtype, {});
}

Tensor uniform_kernel(const KernelArgs& a) {
  Setup s = setup(a);
  const DType rt = a.out_dtype();
  const bool wide = rt == DType::F64;
  Tensor u = Tensor::empty(wide ? DType::F64 : DType::F32, s.out_shape);
  for_each_stream(a, s, [&](RandomStream& st, int64_t at) {
    if (wide) {
      double* p = u.data<double>() + at;
      for (int64_t k = 0; k < s.per_row; ++k) p[k] = st.uniform_double();
    } else {
      float* p = u.data<float>() + at;
      for (int64_t k = 0; k < s.per_row; ++k) p[k] = st.uniform_float();
    }
  });
  Tensor lo = operand_or(a, 0, 0.0, rt), hi = operand_or(a, 1, 1.0, rt);
  Tensor out = Tensor::empty(rt, s.out_shape);
  BroadcastPlan plan = plan_broadcast(s.out_shape, {&u.shape(), &lo.shape(), &hi.shape()});
  visit_numeric(rt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using U = std::conditional_t<std::is_same_v<T, double>, double, float>;
    ternary_loop(plan, u.data<U>(), lo.data<T>(), hi.data<T>(), out.data<T>(), [](U x, T l, T h) {
      U lv = static_cast<U>(load(l)), hv = static_cast<U>(load(h));
      return convert<T>(static_cast<U>(lv + (hv - lv) * x));
    });
  });
  return out;
}

Tensor normal_kernel(const KernelArgs& a) {
  Setup s = setup(a);
  Tensor z = Tensor::empty(DType::F64, s.out_shape);
  for_each_stream(a, s, [&](RandomStream& st, int64_t at) {
    double* p = z.data<double>() + at;
    for (int64_t k = 0; k < s.per_row; ++k) p[k] = st.normal();
  });
  Tensor mean = operand_or(a, 0, 0.0, DType::F64), sd = operand_or(a, 1, 1.0, DType::F64);
  const DType rt = a.out_dtype();
  Tensor out = Tensor::empty(rt, s.out_shape);
  BroadcastPlan plan = plan_broadcast(s.out_shape, {&z.shape(), &mean.shape(), &sd.shape()});
  visit_numeric(rt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    ternary_loop(plan, z.data<double>(), mean.data<double>(), sd.data<double>(), out.data<T>(),
                 [](double x, double m, double d) { return convert<T>(m + d * x); });
  });
  return out;
}

Tensor int_kernel(const KernelArgs& a) {
  Setup s = setup(a);
  if (a.in.size() < 2) throw OpError("needs lo and hi");
  Tensor lo = cast_tensor(a.in[0], DType::I64), hi = cast_tensor(a.in[1], DType::I64);
  const bool scalar = lo.num_elements() == 1 && hi.num_elements() == 1;
  if (!scalar) {
    lo = broadcast_to(lo, s.out_shape);
    hi = broadcast_to(hi, s.out_shape);
  }
  const int64_t* pl = lo.data<int64_t>();
  const int64_t* ph = hi.data<int64_t>();
  std::vector<int64_t> v(static_cast<size_t>(s.rows * s.per_row));
  for_each_stream(a, s, [&](RandomStream& st, int64_t at) {
    for (int64_t k = 0; k < s.per_row; ++k) {
      int64_t l = scalar ? pl[0] : pl[at + k], h = scalar ? ph[0] : ph[at + k];
      if (l >= h) throw OpError(fmt::format("needs lo < hi, got lo = {} and hi = {}", l, h));
      v[at + k] = st.uniform_int(l, h - 1);
    }
  });
  const DType rt = a.out_dtype();
  Tensor out = Tensor::empty(rt, s.out_shape);
  visit_numeric(rt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    for (size_t i = 0; i < v.size(); ++i) o[i] = convert<T>(v[i]);
  });
  return out;
}

}  // namespace

void register_random(KernelTable& t) {
  t.set(OpKind::RandomUniform, uniform_kernel);
  t.set(OpKind::RandomNormal, normal_kernel);
  t.set(OpKind::RandomInt, int_kernel);
}

}  // namespace pipec
