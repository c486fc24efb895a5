// FeatureSpec: what the example parser should extract from each tf.train.Example, and in what form.
//
//   shape {}      one value per record            -> dense [batch]
//   shape {d...}  exactly prod(d) values          -> dense [batch, d...]
//   shape {-1}    any number of values            -> flat values [total] + row_splits [batch + 1]
//   kind Bytes with byte_length N (pipec's bytes[N]): every value must be exactly N bytes, and the
//                 column is a U8 tensor [batch, d..., N] instead of a Bytes tensor.
//
// Output dtypes: Int64 -> I64, Float -> F32, Bytes -> Bytes (or U8 with byte_length).
// A default, if given, replaces a feature that is missing from a record (absent, or present with
// no kind set); a list present with the wrong number of values, even none, is an error, as in tf.io. For a fixed shape
// it holds one value (repeated) or prod(d) values; for a variable-length feature it is the whole row (an empty default
// makes "missing" mean "empty", as tf.io.VarLenFeature does).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "runtime/core/dtype.h"
#include "runtime/core/tensor.h"

namespace pipec {

enum class FeatureKind { Bytes, Int64, Float };

/// The spec spelling: "bytes", "int64", "float".
std::string_view feature_kind_name(FeatureKind kind);
/// The tf.train.Feature field name: "bytes_list", "int64_list", "float_list".
std::string_view feature_list_name(FeatureKind kind);

using FeatureValues = std::variant<std::vector<std::string>, std::vector<int64_t>, std::vector<float>>;

struct FeatureSpec {
  std::string name;
  FeatureKind kind = FeatureKind::Int64;
  Shape shape;               ///< {} scalar; fixed dims; or {-1} for variable length
  int64_t byte_length = -1;  ///< Bytes only: fixed byte length of every value; -1 = any
  std::optional<FeatureValues> default_value;

  static FeatureSpec scalar(std::string name, FeatureKind kind);
  static FeatureSpec fixed(std::string name, FeatureKind kind, Shape shape);
  static FeatureSpec var_len(std::string name, FeatureKind kind);
  /// A bytes feature whose single value (or prod(shape) values) is exactly `byte_length` bytes.
  static FeatureSpec fixed_bytes(std::string name, int64_t byte_length, Shape shape = {});
  FeatureSpec with_default(FeatureValues values) &&;

  bool variable_length() const { return shape.size() == 1 && shape[0] == -1; }
  /// Values per record for a fixed shape; -1 for variable length.
  int64_t values_per_record() const;
  DType output_dtype() const;

  /// Throws DataError (InvalidArgument) if the spec is inconsistent: bad shape, byte_length on a
  /// non-bytes or variable-length feature, a default of the wrong kind, size or byte length.
  void validate() const;
};

}  // namespace pipec
