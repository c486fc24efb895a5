// Binary element-wise kernels: arithmetic, min/max, bit ops, shifts, comparisons and logic, all with
// numpy broadcasting. Integer arithmetic wraps around (two's complement); see the op structs for the
// cases numpy leaves undefined (division by zero, out-of-range shift counts, negative integer powers).
#include <cmath>

#include <fmt/format.h>

#include "runtime/core/dtype_dispatch.h"
#include "runtime/ops/elementwise_loops.h"
#include "runtime/ops/kernel.h"

namespace pipec {

namespace {

template <class C>
inline constexpr bool kAnyNumeric = true;
template <class C>
inline constexpr bool kIntegral = std::is_integral_v<C>;  // bool and integers
template <class C>
inline constexpr bool kIntOnly = is_int_v<C>;
template <class C>
inline constexpr bool kFloatOnly = std::is_floating_point_v<C>;

// Integer floor division (Python semantics). x // 0 = 0 (defined here, numpy warns and gives 0 too);
// MIN // -1 wraps to MIN.
template <class C>
C int_floordiv(C a, C b) {
  if constexpr (std::is_same_v<C, bool>) {
    return b ? a : false;
  } else {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<C>) {
      if (b == -1) return static_cast<C>(0 - static_cast<wide_u<C>>(a));
      C q = static_cast<C>(a / b);
      C r = static_cast<C>(a % b);
      if (r != 0 && ((r < 0) != (b < 0))) --q;
      return q;
    } else {
      return static_cast<C>(a / b);
    }
  }
}

// Integer modulo with the divisor's sign (Python). x % 0 = 0.
template <class C>
C int_mod(C a, C b) {
  if constexpr (std::is_same_v<C, bool>) {
    return false;
  } else {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<C>) {
      if (b == -1) return 0;
      C r = static_cast<C>(a % b);
      if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<C>(r + b);
      return r;
    } else {
      return static_cast<C>(a % b);
    }
  }
}

// Float modulo with the divisor's sign; x % 0 = NaN (like numpy).
template <class C>
C float_mod(C a, C b) {
  C m = std::fmod(a, b);
  if (b == 0) return m;
  if (m != 0) {
    if ((b < 0) != (m < 0)) m += b;
  } else {
    m = std::copysign(C(0), b);
  }
  return m;
}

// Float floor division consistent with float_mod (numpy's divmod); x // 0 = x / 0 (+-inf or NaN).
template <class C>
C float_floordiv(C a, C b) {
  if (b == 0) return a / b;
  C m = std::fmod(a, b);
  C div = (a - m) / b;
  if (m != 0 && ((b < 0) != (m < 0))) div -= 1;
  if (div != 0) {
    C fl = std::floor(div);
    if (div - fl > C(0.5)) fl += 1;
    return fl;
  }
  return std::copysign(C(0), a / b);
}

