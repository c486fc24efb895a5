#include "compiler/passes/convert_normalize_fusion.h"

#include "compiler/lower/fuse_file_decode.h"

namespace pipec {

namespace {

bool is_flip(OpKind k) {
  return k == OpKind::FlipLeftRight || k == OpKind::FlipUpDown || k == OpKind::RandomFlipLeftRight ||
         k == OpKind::RandomFlipUpDown;
}

bool u8_image(const Type& t) { return t.dtype == DType::U8 && (t.rank() == 3 || t.rank() == 4); }

// A convert_image_dtype of u8 pixels to f32: the only convert the fused op does.
bool u8_to_f32(const ExprFunction& fn, const Instr& in) {
  return in.op == OpKind::ConvertImageDtype && in.operands.size() == 1 && in.type.dtype == DType::F32 &&
         u8_image(fn.body[in.operands[0]].type);
}

// Whether the loop nests would refuse the function whatever this pass does (an op they do not lower, a
// byte string, a shape known only at run time, a half float), so it runs in the interpreter anyway.
// Coarser than the code generator's own check (a dead instruction counts too): it may leave a chain
// unfused, never make a compiled map interpreted.
bool interpreted_anyway(const ExprFunction& fn) {
  for (const Instr& in : fn.body) {
    const DType t = in.type.dtype;
    if (!op_info(in.op).compiled_by(OpBackend::Llvm) || !in.type.is_tensor() || !in.type.fully_known() ||
        t == DType::Bytes || t == DType::F16 || t == DType::BF16)
      return true;
  }
  return false;
}

// Turns `at` (a normalize of a convert, or a lone convert) into the fused op reading `x`, with the
// flip `flip` (-1: none) folded in; `dead` (the convert, or -1) and the flip are erased.
void rewrite(ExprFunction& fn, int at, int x, int flip, int dead) {
  Instr& out = fn.body[at];
  std::vector<int> operands{x};
  if (out.op == OpKind::Normalize) operands.insert(operands.end(), out.operands.begin() + 1, out.operands.end());
  out.operands = operands;
  out.attrs.clear();
  out.op = OpKind::ConvertNormalize;
  if (flip >= 0) {
    const Instr& f = fn.body[flip];
    const bool lr = f.op == OpKind::FlipLeftRight || f.op == OpKind::RandomFlipLeftRight;
    out.attrs["flip"] = Value::make_symbol(lr ? "left_right" : "up_down");
    if (op_has(f.op, OpFlag::Random)) {
      out.op = OpKind::RandomFlipConvertNormalize;
      for (const char* a : {"op_id", "seed"})
        if (auto it = f.attrs.find(a); it != f.attrs.end()) out.attrs[a] = it->second;
    }
  }
  // The convert comes after the flip it reads, so erasing it first keeps the flip's id.
  if (dead >= 0) erase_instr(fn, dead);
  if (flip >= 0) erase_instr(fn, flip);
}

// Fuses the chain ending at instruction `id`; true when rewritten.
bool fuse_one(ExprFunction& fn, int id) {
  const Instr& in = fn.body[id];
  int convert = -1;
  if (in.op == OpKind::Normalize && in.operands.size() == 3 && in.type.dtype == DType::F32) {
    const int c = in.operands[0];
    if (!u8_to_f32(fn, fn.body[c]) || count_uses(fn, c) != 1) return false;
    convert = c;
  } else if (!u8_to_f32(fn, in)) {
    return false;
  }
  const int src = fn.body[convert >= 0 ? convert : id].operands[0];
  const Instr& s = fn.body[src];
  const bool flip = is_flip(s.op) && s.operands.size() == 1 && count_uses(fn, src) == 1 && u8_image(s.type) &&
                    u8_image(fn.body[s.operands[0]].type);
  rewrite(fn, id, flip ? s.operands[0] : src, flip ? src : -1, convert);
  return true;
}

bool fuse_all(ExprFunction& fn) {
  for (int i = static_cast<int>(fn.body.size()) - 1; i >= 0; --i)
    if (fuse_one(fn, i)) return true;
  return false;
}

}  // namespace

bool convert_normalize_fusion(Plan& plan) {
  bool changed = false;
  for (Stage& s : plan.stages) {
    if (!s.fn || s.kind != StageKind::Map || !interpreted_anyway(*s.fn)) continue;
    // Each rewrite renumbers the body; the next search starts over (functions are small).
    while (fuse_all(*s.fn)) changed = true;
  }
  return changed;
}

}  // namespace pipec
