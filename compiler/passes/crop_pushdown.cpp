#include "compiler/passes/crop_pushdown.h"

#include "compiler/lower/fuse_file_decode.h"

namespace pipec {

namespace {

// One crop into its decode; true when rewritten.
bool push_one(ExprFunction& fn, int crop_id) {
  Instr& crop = fn.body[crop_id];
  const bool random = crop.op == OpKind::RandomCrop;
  if ((!random && crop.op != OpKind::CentralCrop) || crop.operands.size() != 1) return false;
  const int dec_id = crop.operands[0];
  Instr& dec = fn.body[dec_id];
  // PNG has no partial decode; decode_image may turn out to be a PNG.
  if (dec.op != OpKind::DecodeJpeg || dec.attrs.count("crop") || count_uses(fn, dec_id) != 1) return false;
  dec.attrs["crop"] = Value::make_symbol(random ? "random" : "central");
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
