// Unary element-wise kernels: negation, logic and bit not, abs/sign, float math, rounding, activations.
// 16-bit floats compute in f32 and round once; f32 uses the float overloads of <cmath>, f64 the double ones.
#include <cmath>

#include <fmt/format.h>

#include "runtime/core/dtype_dispatch.h"
#include "runtime/ops/elementwise_loops.h"
#include "runtime/ops/kernel.h"

namespace pipec {

namespace {

template <class C>
inline constexpr bool kFloat = std::is_floating_point_v<C>;

struct Neg {  // integers wrap (-MIN = MIN); -bool is the bool itself (nonzero stays nonzero)
  template <class C>
  static constexpr bool defined = true;
  template <class C>
  static C apply(C a) {
    if constexpr (kFloat<C>) return -a;
    else if constexpr (std::is_same_v<C, bool>) return a;
    else return static_cast<C>(0 - static_cast<wide_u<C>>(a));
  }
};
struct BitNot {
  template <class C>
  static constexpr bool defined = std::is_integral_v<C>;
  template <class C>
  static C apply(C a) {
    if constexpr (std::is_same_v<C, bool>) return !a;
    else return static_cast<C>(~a);
  }
};
struct Abs {  // abs(MIN) = MIN for signed integers (wraps, like numpy)
  template <class C>
  static constexpr bool defined = true;
  template <class C>
  static C apply(C a) {
    if constexpr (kFloat<C>) return std::fabs(a);
    else if constexpr (std::is_signed_v<C>) return a < 0 ? static_cast<C>(0 - static_cast<wide_u<C>>(a)) : a;
    else return a;
  }
};
struct Sign {  // -1, 0 or 1; sign(+-0.0) = +0.0, sign(NaN) = NaN
  template <class C>
  static constexpr bool defined = true;
  template <class C>
  static C apply(C a) {
    if constexpr (kFloat<C>) return a > 0 ? C(1) : a < 0 ? C(-1) : a == 0 ? C(0) : a;
    else if constexpr (std::is_signed_v<C>) return static_cast<C>((a > 0) - (a < 0));
    else return static_cast<C>(a > 0);
  }
};
struct Relu {  // max(x, 0); NaN stays NaN
  template <class C>
  static constexpr bool defined = true;
  template <class C>
  static C apply(C a) {
    if constexpr (kFloat<C> || std::is_signed_v<C>) return a < 0 ? C(0) : a;
    else return a;
  }
};
struct Square {
  template <class C>
  static constexpr bool defined = true;
  template <class C>
  static C apply(C a) {
    if constexpr (kFloat<C>) return a * a;
    else return static_cast<C>(static_cast<wide_u<C>>(a) * static_cast<wide_u<C>>(a));
  }
};

#define PIPEC_FLOAT_UNARY(Name, expr)          \
  struct Name {                                \
    template <class C>                         \
    static constexpr bool defined = kFloat<C>; \
    template <class C>                         \
    static C apply(C a) {                      \
      return expr;                             \
    }                                          \
  };
PIPEC_FLOAT_UNARY(Tanh, std::tanh(a))
PIPEC_FLOAT_UNARY(Exp, std::exp(a))
PIPEC_FLOAT_UNARY(Log, std::log(a))
PIPEC_FLOAT_UNARY(Log1p, std::log1p(a))
PIPEC_FLOAT_UNARY(Sqrt, std::sqrt(a))
PIPEC_FLOAT_UNARY(Rsqrt, C(1) / std::sqrt(a))
PIPEC_FLOAT_UNARY(Sin, std::sin(a))
PIPEC_FLOAT_UNARY(Cos, std::cos(a))
PIPEC_FLOAT_UNARY(Floor, std::floor(a))
PIPEC_FLOAT_UNARY(Ceil, std::ceil(a))
#undef PIPEC_FLOAT_UNARY

struct Round {  // half to even, independent of the FP rounding mode; keeps the sign of zero
  template <class C>
  static constexpr bool defined = kFloat<C>;
  template <class C>
  static C apply(C a) {
    C r = std::floor(a);
    C d = a - r;
    if (d > C(0.5) || (d == C(0.5) && std::fmod(r, C(2)) != 0)) r += 1;
    if (r == 0) r = std::copysign(C(0), a);
    return r;
  }
};
struct Sigmoid {  // 1 / (1 + exp(-x)), written so that exp never overflows
  template <class C>
  static constexpr bool defined = kFloat<C>;
  template <class C>
  static C apply(C a) {
    if (a >= 0) return C(1) / (C(1) + std::exp(-a));
    C e = std::exp(a);
    return e / (C(1) + e);
  }
};

template <class Op>
Tensor unary_kernel(const KernelArgs& a) {
  DType rt = a.out_dtype();
  Tensor x = cast_tensor(a.in.at(0), rt);
  Tensor out = Tensor::empty(rt, x.shape());
  const int64_t n = x.num_elements();
  visit_numeric(rt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    if constexpr (Op::template defined<C>) {
      const T* p = x.data<T>();
      T* o = out.data<T>();
      for (int64_t i = 0; i < n; ++i) o[i] = store<T>(Op::apply(load(p[i])));
    } else {
      throw OpError(fmt::format("not defined for {}", dtype_name(rt)));
    }
  });
  return out;
}

Tensor not_kernel(const KernelArgs& a) {
  Tensor x = cast_tensor(a.in.at(0), DType::Bool);
  Tensor out = Tensor::empty(DType::Bool, x.shape());
  const bool* p = x.data<bool>();
  bool* o = out.data<bool>();
  for (int64_t i = 0, n = x.num_elements(); i < n; ++i) o[i] = !p[i];
  return out;
}

}  // namespace

void register_elementwise_unary(KernelTable& t) {
  t.set(OpKind::Neg, unary_kernel<Neg>);
  t.set(OpKind::Not, not_kernel);
  t.set(OpKind::BitNot, unary_kernel<BitNot>);
  t.set(OpKind::Abs, unary_kernel<Abs>);
  t.set(OpKind::Sign, unary_kernel<Sign>);
  t.set(OpKind::Relu, unary_kernel<Relu>);
  t.set(OpKind::Square, unary_kernel<Square>);
  t.set(OpKind::Tanh, unary_kernel<Tanh>);
  t.set(OpKind::Exp, unary_kernel<Exp>);
  t.set(OpKind::Log, unary_kernel<Log>);
  t.set(OpKind::Log1p, unary_kernel<Log1p>);
  t.set(OpKind::Sqrt, unary_kernel<Sqrt>);
  t.set(OpKind::Rsqrt, unary_kernel<Rsqrt>);
  t.set(OpKind::Sin, unary_kernel<Sin>);
  t.set(OpKind::Cos, unary_kernel<Cos>);
  t.set(OpKind::Floor, unary_kernel<Floor>);
  t.set(OpKind::Ceil, unary_kernel<Ceil>);
  t.set(OpKind::Round, unary_kernel<Round>);
  t.set(OpKind::Sigmoid, unary_kernel<Sigmoid>);
}

}  // namespace pipec
