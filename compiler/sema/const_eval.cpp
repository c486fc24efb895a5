#include "compiler/sema/const_eval.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/core/dtype_dispatch.h"

namespace pipec {

namespace {

bool is_scalar(const Value& v) { return v.kind == Value::Int || v.kind == Value::Float || v.kind == Value::Bool; }

// Wraps an i64 result into a narrower integer dtype, as the runtime would.
Value narrow(int64_t v, DType dt) {
  switch (dt) {
    case DType::U8: return Value::make_int(static_cast<uint8_t>(v), dt);
    case DType::I8: return Value::make_int(static_cast<int8_t>(v), dt);
    case DType::U16: return Value::make_int(static_cast<uint16_t>(v), dt);
    case DType::I16: return Value::make_int(static_cast<int16_t>(v), dt);
    case DType::U32: return Value::make_int(static_cast<uint32_t>(v), dt);
    case DType::I32: return Value::make_int(static_cast<int32_t>(v), dt);
    default: return Value::make_int(v, dt);
  }
}

}  // namespace

Value convert_value(const Value& v, DType to) {
  if (!is_scalar(v)) return v;
  if (to == DType::Bool) return Value::make_bool(v.as_double() != 0);
  if (is_float(to)) {
    // Rounded to the dtype's precision with the runtime's conversions, so that folding a cast, or an
    // operation whose result is f16 or bf16, gives the value the runtime stores (f16(0.1) * f16(3) is
    // 0.2998..., not 0.3; f16(100000.0) is inf).
    auto from = [&](auto target) {
      using T = decltype(target);
      if (v.kind == Value::Float) return convert<T>(v.f);
      if (v.kind == Value::Bool) return convert<T>(v.b);
      if (v.dtype == DType::U64) return convert<T>(static_cast<uint64_t>(v.i));  // its bits are in the i64
      return convert<T>(v.i);
    };
    switch (to) {
      case DType::F32: return Value::make_float(from(float{}), to);
      case DType::F16: return Value::make_float(convert<float>(from(f16_t{})), to);
      case DType::BF16: return Value::make_float(convert<float>(from(bf16_t{})), to);
      default: return Value::make_float(from(double{}), to);
    }
  }
  if (v.kind == Value::Float) {
    // The runtime's float -> integer conversion (truncate toward zero, saturate at the target's limits,
    // NaN -> 0), so a folded cast is what the same cast computes at run time.
    return visit_numeric(to, [&](auto tag) -> Value {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        const T x = convert<T>(v.f);
        if constexpr (std::is_same_v<T, uint64_t>) {
          int64_t bits;
          std::memcpy(&bits, &x, sizeof bits);  // u64 constants keep their bits in the i64
          return Value::make_int(bits, to);
        } else {
          return Value::make_int(static_cast<int64_t>(x), to);
        }
      } else {
        return narrow(0, to);  // not reached: `to` is an integer dtype here
      }
    });
  }
  return narrow(v.kind == Value::Bool ? (v.b ? 1 : 0) : v.i, to);
}

FoldResult fold_unary(UnaryOp op, const Value& v, DType result) {
  if (!is_scalar(v)) return {std::nullopt, FoldError::NotFoldable};
  switch (op) {
    case UnaryOp::Plus: return {convert_value(v, result)};
    case UnaryOp::Neg:
      if (is_float(result)) return {Value::make_float(-v.as_double(), result)};
      if (v.kind == Value::Int && v.i == std::numeric_limits<int64_t>::min())
        return {std::nullopt, FoldError::Overflow};
      return {narrow(-convert_value(v, DType::I64).i, result)};
    case UnaryOp::Not: return {Value::make_bool(v.as_double() == 0)};
    case UnaryOp::BitNot: return {narrow(~convert_value(v, DType::I64).i, result)};
  }
  return {std::nullopt, FoldError::NotFoldable};
}

