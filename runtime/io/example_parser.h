// ExampleParser: turns a batch of serialized tf.train.Example records into one column per
// requested feature, without a protobuf library.
//
//   Example  { Features features = 1; }
//   Features { map<string, Feature> feature = 1; }
//   Feature  { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2;
//                           Int64List int64_list = 3; } }
//   BytesList { repeated bytes value = 1; }   FloatList { repeated float value = 1 [packed]; }
//   Int64List { repeated int64 value = 1 [packed]; }
//
// Only requested features are decoded; other map entries are skipped by their length. Packed and
// unpacked encodings are both accepted, as are protobuf's merge rules (a repeated map key: the last
// one wins; a oneof set twice: the last kind wins). A Feature with no kind set counts as missing
// for a fixed-shape feature and as an empty row for a variable-length one. A record that is a
// SequenceExample parses as its context features (field 1 of both messages is a Features).
//
// Column layout (see FeatureSpec): fixed features fill a dense tensor [batch, shape...] directly;
// variable-length ones fill a flat values tensor plus I64 row_splits [batch + 1]. Per batch the
// parser allocates each output column once; nothing is allocated per record.
//
// Errors are DataErrors whose location holds the record's index *within the batch* (and no file):
//   "record 17: feature 's' is missing and has no default"              (InvalidArgument)
//   "record 2: feature 's' is bytes_list but the spec says int64"        (InvalidArgument)
//   "record 0: feature 'x' has 7 values, expected 10"                    (InvalidArgument)
//   "record 5: malformed Example: length runs past the end of the message (at byte 9 of 40)"
//                                                                                      (DataLoss)
// A caller that knows the file and the first record's index re-locates it with
// DataError::with_location.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/core/tensor.h"
#include "runtime/io/feature_spec.h"

namespace pipec {

struct ParsedColumn {
  /// Fixed: [batch, shape...] (U8 adds a last dim of byte_length). Variable: the values of all
  /// rows back to back, shape [total].
  Tensor values;
  /// Variable-length only: I64 [batch + 1]; row i is values[row_splits[i] .. row_splits[i + 1]).
  Tensor row_splits;
  bool ragged = false;
};

class ExampleParser {
 public:
  /// Validates the specs (FeatureSpec::validate, distinct names); throws DataError InvalidArgument.
  explicit ExampleParser(std::vector<FeatureSpec> specs);

  const std::vector<FeatureSpec>& specs() const { return specs_; }
  /// The index of the feature called `name` in specs(), or -1.
  int find(std::string_view name) const;

  /// Parses `records` into out[i] for each specs()[i]. Thread-safe: a parser may be shared.
  void parse_batch(std::span<const std::string_view> records, std::vector<ParsedColumn>& out) const;

  /// Records laid out as TensorFlow writes them (each map entry key then value, each Feature one list,
  /// numbers packed) take a fast path with the same results and errors; anything else the general
  /// path. Off, every record takes the general path: tests compare the two.
  void set_fast_path(bool on) { fast_path_ = on; }

  // Internal, per-spec precomputed facts (defaults laid out as they are copied into a column).
  struct Plan {
    int64_t count = 0;  // values per record; -1 = variable length
    int64_t byte_length = -1;
    DType dtype = DType::I64;
    size_t dense_row_bytes = 0;  // bytes of one record's dense row (numeric / U8)
    bool has_default = false;
    std::string default_raw;                   // numeric / U8 default row, already in output layout
    int64_t default_count = 0;                 // values in the default row
    std::vector<std::string> default_strings;  // Bytes default row
  };

 private:
  int find_hashed(std::string_view name) const;

  std::vector<FeatureSpec> specs_;
  std::vector<Plan> plans_;
  std::vector<int32_t> table_;  // open-addressing hash of names -> spec index, -1 = empty
  uint64_t table_mask_ = 0;
  bool fast_path_ = true;
};

}  // namespace pipec
