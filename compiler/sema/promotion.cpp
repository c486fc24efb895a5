#include "compiler/sema/promotion.h"

#include <algorithm>

namespace pipec {

namespace {

int int_bits(DType t) { return static_cast<int>(dtype_size(t)) * 8; }

DType signed_of_bits(int bits) {
  switch (bits) {
    case 8: return DType::I8;
    case 16: return DType::I16;
    case 32: return DType::I32;
    default: return DType::I64;
  }
}

// The float type that holds both floats: f16 and bf16 meet at f32.
DType float_join(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::F64 || b == DType::F64) return DType::F64;
  if (a == DType::F32 || b == DType::F32) return DType::F32;
  return DType::F32;  // f16 with bf16
}

DType int_join(DType a, DType b) {
  if (a == b) return a;
  bool sa = is_signed_int(a), sb = is_signed_int(b);
  int ba = int_bits(a), bb = int_bits(b);
  if (sa == sb) return ba >= bb ? a : b;
  // Mixed signedness: the signed type must be wider than the unsigned one to hold both.
  int unsigned_bits = sa ? bb : ba;
  int signed_bits = sa ? ba : bb;
  return signed_of_bits(std::max(signed_bits, std::min(64, unsigned_bits * 2)));
}

}  // namespace

std::optional<Promoted> promote(DType a, bool a_weak, DType b, bool b_weak) {
  if (a == DType::Bytes || b == DType::Bytes) {
    if (a == b) return Promoted{a, a_weak && b_weak};
    return std::nullopt;
  }
  if (a_weak && b_weak) {
    if (is_float(a) || is_float(b)) return Promoted{DType::F64, true};
    // An integer literal meeting a bool becomes a bool, as it does with a bool tensor: `(1 < 2) == 2`
    // folds to what `(x < 2) == 2` computes (a comparison of bools), and a constant never means
    // something else than the same expression computed at run time.
    if (a == DType::Bool || b == DType::Bool) return Promoted{DType::Bool, true};
    return Promoted{DType::I64, true};
  }
  if (a_weak || b_weak) {
    DType strong = a_weak ? b : a;
    DType weak = a_weak ? a : b;
    // A float literal meeting an integer or bool tensor makes it f32 (the default float).
    if (is_float(weak) && !is_float(strong)) return Promoted{DType::F32, false};
    return Promoted{strong, false};
  }
  if (a == b) return Promoted{a, false};
  if (a == DType::Bool) return Promoted{b, false};
  if (b == DType::Bool) return Promoted{a, false};
  if (is_float(a) && is_float(b)) return Promoted{float_join(a, b), false};
  if (is_float(a)) return Promoted{a, false};
  if (is_float(b)) return Promoted{b, false};
  return Promoted{int_join(a, b), false};
}

std::optional<std::vector<int64_t>> broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da == db) out[i] = da;
    else if (da == 1) out[i] = db;
    else if (db == 1) out[i] = da;
    else if (da < 0) out[i] = db;
    else if (db < 0) out[i] = da;
    else return std::nullopt;
  }
  return out;
}

ShapeFit fit_shape(const std::vector<int64_t>& declared, const std::vector<int64_t>& got) {
  if (declared.size() != got.size()) return ShapeFit::Mismatch;
  bool ragged = false;
  for (size_t i = 0; i < declared.size(); ++i) {
    if (declared[i] < 0 || declared[i] == got[i]) continue;
    if (got[i] >= 0) return ShapeFit::Mismatch;
    ragged = true;
  }
  return ragged ? ShapeFit::Ragged : ShapeFit::Fits;
}

DType true_division_dtype(DType promoted) {
  if (is_float(promoted)) return promoted;
  if (promoted == DType::I64 || promoted == DType::U64) return DType::F64;
  return DType::F32;
}

DType binary_operand_dtype(BinaryOp op, DType promoted, DType result) {
  if (op == BinaryOp::Div) return result;
  if (promoted == DType::Bool && result != DType::Bool) return result;
  return promoted;
}

}  // namespace pipec