FoldResult fold_binary(BinaryOp op, const Value& a_in, const Value& b_in, DType operands, DType result) {
  if (!is_scalar(a_in) || !is_scalar(b_in)) return {std::nullopt, FoldError::NotFoldable};
  // Both operands first become the dtype the run time computes in (lowering casts them the same way):
  // `bool(1) == 2` compares true with true, `u8(200) < 300` compares 200 with 300 wrapped to u8, and
  // `f32(0.1) == 0.1` compares two f32 values.
  const Value a = convert_value(a_in, operands), b = convert_value(b_in, operands);
  if (is_float(operands)) {
    const double x = a.f, y = b.f;  // exactly the operands' values: f16, bf16 and f32 fit in a double
    switch (op) {
      case BinaryOp::Eq: return {Value::make_bool(x == y)};
      case BinaryOp::Ne: return {Value::make_bool(x != y)};
      case BinaryOp::Lt: return {Value::make_bool(x < y)};
      case BinaryOp::Le: return {Value::make_bool(x <= y)};
      case BinaryOp::Gt: return {Value::make_bool(x > y)};
      case BinaryOp::Ge: return {Value::make_bool(x >= y)};
      default: break;
    }
    double r = 0;
    switch (op) {
      case BinaryOp::Add: r = x + y; break;
      case BinaryOp::Sub: r = x - y; break;
      case BinaryOp::Mul: r = x * y; break;
      case BinaryOp::Div: r = x / y; break;  // IEEE: inf/nan, as at run time
      case BinaryOp::FloorDiv: r = std::floor(x / y); break;
      case BinaryOp::Mod: r = y == 0 ? std::nan("") : x - std::floor(x / y) * y; break;
      case BinaryOp::Pow: r = std::pow(x, y); break;
      default: return {std::nullopt, FoldError::NotFoldable};
    }
    return {convert_value(Value::make_float(r, DType::F64), result)};
  }
  // Integers and bools, exactly (as doubles, 2**53 + 1 would equal 2**53). A u64 keeps its bits in the
  // i64, so it compares, divides and shifts as unsigned.
  const bool u64 = operands == DType::U64;
  const int64_t p = a.kind == Value::Bool ? a.b : a.i, q = b.kind == Value::Bool ? b.b : b.i;
  const uint64_t up = static_cast<uint64_t>(p), uq = static_cast<uint64_t>(q);
  switch (op) {
    case BinaryOp::Eq: return {Value::make_bool(p == q)};
    case BinaryOp::Ne: return {Value::make_bool(p != q)};
    case BinaryOp::Lt: return {Value::make_bool(u64 ? up < uq : p < q)};
    case BinaryOp::Le: return {Value::make_bool(u64 ? up <= uq : p <= q)};
    case BinaryOp::Gt: return {Value::make_bool(u64 ? up > uq : p > q)};
    case BinaryOp::Ge: return {Value::make_bool(u64 ? up >= uq : p >= q)};
    case BinaryOp::And: return {Value::make_bool(p != 0 && q != 0)};
    case BinaryOp::Or: return {Value::make_bool(p != 0 || q != 0)};
    default: break;
  }
  // Only i64 reports overflow (§2.2); narrower integers and u64 wrap, as at run time.
  const bool checked = result == DType::I64;
  int64_t r = 0;
  switch (op) {
    case BinaryOp::Add:
      if (__builtin_add_overflow(p, q, &r) && checked) return {std::nullopt, FoldError::Overflow};
      break;
    case BinaryOp::Sub:
      if (__builtin_sub_overflow(p, q, &r) && checked) return {std::nullopt, FoldError::Overflow};
      break;
    case BinaryOp::Mul:
      if (__builtin_mul_overflow(p, q, &r) && checked) return {std::nullopt, FoldError::Overflow};
      break;
    case BinaryOp::FloorDiv:
    case BinaryOp::Mod: {
      if (q == 0) return {std::nullopt, FoldError::DivisionByZero};
      if (u64) {
        r = static_cast<int64_t>(op == BinaryOp::FloorDiv ? up / uq : up % uq);
        break;
      }
      if (p == std::numeric_limits<int64_t>::min() && q == -1) return {std::nullopt, FoldError::Overflow};
      // Python semantics: floor division, the remainder takes the divisor's sign.
      int64_t d = p / q, m = p % q;
      if (m != 0 && ((m < 0) != (q < 0))) {
        d -= 1;
        m += q;
      }
      r = op == BinaryOp::FloorDiv ? d : m;
      break;
    }
    case BinaryOp::Pow: {
      if (q < 0 && !u64) return {std::nullopt, FoldError::NotFoldable};
      // 0, 1 and -1 never overflow, whatever the exponent; any other base overflows i64 within 64 steps.
      if (p == 0 || p == 1) r = (p == 0 && q != 0) ? 0 : 1;
      else if (p == -1) r = q % 2 ? -1 : 1;
      else if (checked) {
        r = 1;
        for (int64_t k = 0; k < q; ++k)
          if (__builtin_mul_overflow(r, p, &r)) return {std::nullopt, FoldError::Overflow};
      } else {
        uint64_t w = 1, base = up;  // wraps, by squaring (a u64 exponent may be huge)
        for (uint64_t e = uq; e; e >>= 1, base *= base)
          if (e & 1) w *= base;
        r = static_cast<int64_t>(w);
      }
      break;
    }
    case BinaryOp::BitAnd: r = p & q; break;
    case BinaryOp::BitXor: r = p ^ q; break;
    case BinaryOp::Shl:
      r = (uq > 63) ? 0 : static_cast<int64_t>(up << q);
      // For i64, bits shifted out (or into the sign) are an overflow like any other.
      if (checked && p != 0 && q >= 0 && (q > 63 || (r >> q) != p)) return {std::nullopt, FoldError::Overflow};
      break;
    case BinaryOp::Shr:
      if (u64) r = uq > 63 ? 0 : static_cast<int64_t>(up >> uq);
      else r = (q < 0 || q > 63) ? (p < 0 ? -1 : 0) : p >> q;
      break;
    default: return {std::nullopt, FoldError::NotFoldable};
  }
  if (result == DType::Bool) return {Value::make_bool(r != 0)};  // `&` and `^` of bools
  return {narrow(r, result)};
}

