#include "compiler/passes/png_one_hot_fusion.h"

#include "compiler/lower/fuse_file_decode.h"

namespace pipec {

namespace {

bool fuse_one(ExprFunction& fn, int hot_id) {
  Instr& hot = fn.body[hot_id];
  if (hot.op != OpKind::OneHotColors || hot.operands.size() != 1 || !hot.attrs.count("colors")) return false;
  const int dec_id = hot.operands[0];
  Instr& dec = fn.body[dec_id];
  // one_hot_colors reads u8 RGB; a decode of other channels or u16 samples keeps the separate op (and
  // its error).
  const bool rgb8 = dec.type.dtype == DType::U8 && !dec.type.shape.empty() && dec.type.shape.back() == 3;
  if (dec.op != OpKind::DecodePng || !rgb8 || dec.attrs.count("one_hot") || count_uses(fn, dec_id) != 1) return false;
  dec.attrs["one_hot"] = hot.attrs.at("colors");
  dec.type = hot.type;
  for (Instr& in : fn.body)
    for (int& o : in.operands)
      if (o == hot_id) o = dec_id;
  for (auto& [name, r] : fn.results)
    if (r == hot_id) r = dec_id;
  erase_instr(fn, hot_id);
  return true;
}

}  // namespace

bool png_one_hot_fusion(Plan& plan) {
  bool changed = false;
  for (Stage& s : plan.stages) {
    if (!s.fn || s.kind != StageKind::Map) continue;
    for (int i = static_cast<int>(s.fn->body.size()) - 1; i >= 0; --i)
      if (i < static_cast<int>(s.fn->body.size()) && fuse_one(*s.fn, i)) changed = true;
  }
  return changed;
}

}  // namespace pipec
