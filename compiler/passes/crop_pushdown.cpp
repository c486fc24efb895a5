#include "compiler/passes/crop_pushdown.h"

#include "compiler/lower/fuse_file_decode.h"

namespace pipec {

namespace {

// One crop into its decode; true when rewritten.
bool push_one(ExprFunction& fn, int crop_id) {
  Instr& crop = fn.body[crop_id];
  const char* kind = crop.op == OpKind::RandomCrop    ? "random"
                     : crop.op == OpKind::CentralCrop ? "central"
                     : crop.op == OpKind::CropOrPad   ? "crop_or_pad"
                                                      : nullptr;
  if (!kind || crop.operands.size() != 1) return false;
  const int dec_id = crop.operands[0];
  Instr& dec = fn.body[dec_id];
  // decode_image may be either format, so it keeps its separate crop. Only the PNG decoder pads
  // (crop_or_pad's zeros around a smaller image).
  const bool png = dec.op == OpKind::DecodePng;
  if ((!png && dec.op != OpKind::DecodeJpeg) || (!png && crop.op == OpKind::CropOrPad)) return false;
  if (dec.attrs.count("crop") || dec.attrs.count("one_hot") || count_uses(fn, dec_id) != 1) return false;
  dec.attrs["crop"] = Value::make_symbol(kind);
  for (const char* a : {"height", "width", "op_id", "seed", "fraction"})
    if (auto it = crop.attrs.find(a); it != crop.attrs.end()) dec.attrs[a] = it->second;
  dec.type = crop.type;
  // Every use of the crop now reads the decode, which comes earlier, so SSA order holds.
  for (Instr& in : fn.body)
    for (int& o : in.operands)
      if (o == crop_id) o = dec_id;
  for (auto& [name, r] : fn.results)
    if (r == crop_id) r = dec_id;
  erase_instr(fn, crop_id);
  return true;
}

}  // namespace

bool crop_pushdown(Plan& plan) {
  bool changed = false;
  for (Stage& s : plan.stages) {
    if (!s.fn || s.kind != StageKind::Map) continue;
    for (int i = static_cast<int>(s.fn->body.size()) - 1; i >= 0; --i)
      if (i < static_cast<int>(s.fn->body.size()) && push_one(*s.fn, i)) changed = true;
  }
  return changed;
}

}  // namespace pipec
