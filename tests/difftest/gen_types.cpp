#include "tests/difftest/gen_types.h"

namespace pipec::difftest {

std::string shape_literal(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string type_text(const GType& t) {
  std::string s(dtype_name(t.dtype));
  if (!t.shape.empty()) s += shape_literal(t.shape);
  return s;
}

const std::vector<DType>& field_dtypes() {
  static const std::vector<DType> v = {DType::Bool, DType::U8,  DType::I8,  DType::U16, DType::I16, DType::U32,
                                       DType::I32,  DType::U64, DType::I64, DType::F16, DType::F32, DType::F64};
  return v;
}

const std::vector<DType>& all_numeric_dtypes() {
  static const std::vector<DType> v = [] {
    std::vector<DType> d = field_dtypes();
    d.push_back(DType::BF16);
    return d;
  }();
  return v;
}

}  // namespace pipec::difftest
