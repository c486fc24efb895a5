// The const kernel: a compile-time Value (scalar, nested list or string) as a row-invariant tensor.
#include <fmt/format.h>

#include "runtime/core/dtype_dispatch.h"
#include "runtime/ops/kernel.h"

namespace pipec {

namespace {

void flatten(const Value& v, std::vector<const Value*>& out) {
  if (v.kind == Value::List) {
    for (const Value& x : v.items) flatten(x, out);
  } else {
    out.push_back(&v);
  }
}

template <class T>
T scalar_as(const Value& v) {
  switch (v.kind) {
    case Value::Float: return convert<T>(v.f);
    case Value::Bool: return convert<T>(v.b);
    case Value::Int:
      if (v.dtype == DType::U64) return convert<T>(static_cast<uint64_t>(v.i));
      return convert<T>(v.i);
    default: throw OpError("constant " + v.to_string() + " is not a number");
  }
}

}  // namespace

Tensor tensor_from_value(const Value& v, DType dtype, const Shape& shape) {
  std::vector<const Value*> items;
  flatten(v, items);
  const int64_t n = shape_num_elements(shape);
  const bool fill = items.size() == 1 && v.kind != Value::List;  // a scalar fills the whole shape
  if (!fill && static_cast<int64_t>(items.size()) != n)
    throw OpError(
        fmt::format("constant has {} values but its type {} needs {}", items.size(), shape_to_string(shape), n));
  if (dtype == DType::Bytes) {
    std::vector<std::string> strings;
    for (int64_t i = 0; i < n; ++i) {
      const Value* s = items[fill ? 0 : i];
      if (s->kind != Value::String) throw OpError("constant " + s->to_string() + " is not a byte string");
      strings.push_back(s->s);
    }
    return Tensor::from_strings(strings, shape);
  }
  Tensor t = Tensor::empty(dtype, shape);
  visit_numeric(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data<T>();
    if (fill) {
      T x = scalar_as<T>(*items[0]);
      for (int64_t i = 0; i < n; ++i) p[i] = x;
    } else {
      for (int64_t i = 0; i < n; ++i) p[i] = scalar_as<T>(*items[i]);
    }
  });
  return t;
}

namespace {

Tensor const_kernel(const KernelArgs& a) {
  const Value* v = find_attr(a.instr, "value");
  if (!v) throw OpError("missing attribute `value`");
  return tensor_from_value(*v, a.instr.type.dtype, a.instr.type.shape);
}

}  // namespace

void register_constant(KernelTable& t) { t.set(OpKind::Const, const_kernel); }

}  // namespace pipec
