#include <stdexcept>

#include <fmt/format.h>

#include "runtime/ops/kernel.h"

namespace pipec {

namespace {

std::array<KernelInfo, kNumOpKinds> build_table() {
  KernelTable t;
  register_elementwise_binary(t);
  register_elementwise_unary(t);
  register_select(t);
  register_cast(t);
  register_constant(t);
  register_shape_ops(t);
  register_dynamic_slicing(t);
  register_join_ops(t);
  register_bits(t);
  register_reductions(t);
  register_random(t);
  register_image_ops(t);
  register_string_ops(t);
  std::array<KernelInfo, kNumOpKinds> out{};
  for (OpKind k : all_op_kinds) out[static_cast<size_t>(k)] = KernelInfo{t.get(k), kernel_kind(k), false};
  // The PNG decoder writes its rows where it is told (runtime/image/png_window_decode.h).
  out[static_cast<size_t>(OpKind::DecodePng)].fills_rows = true;
  // So does the fused flip, convert and normalize (runtime/image/convert_normalize.h).
  out[static_cast<size_t>(OpKind::ConvertNormalize)].fills_rows = true;
  out[static_cast<size_t>(OpKind::RandomFlipConvertNormalize)].fills_rows = true;
  return out;
}

}  // namespace

KernelKind kernel_kind(OpKind op) {
  const OpInfo& info = op_info(op);
  if (info.has(OpFlag::PerRow)) return KernelKind::PerRow;
  if (info.has(OpFlag::Random)) return KernelKind::Random;
  if (info.has(OpFlag::Elementwise)) return KernelKind::Elementwise;
  return KernelKind::Structural;
}

void KernelTable::set(OpKind op, KernelFn fn) {
  KernelFn& slot = fns_[static_cast<size_t>(op)];
  if (slot) throw std::logic_error(fmt::format("two kernels for op `{}`", op_name(op)));
  slot = fn;
}

const KernelInfo* find_kernel(OpKind op) {
  static const std::array<KernelInfo, kNumOpKinds> table = build_table();
  const KernelInfo& k = table[static_cast<size_t>(op)];
  return k.fn ? &k : nullptr;
}

const Value* find_attr(const Instr& in, const std::string& name) {
  auto it = in.attrs.find(name);
  return it == in.attrs.end() ? nullptr : &it->second;
}

int64_t attr_int(const Instr& in, const std::string& name, int64_t fallback) {
  const Value* v = find_attr(in, name);
  if (!v) return fallback;
  if (v->kind == Value::Int) return v->i;
  if (v->kind == Value::Bool) return v->b ? 1 : 0;
  if (v->kind == Value::List && v->items.size() == 1 && v->items[0].kind == Value::Int) return v->items[0].i;
  throw OpError(fmt::format("attribute `{}` must be an integer, not {}", name, v->to_string()));
}

std::vector<int64_t> attr_ints(const Instr& in, const std::string& name) {
  const Value* v = find_attr(in, name);
  if (!v) throw OpError(fmt::format("missing attribute `{}`", name));
  if (v->kind == Value::Int) return {v->i};
  std::vector<int64_t> out;
  if (v->kind == Value::List) {
    for (const Value& x : v->items) {
      if (x.kind != Value::Int) throw OpError(fmt::format("attribute `{}` must be a list of integers", name));
      out.push_back(x.i);
    }
    return out;
  }
  throw OpError(fmt::format("attribute `{}` must be a list of integers, not {}", name, v->to_string()));
}

int64_t normalize_axis(int64_t axis, int64_t rank, bool allow_end) {
  int64_t limit = allow_end ? rank + 1 : rank;
  int64_t a = axis < 0 ? axis + limit : axis;
  if (a < 0 || a >= limit) throw OpError(fmt::format("axis {} is out of range for rank {}", axis, rank));
  return a;
}

}  // namespace pipec
