#include "runtime/io/feature_spec.h"

#include <fmt/format.h>

#include "runtime/io/errors.h"

namespace pipec {

std::string_view feature_kind_name(FeatureKind kind) {
  switch (kind) {
    case FeatureKind::Bytes: return "bytes";
    case FeatureKind::Int64: return "int64";
    case FeatureKind::Float: return "float";
  }
  return "?";
}

std::string_view feature_list_name(FeatureKind kind) {
  switch (kind) {
    case FeatureKind::Bytes: return "bytes_list";
    case FeatureKind::Int64: return "int64_list";
    case FeatureKind::Float: return "float_list";
  }
  return "?";
}

FeatureSpec FeatureSpec::scalar(std::string name, FeatureKind kind) { return fixed(std::move(name), kind, {}); }

FeatureSpec FeatureSpec::fixed(std::string name, FeatureKind kind, Shape shape) {
  FeatureSpec s;
  s.name = std::move(name);
  s.kind = kind;
  s.shape = std::move(shape);
  return s;
}

FeatureSpec FeatureSpec::var_len(std::string name, FeatureKind kind) { return fixed(std::move(name), kind, {-1}); }

FeatureSpec FeatureSpec::fixed_bytes(std::string name, int64_t byte_length, Shape shape) {
  FeatureSpec s = fixed(std::move(name), FeatureKind::Bytes, std::move(shape));
  s.byte_length = byte_length;
  return s;
}

FeatureSpec FeatureSpec::with_default(FeatureValues values) && {
  default_value = std::move(values);
  return std::move(*this);
}

int64_t FeatureSpec::values_per_record() const { return variable_length() ? -1 : shape_num_elements(shape); }

DType FeatureSpec::output_dtype() const {
  switch (kind) {
    case FeatureKind::Bytes: return byte_length >= 0 ? DType::U8 : DType::Bytes;
    case FeatureKind::Int64: return DType::I64;
    case FeatureKind::Float: return DType::F32;
  }
  return DType::Bytes;
}

void FeatureSpec::validate() const {
  auto bad = [this](const std::string& why) {
    throw DataError(DataError::Kind::InvalidArgument, fmt::format("feature '{}': {}", name, why));
  };
  if (name.empty()) bad("the feature name is empty");
  if (!variable_length()) {
    for (int64_t d : shape)
      if (d < 0)
        bad(fmt::format("shape {} is not allowed; a variable-length feature has shape [-1]", shape_to_string(shape)));
  }
  if (byte_length >= 0 && kind != FeatureKind::Bytes) bad("a byte length is only allowed for bytes");
  if (byte_length >= 0 && variable_length()) bad("a fixed byte length needs a fixed number of values");
  if (byte_length < -1) bad(fmt::format("byte length {} is negative", byte_length));
  if (!default_value) return;

  size_t n = std::visit([](const auto& v) { return v.size(); }, *default_value);
  FeatureKind default_kind = std::holds_alternative<std::vector<std::string>>(*default_value) ? FeatureKind::Bytes
                             : std::holds_alternative<std::vector<int64_t>>(*default_value)   ? FeatureKind::Int64
                                                                                              : FeatureKind::Float;
  if (default_kind != kind)
    bad(fmt::format("the default holds {} values but the feature is {}", feature_kind_name(default_kind),
                    feature_kind_name(kind)));
  if (!variable_length()) {
    int64_t k = values_per_record();
    if (n != 1 && static_cast<int64_t>(n) != k)
      bad(fmt::format("the default has {} values; a feature of shape {} needs 1 or {}", n, shape_to_string(shape), k));
  }
  if (byte_length >= 0) {
    for (const auto& s : std::get<std::vector<std::string>>(*default_value))
      if (static_cast<int64_t>(s.size()) != byte_length)
        bad(fmt::format("a default value has {} bytes, expected {}", s.size(), byte_length));
  }
}

}  // namespace pipec
