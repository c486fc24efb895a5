#include "compiler/lower/fuse_file_decode.h"

#include <stdexcept>

namespace pipec {

int count_uses(const ExprFunction& fn, int id) {
  int n = 0;
  for (const Instr& in : fn.body)
    for (int o : in.operands) n += o == id;
  for (const auto& [name, r] : fn.results) n += r == id;
  return n;
}

void erase_instr(ExprFunction& fn, int id) {
  if (count_uses(fn, id) != 0) throw std::logic_error("erase_instr: the value is still used");
  fn.body.erase(fn.body.begin() + id);
  auto renumber = [id](int& o) {
    if (o > id) --o;
  };
  for (Instr& in : fn.body)
    for (int& o : in.operands) renumber(o);
  for (auto& [name, r] : fn.results) renumber(r);
}

namespace {

bool fuse(ExprFunction& fn) {
  bool changed = false;
  for (size_t i = 0; i < fn.body.size(); ++i) {
    Instr& d = fn.body[i];
    if (!op_has(d.op, OpFlag::Decoder) || d.operands.size() != 1 || d.attrs.count("path")) continue;
    const int r = d.operands[0];
    if (fn.body[r].op != OpKind::ReadFile || fn.body[r].operands.size() != 1 || count_uses(fn, r) != 1) continue;
    d.operands[0] = fn.body[r].operands[0];
    d.attrs["path"] = Value::make_bool(true);
    erase_instr(fn, r);
    changed = true;
    i = 0;  // indices moved; the function is small
  }
  return changed;
}

}  // namespace

bool fuse_file_decodes(Plan& plan) {
  bool changed = false;
  for (Stage& s : plan.stages)
    if (s.fn) changed = fuse(*s.fn) || changed;
  return changed;
}

}  // namespace pipec