FoldResult fold_call(const std::string& name, const std::vector<Value>& args, DType result) {
  for (const Value& v : args)
    if (!is_scalar(v)) return {std::nullopt, FoldError::NotFoldable};
  if (args.size() == 1) {
    double x = args[0].as_double();
    double r;
    if (name == "abs") {
      if (!is_float(result)) {
        int64_t v = convert_value(args[0], DType::I64).i;
        if (v == std::numeric_limits<int64_t>::min()) return {std::nullopt, FoldError::Overflow};
        return {narrow(v < 0 ? -v : v, result)};
      }
      r = std::fabs(x);
    } else if (name == "sign") r = x > 0 ? 1 : x < 0 ? -1 : x == 0 ? 0 : x;  // NaN stays NaN, as at run time
    else if (name == "tanh") r = std::tanh(x);
    else if (name == "exp") r = std::exp(x);
    else if (name == "log") r = std::log(x);
    else if (name == "sqrt") r = std::sqrt(x);
    else if (name == "sin") r = std::sin(x);
    else if (name == "cos") r = std::cos(x);
    else if (name == "floor") r = std::floor(x);
    else if (name == "ceil") r = std::ceil(x);
    else if (name == "round") r = std::nearbyint(x);
    else if (name == "sigmoid") r = 1 / (1 + std::exp(-x));
    else if (auto dt = parse_dtype(name)) return {convert_value(args[0], *dt)};
    else return {std::nullopt, FoldError::NotFoldable};
    return {convert_value(Value::make_float(r, DType::F64), result)};
  }
  if (args.size() == 2 && (name == "max" || name == "min")) {
    // In the result's dtype, as the run-time kernel computes it (runtime/ops/elementwise_binary.cpp):
    // a NaN on either side wins, and of two equal values (0.0 and -0.0) the second.
    const Value a = convert_value(args[0], result), b = convert_value(args[1], result);
    const bool max = name == "max";
    bool take_a;
    if (is_float(result)) take_a = (max ? a.f > b.f : a.f < b.f) || a.f != a.f;
    else if (result == DType::U64) {
      const auto x = static_cast<uint64_t>(a.i), y = static_cast<uint64_t>(b.i);
      take_a = max ? x > y : x < y;
    } else {
      const int64_t x = a.kind == Value::Bool ? a.b : a.i, y = b.kind == Value::Bool ? b.b : b.i;
      take_a = max ? x > y : x < y;
    }
    return {take_a ? a : b};
  }
  return {std::nullopt, FoldError::NotFoldable};
}

}  // namespace pipec
