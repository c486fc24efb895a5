// Helpers for the interpreter tests: tensors from literals, values back as doubles, direct kernel calls
// and a small builder for expression functions.
#pragma once

#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/core/chunk.h"
#include "runtime/core/dtype_dispatch.h"
#include "runtime/ops/interpreter.h"
#include "runtime/ops/kernel.h"

namespace pipec::ops_test {

/// A numeric tensor of `shape` from values converted with the cast semantics.
inline Tensor make(DType dt, Shape shape, const std::vector<double>& values) {
  Tensor t = Tensor::empty(dt, shape);
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.num_elements());
  visit_numeric(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < values.size(); ++i) t.data<T>()[i] = convert<T>(values[i]);
  });
  return t;
}

inline Tensor make_i64(Shape shape, const std::vector<int64_t>& values) {
  Tensor t = Tensor::empty(DType::I64, shape);
  for (size_t i = 0; i < values.size(); ++i) t.data<int64_t>()[i] = values[i];
  return t;
}

/// Every element converted to double.
inline std::vector<double> vals(const Tensor& t) {
  std::vector<double> out;
  visit_numeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < t.num_elements(); ++i) out.push_back(convert<double>(t.data<T>()[i]));
  });
  return out;
}

inline std::vector<int64_t> ints(const Tensor& t) {
  Tensor c = cast_tensor(t, DType::I64);
  return std::vector<int64_t>(c.data<int64_t>(), c.data<int64_t>() + c.num_elements());
}

/// Element-wise comparison that treats NaN == NaN and tells +0 from -0 only when `signed_zero`.
inline void expect_values(const Tensor& t, const std::vector<double>& want, bool signed_zero = false) {
  std::vector<double> got = vals(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i << ": " << got[i];
    } else {
      EXPECT_EQ(got[i], want[i]) << "at " << i;
      if (signed_zero && want[i] == 0) {
        EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i])) << "sign of zero at " << i;
      }
    }
  }
}

inline Value ints_value(const std::vector<int64_t>& xs) {
  Value v;
  v.kind = Value::List;
  for (int64_t x : xs) v.items.push_back(Value::make_int(x));
  return v;
}

/// Calls a kernel directly on element tensors (lead = 0) or on [rows, ...] tensors (lead = 1).
inline Tensor call(const std::string& op, std::vector<Tensor> in, DType out, Shape out_shape = {},
                   std::map<std::string, Value> attrs = {}, int lead = 0) {
  const OpKind kind = op_from_name(op).value();
  Instr instr{kind, {}, std::move(attrs), Type::tensor(out, std::move(out_shape)), {}};
  const KernelInfo* k = find_kernel(kind);
  EXPECT_NE(k, nullptr) << op;
  int64_t rows = lead && !in.empty() ? in[0].shape()[0] : 1;
  KernelArgs a{instr, std::move(in), lead, rows};
  return k->fn(a);
}

/// Builds ExprFunctions by hand.
struct FnBuilder {
  ExprFunction fn;
  SpecLoc loc{"test.pipe", 1, 1};

  int param(const std::string& field, Type t) {
    return fn.add(Instr{OpKind::Param, {}, {{"field", Value::make_string(field)}}, std::move(t), loc});
  }
  int constant(Value v, Type t) {
    return fn.add(Instr{OpKind::Const, {}, {{"value", std::move(v)}}, std::move(t), loc});
  }
  int op(const std::string& name, std::vector<int> operands, Type t, std::map<std::string, Value> attrs = {}) {
    return fn.add(Instr{op_from_name(name).value(), std::move(operands), std::move(attrs), std::move(t), loc});
  }
  void result(const std::string& name, int id) { fn.results.push_back({name, id}); }
};

inline Column dense(Tensor t) {
  Column c;
  c.dense = std::move(t);
  return c;
}

inline Column ragged(std::vector<Tensor> rows) {
  Column c;
  c.ragged = true;
  c.rows = std::move(rows);
  return c;
}

inline Chunk chunk(int64_t rows, std::vector<Column> cols, int64_t first_index = 0, int64_t epoch = 0) {
  Chunk c;
  c.rows = rows;
  c.columns = std::move(cols);
  c.first_index = first_index;
  c.epoch = epoch;
  return c;
}

/// The message of what `f` throws, or "(no error)".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace pipec::ops_test
