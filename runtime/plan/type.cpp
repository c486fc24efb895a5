#include "runtime/plan/type.h"

#include <fmt/format.h>

namespace pipec {

Type Type::tensor(DType dt, std::vector<int64_t> shape) {
  Type t;
  t.kind = TypeKind::Tensor;
  t.dtype = dt;
  t.shape = std::move(shape);
  return t;
}

Type Type::record(std::vector<Field> fields) {
  Type t;
  t.kind = TypeKind::Record;
  t.fields = std::make_shared<const std::vector<Field>>(std::move(fields));
  return t;
}

Type Type::dataset(ElementInfo info) {
  Type t;
  t.kind = TypeKind::Dataset;
  t.element = std::make_shared<const ElementInfo>(std::move(info));
  return t;
}

Type Type::symbol(std::string word) {
  Type t;
  t.kind = TypeKind::Symbol;
  t.name = std::move(word);
  return t;
}

Type Type::function(std::string name) {
  Type t;
  t.kind = TypeKind::Function;
  t.name = std::move(name);
  return t;
}

Type Type::model(std::string name) {
  Type t;
  t.kind = TypeKind::Model;
  t.name = std::move(name);
  return t;
}

Type Type::opaque(std::string what) {
  Type t;
  t.kind = TypeKind::Opaque;
  t.name = std::move(what);
  return t;
}

bool Type::fully_known() const {
  for (int64_t d : shape)
    if (d < 0) return false;
  return true;
}

int64_t Type::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return kUnknownDim;
    n *= d;
  }
  return n;
}

const Type* Type::field(const std::string& n) const {
  const std::vector<Field>* fs = nullptr;
  if (kind == TypeKind::Record && fields) fs = fields.get();
  if (kind == TypeKind::Dataset && element) fs = &element->fields;
  if (!fs) return nullptr;
  for (const Field& f : *fs)
    if (f.name == n) return f.type.get();
  return nullptr;
}

static bool fields_equal(const std::vector<Field>& a, const std::vector<Field>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || *a[i].type != *b[i].type) return false;
  return true;
}

bool Type::operator==(const Type& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case TypeKind::Error: return true;
    case TypeKind::Tensor: return dtype == o.dtype && shape == o.shape;
    case TypeKind::Record: return fields_equal(*fields, *o.fields);
    case TypeKind::Dataset:
      return element->batch_rank == o.element->batch_rank && fields_equal(element->fields, o.element->fields);
    default: return name == o.name;
  }
}

std::string shape_to_spec(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += shape[i] < 0 ? "?" : std::to_string(shape[i]);
  }
  return s + "]";
}

static std::string fields_to_string(const std::vector<Field>& fields) {
  std::string s = "{";
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) s += ", ";
    s += fields[i].name + ": " + type_to_string(*fields[i].type);
  }
  return s + "}";
}

std::string type_to_string(const Type& t) {
  switch (t.kind) {
    case TypeKind::Error: return "<error>";
    case TypeKind::Tensor: {
      std::string s(dtype_name(t.dtype));
      if (!t.shape.empty()) s += shape_to_spec(t.shape);
      return s;
    }
    case TypeKind::Record: return fields_to_string(*t.fields);
    case TypeKind::Dataset: return "dataset<" + element_to_string(*t.element) + ">";
    case TypeKind::Symbol: return "option `" + t.name + "`";
    case TypeKind::Function: return "function `" + t.name + "`";
    case TypeKind::Model: return "model `" + t.name + "`";
    case TypeKind::Opaque: return t.name;
  }
  return "?";
}

std::string element_to_string(const ElementInfo& e) {
  std::string s = fields_to_string(e.fields);
  if (e.batch_rank) s += fmt::format(" batched({})", e.batch_rank);
  if (e.infinite) s += " infinite";
  if (e.on_gpu) s += " on gpu";
  return s;
}

}  // namespace pipec