struct Add {
  template <class C>
  static constexpr bool defined = kAnyNumeric<C>;
  template <class C>
  static C apply(C a, C b) {
    if constexpr (std::is_floating_point_v<C>) return a + b;
    else return static_cast<C>(static_cast<wide_u<C>>(a) + static_cast<wide_u<C>>(b));
  }
};
struct Sub {
  template <class C>
  static constexpr bool defined = kAnyNumeric<C>;
  template <class C>
  static C apply(C a, C b) {
    if constexpr (std::is_floating_point_v<C>) return a - b;
    else return static_cast<C>(static_cast<wide_u<C>>(a) - static_cast<wide_u<C>>(b));
  }
};
struct Mul {
  template <class C>
  static constexpr bool defined = kAnyNumeric<C>;
  template <class C>
  static C apply(C a, C b) {
    if constexpr (std::is_floating_point_v<C>) return a * b;
    else return static_cast<C>(static_cast<wide_u<C>>(a) * static_cast<wide_u<C>>(b));
  }
};
struct Div {  // true division; the lowering gives it float operands (integers fall back to floordiv)
  template <class C>
  static constexpr bool defined = kAnyNumeric<C>;
  template <class C>
  static C apply(C a, C b) {
    if constexpr (std::is_floating_point_v<C>) return a / b;
    else return int_floordiv(a, b);
  }
};
struct FloorDiv {
  template <class C>
  static constexpr bool defined = kAnyNumeric<C>;
  template <class C>
  static C apply(C a, C b) {
    if constexpr (std::is_floating_point_v<C>) return float_floordiv(a, b);
    else return int_floordiv(a, b);
  }
};
struct Mod {
  template <class C>
  static constexpr bool defined = kAnyNumeric<C>;
  template <class C>
  static C apply(C a, C b) {
    if constexpr (std::is_floating_point_v<C>) return float_mod(a, b);
    else return int_mod(a, b);
  }
};
// Integer powers by squaring, wrapping. A negative exponent gives the truncated 1 / a^|b|: 1 for a = 1,
// +-1 for a = -1, 0 otherwise (numpy raises instead).
struct Pow {
  template <class C>
  static constexpr bool defined = kAnyNumeric<C>;
  template <class C>
  static C apply(C a, C b) {
    if constexpr (std::is_floating_point_v<C>) {
      return std::pow(a, b);
    } else {
      if constexpr (std::is_signed_v<C>) {
        if (b < 0) {
          if (a == 1) return 1;
          if (a == -1) return (b & 1) ? C(-1) : C(1);
          return 0;
        }
      }
      using U = wide_u<C>;
      U result = 1, base = static_cast<U>(a), e = static_cast<U>(b);
      while (e) {
        if (e & 1) result = static_cast<U>(result * base);
        base = static_cast<U>(base * base);
        e >>= 1;
      }
      return static_cast<C>(result);
    }
  }
};
// max/min propagate NaN (numpy maximum/minimum, TensorFlow).
struct Max {
  template <class C>
  static constexpr bool defined = kAnyNumeric<C>;
  template <class C>
  static C apply(C a, C b) {
    if constexpr (std::is_floating_point_v<C>) return (a > b || a != a) ? a : b;
    else return a > b ? a : b;
  }
};
struct Min {
  template <class C>
  static constexpr bool defined = kAnyNumeric<C>;
  template <class C>
  static C apply(C a, C b) {
    if constexpr (std::is_floating_point_v<C>) return (a < b || a != a) ? a : b;
    else return a < b ? a : b;
  }
};
struct Atan2 {
  template <class C>
  static constexpr bool defined = kFloatOnly<C>;
  template <class C>
  static C apply(C a, C b) {
    return std::atan2(a, b);
  }
};
struct BitAnd {
  template <class C>
  static constexpr bool defined = kIntegral<C>;
  template <class C>
  static C apply(C a, C b) {
    return static_cast<C>(a & b);
  }
};
struct BitOr {
  template <class C>
  static constexpr bool defined = kIntegral<C>;
  template <class C>
  static C apply(C a, C b) {
    return static_cast<C>(a | b);
  }
};
struct BitXor {
  template <class C>
  static constexpr bool defined = kIntegral<C>;
  template <class C>
  static C apply(C a, C b) {
    return static_cast<C>(a ^ b);
  }
};
// Shift counts outside [0, bits) shift everything out: shl gives 0, shr gives 0 or -1 (sign fill).
struct Shl {
  template <class C>
  static constexpr bool defined = kIntOnly<C>;
  template <class C>
  static C apply(C a, C b) {
    constexpr C bits = static_cast<C>(sizeof(C) * 8);
    if constexpr (std::is_signed_v<C>) {
      if (b < 0) return 0;
    }
    if (b >= bits) return 0;
    return static_cast<C>(static_cast<wide_u<C>>(a) << b);
  }
};
struct Shr {
  template <class C>
  static constexpr bool defined = kIntOnly<C>;
  template <class C>
  static C apply(C a, C b) {
    constexpr C bits = static_cast<C>(sizeof(C) * 8);
    if constexpr (std::is_signed_v<C>) {
      if (b < 0 || b >= bits) return a < 0 ? C(-1) : C(0);
      return static_cast<C>(a >> b);  // arithmetic (C++20)
    } else {
      if (b >= bits) return 0;
      return static_cast<C>(a >> b);
    }
  }
};

struct Eq {
  template <class C>
  static bool apply(C a, C b) {
    return a == b;
  }
};
struct Ne {
  template <class C>
  static bool apply(C a, C b) {
    return a != b;
  }
};
struct Lt {
  template <class C>
  static bool apply(C a, C b) {
    return a < b;
  }
};
struct Le {
  template <class C>
  static bool apply(C a, C b) {
    return a <= b;
  }
};
struct Gt {
  template <class C>
  static bool apply(C a, C b) {
    return a > b;
  }
};
struct Ge {
  template <class C>
  static bool apply(C a, C b) {
    return a >= b;
  }
};
struct And {
  static bool apply(bool a, bool b) { return a && b; }
};
struct Or {
  static bool apply(bool a, bool b) { return a || b; }
};

struct Prepared {
  Tensor x, y, out;
  BroadcastPlan plan;
};

