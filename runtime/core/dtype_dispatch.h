// Compile-time dtype machinery for the kernels: the C++ storage type of each DType, the type kernels
// compute in, value conversions with the interpreter's cast semantics, and visitors that turn a run-time
// DType into a template instantiation (one switch per kernel call, never per element).
//
// Conversion semantics (the reference the JIT and GPU kernels must match):
//   - to bool: nonzero -> true (NaN is nonzero); from bool: 0 / 1.
//   - integer -> integer: two's-complement wrap-around (keep the low bits), like numpy and TensorFlow.
//   - float -> integer: truncate toward zero; NaN -> 0; values beyond the target's range saturate to its
//     minimum / maximum (so negative floats give 0 for unsigned targets).
//   - -> f16 / bf16: round to nearest, ties to even, overflow to +-inf (see half.h).
//   - integer -> f32 / f64 and f64 -> f32: the C++ conversion (round to nearest even).
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "runtime/core/dtype.h"
#include "runtime/core/half.h"
#include "runtime/core/op_error.h"

namespace pipec {

template <class T>
inline constexpr bool is_half_v = std::is_same_v<T, f16_t> || std::is_same_v<T, bf16_t>;
template <class T>
inline constexpr bool is_float_v = std::is_floating_point_v<T> || is_half_v<T>;
template <class T>
inline constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

/// The type arithmetic happens in: f32 for the 16-bit floats, the storage type otherwise.
template <class T>
using compute_t = std::conditional_t<is_half_v<T>, float, T>;

template <class T>
struct TypeTag {
  using type = T;
};

template <class T>
DType dtype_of();

// ---- conversions -----------------------------------------------------------------------------------

template <class I, class F>
inline I float_to_int(F x) {
  if (x != x) return 0;
  constexpr F lo = static_cast<F>(std::numeric_limits<I>::min());  // 0 or -2^(bits-1): exact
  constexpr F hi = static_cast<F>(std::numeric_limits<I>::max() / 2 + 1) * static_cast<F>(2);  // 2^digits, exact
  if (x >= hi) return std::numeric_limits<I>::max();
  if (!(x > lo - static_cast<F>(1))) return std::numeric_limits<I>::min();
  return static_cast<I>(x);
}

/// Converts one value between storage types with the semantics above.
template <class D, class S>
inline D convert(S v) {
  if constexpr (std::is_same_v<D, S>) {
    return v;
  } else if constexpr (std::is_same_v<S, f16_t>) {
    return convert<D>(half_bits_to_float(v.bits));
  } else if constexpr (std::is_same_v<S, bf16_t>) {
    return convert<D>(bf16_bits_to_float(v.bits));
  } else if constexpr (std::is_same_v<D, bool>) {
    return v != 0;
  } else if constexpr (std::is_same_v<D, f16_t> || std::is_same_v<D, bf16_t>) {
    float f;
    if constexpr (std::is_same_v<S, double>) {
      f = double_to_float_round_odd(v);
    } else if constexpr (std::is_integral_v<S> && sizeof(S) >= 4 && !std::is_same_v<S, bool>) {
      if constexpr (std::is_signed_v<S>) {
        uint64_t m = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
        f = u64_to_float_round_odd(m);
        if (v < 0) f = -f;
      } else {
        f = u64_to_float_round_odd(static_cast<uint64_t>(v));
      }
    } else {
      f = static_cast<float>(v);
    }
    if constexpr (std::is_same_v<D, f16_t>) return D{float_to_half_bits(f)};
    else return D{float_to_bf16_bits(f)};
  } else if constexpr (std::is_floating_point_v<S> && is_int_v<D>) {
    return float_to_int<D>(v);
  } else {
    return static_cast<D>(v);  // int->int wraps (C++20), int->float and f64<->f32 round to nearest
  }
}

template <class T>
inline compute_t<T> load(T v) {
  if constexpr (is_half_v<T>) return convert<float>(v);
  else return v;
}
template <class T>
inline T store(compute_t<T> v) {
  if constexpr (is_half_v<T>) return convert<T>(v);
  else return v;
}

// ---- visitors ----------------------------------------------------------------------------------------

/// Calls f(TypeTag<T>{}) for the storage type of a numeric dtype; throws OpError for Bytes.
template <class F>
decltype(auto) visit_numeric(DType dt, F&& f) {
  switch (dt) {
    case DType::Bool: return f(TypeTag<bool>{});
    case DType::U8: return f(TypeTag<uint8_t>{});
    case DType::I8: return f(TypeTag<int8_t>{});
    case DType::U16: return f(TypeTag<uint16_t>{});
    case DType::I16: return f(TypeTag<int16_t>{});
    case DType::U32: return f(TypeTag<uint32_t>{});
    case DType::I32: return f(TypeTag<int32_t>{});
    case DType::U64: return f(TypeTag<uint64_t>{});
    case DType::I64: return f(TypeTag<int64_t>{});
    case DType::F16: return f(TypeTag<f16_t>{});
    case DType::BF16: return f(TypeTag<bf16_t>{});
    case DType::F32: return f(TypeTag<float>{});
    case DType::F64: return f(TypeTag<double>{});
    default: break;
  }
  throw OpError("not defined for byte strings");
}

/// Storage types of the same size share code in pure data movement (slice, gather, transpose...).
template <class F>
decltype(auto) visit_by_size(size_t bytes, F&& f) {
  switch (bytes) {
    case 1: return f(TypeTag<uint8_t>{});
    case 2: return f(TypeTag<uint16_t>{});
    case 4: return f(TypeTag<uint32_t>{});
    case 8: return f(TypeTag<uint64_t>{});
    default: break;
  }
  throw OpError("unsupported element size");
}

template <class T>
DType dtype_of() {
  if constexpr (std::is_same_v<T, bool>) return DType::Bool;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::U8;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::I8;
  else if constexpr (std::is_same_v<T, uint16_t>) return DType::U16;
  else if constexpr (std::is_same_v<T, int16_t>) return DType::I16;
  else if constexpr (std::is_same_v<T, uint32_t>) return DType::U32;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::I32;
  else if constexpr (std::is_same_v<T, uint64_t>) return DType::U64;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::I64;
  else if constexpr (std::is_same_v<T, f16_t>) return DType::F16;
  else if constexpr (std::is_same_v<T, bf16_t>) return DType::BF16;
  else if constexpr (std::is_same_v<T, float>) return DType::F32;
  else return DType::F64;
}

}  // namespace pipec
