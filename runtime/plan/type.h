// Semantic types: what every expression, stage and declaration is known to be before anything runs.
//
// Tensors carry a dtype and a static shape whose dimensions may be unknown (`?`: not known at compile
// time, and for per-element fields possibly different from one element to the next). A dataset's type is
// its element type: named fields plus how many leading dimensions are batch dimensions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/dtype.h"

namespace pipec {

/// A dimension that is not known at compile time.
constexpr int64_t kUnknownDim = -1;

struct Type;

struct Field {
  std::string name;
  std::shared_ptr<const Type> type;
};

/// A dataset's element: its fields, its batch dimensions and how long it is.
struct ElementInfo {
  std::vector<Field> fields;
  int batch_rank = 0;            // leading dimensions of every field that are batch dimensions
  bool infinite = false;         // after repeat() with no count
  bool is_sink = false;          // a write(...) stage ends the pipeline
  bool on_gpu = false;           // after to(gpu)
  bool tfrecord_source = false;  // the records of a tfrecord source, no stage between (interleave needs it)
};

enum class TypeKind {
  Error,     // a poisoned type: an error was already reported, stay quiet about it
  Tensor,    // dtype + shape (scalars have rank 0)
  Record,    // named fields
  Dataset,   // a stream of records
  Symbol,    // a bare option word such as `same`, `auto`, `gzip`
  Function,  // a fn, op or stage used without being called
  Model,     // a model declaration
  Opaque,    // training values: losses, optimizers, precision policies, strategies
};

struct Type {
  TypeKind kind = TypeKind::Error;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::shared_ptr<const std::vector<Field>> fields;  // Record
  std::shared_ptr<const ElementInfo> element;        // Dataset
  std::string name;                                  // Symbol word, Function/Model/Opaque name
  /// A tensor from an untyped literal or const (`2`, `0.5`, `[1, -1]`): it takes the dtype of the
  /// other operand, like numpy's Python scalars. Not part of equality.
  bool weak = false;

  static Type error() { return Type{}; }
  static Type tensor(DType dt, std::vector<int64_t> shape = {});
  static Type record(std::vector<Field> fields);
  static Type dataset(ElementInfo info);
  static Type symbol(std::string word);
  static Type function(std::string name);
  static Type model(std::string name);
  static Type opaque(std::string what);

  bool is_error() const { return kind == TypeKind::Error; }
  bool is_tensor() const { return kind == TypeKind::Tensor; }
  bool is_scalar() const { return kind == TypeKind::Tensor && shape.empty(); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  bool fully_known() const;
  int64_t num_elements() const;  // kUnknownDim when any dim is unknown

  /// The field called `name`, or null.
  const Type* field(const std::string& name) const;

  bool operator==(const Type& o) const;
  bool operator!=(const Type& o) const { return !(*this == o); }
};

/// "f32[8, 8, 24]", "{board: f32[8, 8, 24], score: f32}", "dataset<{...}>".
std::string type_to_string(const Type& t);
std::string shape_to_spec(const std::vector<int64_t>& shape);
/// The element of a dataset printed for `pipec explain`: "{x: f32[512, 3]} batch=1".
std::string element_to_string(const ElementInfo& e);

}  // namespace pipec
