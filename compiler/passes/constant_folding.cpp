#include "compiler/passes/constant_folding.h"

#include <bit>
#include <type_traits>

#include "compiler/passes/plan_edit.h"
#include "runtime/core/dtype_dispatch.h"
#include "runtime/ops/kernel.h"

namespace pipec {

namespace {

// Larger constants would make the plan (and every chunk's broadcast) bigger than the work they save.
constexpr int64_t kMaxFoldedValues = 65536;

// Element k of a numeric tensor as a constant value of the tensor's dtype. The const kernel turns it
// back into exactly these bits (integers as integers, floats through double, which holds every
// f16/bf16/f32 value exactly).
Value element_value(const Tensor& t, int64_t k) {
  DType dt = t.dtype();
  return visit_numeric(dt, [&](auto tag) -> Value {
    using T = typename decltype(tag)::type;
    T x = t.data<T>()[k];
    if constexpr (std::is_same_v<T, bool>) return Value::make_bool(x);
    else if constexpr (std::is_same_v<T, uint64_t>) return Value::make_int(std::bit_cast<int64_t>(x), dt);
    else if constexpr (std::is_integral_v<T>) return Value::make_int(static_cast<int64_t>(x), dt);
    else if constexpr (std::is_same_v<T, double>) return Value::make_float(x, dt);
    else return Value::make_float(convert<double>(x), dt);
  });
}

Value tensor_value(const Tensor& t) {
  if (t.rank() == 0) return element_value(t, 0);
  Value list;
  list.kind = Value::List;
  list.dtype = t.dtype();
  for (int64_t k = 0; k < t.num_elements(); ++k) list.items.push_back(element_value(t, k));
  return list;
}

bool foldable(const ExprFunction& fn, const Instr& in) {
  if (in.op == OpKind::Param || in.op == OpKind::Const || op_has(in.op, OpFlag::Random) || in.operands.empty())
    return false;
  if (in.type.dtype == DType::Bytes || !in.type.fully_known() || in.type.num_elements() > kMaxFoldedValues)
    return false;
  for (int o : in.operands) {
    const Instr& x = fn.body[static_cast<size_t>(o)];
    if (x.op != OpKind::Const || x.type.dtype == DType::Bytes || !x.type.fully_known()) return false;
  }
  return find_kernel(in.op) != nullptr;
}

bool fold_function(ExprFunction& fn) {
  bool changed = false;
  for (Instr& in : fn.body) {
    if (!foldable(fn, in)) continue;
    // The interpreter computes row-invariant values exactly like this: one kernel call with lead = 0
    // on the element tensors, then a cast to the static dtype.
    KernelArgs args{in, {}, 0, 1, 0, 0, 0};
    try {
      for (int o : in.operands) {
        const Instr& x = fn.body[static_cast<size_t>(o)];
        args.in.push_back(tensor_from_value(x.attrs.at("value"), x.type.dtype, x.type.shape));
      }
      Tensor out = find_kernel(in.op)->fn(args);
      if (out.dtype() != in.type.dtype) out = cast_tensor(out, in.type.dtype);
      if (out.shape() != in.type.shape) continue;
      in.attrs = {{"value", tensor_value(out)}};
    } catch (const std::exception&) {
      continue;  // e.g. an index out of range: the run reports it where it happens
    }
    in.op = OpKind::Const;
    in.operands.clear();
    changed = true;
  }
  return changed;
}

}  // namespace

bool constant_folding(Plan& plan) { return rewrite_functions(plan, fold_function); }

}  // namespace pipec
