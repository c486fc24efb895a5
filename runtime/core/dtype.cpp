#include "runtime/core/dtype.h"

namespace pipec {

std::string_view dtype_name(DType t) {
  switch (t) {
#define PIPEC_DTYPE_NAME(name, text, size) \
  case DType::name: return text;
    PIPEC_DTYPES(PIPEC_DTYPE_NAME)
#undef PIPEC_DTYPE_NAME
  }
  return "?";
}

size_t dtype_size(DType t) {
  switch (t) {
#define PIPEC_DTYPE_SIZE(name, text, size) \
  case DType::name: return size;
    PIPEC_DTYPES(PIPEC_DTYPE_SIZE)
#undef PIPEC_DTYPE_SIZE
  }
  return 0;
}

std::optional<DType> parse_dtype(std::string_view name) {
#define PIPEC_DTYPE_PARSE(name_, text, size) \
  if (name == text) return DType::name_;
  PIPEC_DTYPES(PIPEC_DTYPE_PARSE)
#undef PIPEC_DTYPE_PARSE
  return std::nullopt;
}

}  // namespace pipec
