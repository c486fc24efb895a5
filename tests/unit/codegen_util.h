// Helpers for the code generation tests: hand-built expression functions, one-map plans, random inputs
// with edge values, and running a function both on the interpreter and as a JIT kernel.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/codegen/llvm/jit.h"
#include "runtime/exec/stages/native_call.h"
#include "runtime/ops/interpreter.h"
#include "runtime/plan/plan.h"

namespace pipec::testing {

/// Builds an ExprFunction instruction by instruction.
struct FnBuilder {
  ExprFunction fn;
  std::vector<std::pair<std::string, Type>> fields;

  int param(const std::string& field, DType dt, std::vector<int64_t> shape) {
    Instr i;
    i.op = OpKind::Param;
    i.attrs["field"] = Value::make_string(field);
    i.type = Type::tensor(dt, shape);
    fields.emplace_back(field, i.type);
    return fn.add(i);
  }
  int op(const std::string& name, std::vector<int> operands, DType dt, std::vector<int64_t> shape,
         std::map<std::string, Value> attrs = {}) {
    Instr i;
    i.op = op_from_name(name).value();
    i.operands = std::move(operands);
    i.attrs = std::move(attrs);
    i.type = Type::tensor(dt, shape);
    i.loc = SpecLoc{"test.pipe", 1, static_cast<uint32_t>(fn.body.size() + 1)};
    return fn.add(i);
  }
  int constant(Value v, DType dt, std::vector<int64_t> shape) { return op("const", {}, dt, shape, {{"value", v}}); }
  void result(const std::string& name, int id) { fn.results.emplace_back(name, id); }
};

inline Value int_list(const std::vector<int64_t>& v) {
  Value l;
  l.kind = Value::List;
  for (int64_t x : v) l.items.push_back(Value::make_int(x));
  return l;
}

/// A plan `source -> map(fn)` whose source element has the builder's params as fields.
inline Plan one_map_plan(const FnBuilder& b, const std::string& op = "map") {
  Plan p;
  Stage src;
  src.kind = StageKind::Range;
  for (const auto& [name, t] : b.fields) src.element.fields.push_back(Field{name, std::make_shared<Type>(t)});
  p.stages.push_back(src);
  Stage m;
  m.kind = stage_from_name(op).value();
  m.inputs = {0};
  m.fn = std::make_shared<ExprFunction>(b.fn);
  m.fn->name = op + "@1";
  p.stages.push_back(m);
  return p;
}

/// Random values of `dt` mixed with the edge values of its family (0, -0, +-1, min, max, NaN, +-inf...).
inline Tensor random_tensor(DType dt, std::vector<int64_t> shape, std::mt19937_64& rng) {
  Tensor t = Tensor::empty(dt, shape);
  const int64_t n = t.num_elements();
  std::uniform_int_distribution<int> pick(0, 3);
  for (int64_t i = 0; i < n; ++i) {
    const bool edge = pick(rng) == 0;
    uint64_t r = rng();
    switch (dt) {
      case DType::Bool: t.data<uint8_t>()[i] = r & 1; break;
      case DType::F32:
      case DType::F64: {
        static const double edges[] = {0.0,   -0.0,  1.0, -1.0, 0.5,  -0.5,     1.5,       2.5,
                                       -2.5,  3.0,   7.0, -7.0, NAN,  INFINITY, -INFINITY, 1e30,
                                       -1e30, 1e-40, 3e9, -3e9, 1e19, 2e19,     300.0,     -129.0};
        double v = edge ? edges[r % (sizeof(edges) / sizeof(edges[0]))]
                        : std::uniform_real_distribution<double>(-100, 100)(rng);
        if (dt == DType::F32) t.data<float>()[i] = static_cast<float>(v);
        else t.data<double>()[i] = v;
        break;
      }
      default: {
        const size_t size = dtype_size(dt);
        uint64_t v = r;
        if (edge) {
          static const int64_t edges[] = {0, 1, -1, 2, -2, 7, 8, 63, 64};
          const uint64_t top = size == 8 ? ~0ull : (1ull << (8 * size)) - 1;
          const uint64_t special[] = {top, top >> 1, (top >> 1) + 1};  // -1/max, signed max, signed min
          v = (r >> 8) % 2 ? special[r % 3] : static_cast<uint64_t>(edges[r % 9]);
        } else if (r & 0x100) {
          v = r % 19 - 9;  // small values: shift counts, exponents, divisors
        }
        std::memcpy(t.raw() + i * size, &v, size);  // little-endian: the low bytes
      }
    }
  }
  return t;
}

/// Compares two tensors bit for bit (NaNs: any payload, as long as both are NaN).
inline ::testing::AssertionResult same_bits(const Tensor& want, const Tensor& got, const std::string& what) {
  if (want.dtype() != got.dtype() || want.shape() != got.shape())
    return ::testing::AssertionFailure() << what << ": dtype/shape differ";
  const size_t size = dtype_size(want.dtype());
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const uint8_t* a = want.raw() + i * size;
    const uint8_t* b = got.raw() + i * size;
    if (std::memcmp(a, b, size) == 0) continue;
    if (want.dtype() == DType::F32) {
      float x, y;
      std::memcpy(&x, a, 4);
      std::memcpy(&y, b, 4);
      if (std::isnan(x) && std::isnan(y)) continue;
      return ::testing::AssertionFailure() << what << " element " << i << ": interpreter " << x << ", compiled " << y;
    }
    if (want.dtype() == DType::F64) {
      double x, y;
      std::memcpy(&x, a, 8);
      std::memcpy(&y, b, 8);
      if (std::isnan(x) && std::isnan(y)) continue;
      return ::testing::AssertionFailure() << what << " element " << i << ": interpreter " << x << ", compiled " << y;
    }
    uint64_t x = 0, y = 0;
    std::memcpy(&x, a, size);
    std::memcpy(&y, b, size);
    return ::testing::AssertionFailure() << what << " element " << i << ": interpreter " << x << ", compiled " << y;
  }
  return ::testing::AssertionSuccess();
}

/// Compiles `b`'s function (must succeed), runs it on `rows` random rows with the interpreter and the
/// kernel, and expects every result bit-identical.
inline void expect_jit_matches(const FnBuilder& b, int64_t rows = 37, uint64_t seed = 1) {
  Plan plan = one_map_plan(b);
  codegen::JitOptions opts;
  opts.use_cache = false;
  codegen::JitReport rep = codegen::attach_native_kernels(plan, opts);
  ASSERT_EQ(rep.stages.size(), 1u);
  ASSERT_TRUE(rep.stages[0].native) << rep.stages[0].why_not;
  std::mt19937_64 rng(seed);
  Chunk in;
  in.rows = rows;
  in.first_index = 1000;  // random streams are keyed by element index and epoch
  in.epoch = 2;
  std::vector<std::string> names;
  for (const auto& [name, t] : b.fields) {
    std::vector<int64_t> shape{rows};
    shape.insert(shape.end(), t.shape.begin(), t.shape.end());
    Column c;
    c.dense = random_tensor(t.dtype, shape, rng);
    in.columns.push_back(c);
    names.push_back(name);
  }
  EvalContext ec;
  ec.seed = 42;
  std::vector<Column> want = run_function(*plan.stages[1].fn, names, in, ec);
  std::vector<Column> got;
  ASSERT_TRUE(run_native(plan.stages[1], names, in, ec.seed, got));
  ASSERT_EQ(want.size(), got.size());
  for (size_t j = 0; j < want.size(); ++j) EXPECT_TRUE(same_bits(want[j].dense, got[j].dense, b.fn.results[j].first));
}

}  // namespace pipec::testing