Prepared prepare(const Tensor& x, const Tensor& y, DType out_dtype) {
  Prepared p{x, y, {}, {}};
  Shape shape = broadcast_shape({&x.shape(), &y.shape()});
  p.plan = plan_broadcast(shape, {&x.shape(), &y.shape()});
  p.out = Tensor::empty(out_dtype, shape);
  return p;
}

template <class Op>
Tensor arith_kernel(const KernelArgs& a) {
  DType rt = a.out_dtype();
  Prepared p = prepare(cast_tensor(a.in.at(0), rt), cast_tensor(a.in.at(1), rt), rt);
  visit_numeric(rt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    if constexpr (Op::template defined<C>) {
      binary_loop(p.plan, p.x.data<T>(), p.y.data<T>(), p.out.data<T>(),
                  [](T u, T v) { return store<T>(Op::apply(load(u), load(v))); });
    } else {
      throw OpError(fmt::format("not defined for {}", dtype_name(rt)));
    }
  });
  return p.out;
}

template <class Op>
Tensor bytes_compare(const Tensor& x, const Tensor& y) {
  Prepared p = prepare(x, y, DType::Bool);
  bool* out = p.out.data<bool>();
  const bool want_equal = std::is_same_v<Op, Eq>;
  p.plan.for_each([&](const BroadcastPlan::Offsets& off, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
      out[off[0] + i] =
          (x.str(off[1] + i * p.plan.inner_stride[1]) == y.str(off[2] + i * p.plan.inner_stride[2])) == want_equal;
  });
  return p.out;
}

template <class Op>
Tensor compare_kernel(const KernelArgs& a) {
  const Tensor& x = a.in.at(0);
  Tensor y = a.in.at(1);
  if (x.dtype() == DType::Bytes || y.dtype() == DType::Bytes) {
    if (x.dtype() != y.dtype()) throw OpError("cannot compare byte strings with numbers");
    if constexpr (std::is_same_v<Op, Eq> || std::is_same_v<Op, Ne>) return bytes_compare<Op>(x, y);
    else throw OpError("byte strings support only == and !=");
  }
  y = cast_tensor(y, x.dtype());
  Prepared p = prepare(x, y, DType::Bool);
  visit_numeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    binary_loop(p.plan, p.x.data<T>(), p.y.data<T>(), p.out.data<bool>(),
                [](T u, T v) { return Op::apply(load(u), load(v)); });
  });
  return p.out;
}

template <class Op>
Tensor logic_kernel(const KernelArgs& a) {
  Prepared p = prepare(cast_tensor(a.in.at(0), DType::Bool), cast_tensor(a.in.at(1), DType::Bool), DType::Bool);
  binary_loop(p.plan, p.x.data<bool>(), p.y.data<bool>(), p.out.data<bool>(),
              [](bool u, bool v) { return Op::apply(u, v); });
  return p.out;
}

}  // namespace

void register_elementwise_binary(KernelTable& t) {
  t.set(OpKind::Add, arith_kernel<Add>);
  t.set(OpKind::Sub, arith_kernel<Sub>);
  t.set(OpKind::Mul, arith_kernel<Mul>);
  t.set(OpKind::Div, arith_kernel<Div>);
  t.set(OpKind::FloorDiv, arith_kernel<FloorDiv>);
  t.set(OpKind::Mod, arith_kernel<Mod>);
  t.set(OpKind::Pow, arith_kernel<Pow>);
  t.set(OpKind::Max, arith_kernel<Max>);
  t.set(OpKind::Min, arith_kernel<Min>);
  t.set(OpKind::Atan2, arith_kernel<Atan2>);
  t.set(OpKind::BitAnd, arith_kernel<BitAnd>);
  t.set(OpKind::BitOr, arith_kernel<BitOr>);
  t.set(OpKind::BitXor, arith_kernel<BitXor>);
  t.set(OpKind::Shl, arith_kernel<Shl>);
  t.set(OpKind::Shr, arith_kernel<Shr>);
  t.set(OpKind::Eq, compare_kernel<Eq>);
  t.set(OpKind::Ne, compare_kernel<Ne>);
  t.set(OpKind::Lt, compare_kernel<Lt>);
  t.set(OpKind::Le, compare_kernel<Le>);
  t.set(OpKind::Gt, compare_kernel<Gt>);
  t.set(OpKind::Ge, compare_kernel<Ge>);
  t.set(OpKind::And, logic_kernel<And>);
  t.set(OpKind::Or, logic_kernel<Or>);
}

}  // namespace pipec
