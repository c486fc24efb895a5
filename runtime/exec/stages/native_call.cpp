#include "runtime/exec/stages/native_call.h"

#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace pipec {

namespace {

// The param instruction that reads input field `name` (a single-field element names it by the
// lambda's parameter, as in the interpreter).
const Instr* param_for(const ExprFunction& fn, const std::string& name, bool single) {
  const Instr* only = nullptr;
  for (const Instr& in : fn.body) {
    if (in.op != OpKind::Param) continue;
    auto it = in.attrs.find("field");
    if (it != in.attrs.end() && it->second.s == name) return &in;
    only = &in;
  }
  return single ? only : nullptr;
}

// A `bytes` column of fixed-length strings as dense u8 [rows, n]; false when a length differs.
bool bytes_to_u8(const Tensor& col, int64_t rows, int64_t n, Tensor& out) {
  out = Tensor::empty(DType::U8, {rows, n});
  uint8_t* o = out.data<uint8_t>();
  for (int64_t r = 0; r < rows; ++r) {
    std::string_view s = col.str(r);
    if (static_cast<int64_t>(s.size()) != n) return false;
    if (n) std::memcpy(o + r * n, s.data(), static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

bool run_native(const Stage& stage, const std::vector<std::string>& in_fields, const Chunk& in, uint64_t seed,
                std::vector<Column>& out) {
  const NativeKernel& k = *stage.native;
  const ExprFunction& fn = *stage.fn;
  if (!k.fn || in.rows <= 0) return false;
  std::vector<Tensor> keep;  // converted inputs live until the call returns
  std::vector<const void*> inputs;
  for (int fi : k.input_fields) {
    if (fi < 0 || static_cast<size_t>(fi) >= in.columns.size() || static_cast<size_t>(fi) >= in_fields.size())
      return false;
    const Column& col = in.columns[fi];
    const Instr* p = param_for(fn, in_fields[fi], in_fields.size() == 1);
    if (col.ragged || !p || !p->type.fully_known()) return false;
    const int64_t elems = p->type.num_elements();
    const Tensor& t = col.dense;
    if (t.rank() < 1 || t.shape()[0] != in.rows) return false;
    if (t.dtype() == DType::Bytes && p->type.dtype == DType::U8 && t.rank() == 1 && p->type.rank() == 1) {
      Tensor u8;
      if (!bytes_to_u8(t, in.rows, elems, u8)) return false;
      inputs.push_back(u8.raw());
      keep.push_back(std::move(u8));
      continue;
    }
    if (t.dtype() != p->type.dtype || t.num_elements() != in.rows * elems) return false;
    inputs.push_back(t.raw());
  }
  std::vector<Column> cols;
  std::vector<void*> outputs;
  for (const auto& [name, id] : fn.results) {
    const Type& rt = fn.body.at(static_cast<size_t>(id)).type;
    Shape shape{in.rows};
    shape.insert(shape.end(), rt.shape.begin(), rt.shape.end());
    Column c;
    c.dense = Tensor::empty(rt.dtype, shape);
    outputs.push_back(c.dense.raw());
    cols.push_back(std::move(c));
  }
  PipecKernelArgs args{inputs.data(), outputs.data(), in.rows, in.first_index, in.epoch, seed};
  if (k.fn(&args) != 0) return false;
  out = std::move(cols);
  return true;
}

}  // namespace pipec
