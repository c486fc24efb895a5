#include "runtime/exec/stages/pad_rows.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace pipec {

namespace {

// Byte strings pad with empty strings, as tf.data's padded_batch does (the padding value is a number,
// for the numeric fields).
Tensor pad_strings(const std::vector<Tensor>& items, const Shape& maxs, const Shape& batch_shape) {
  const int64_t slot = shape_num_elements(maxs);
  std::vector<std::string> strings(static_cast<size_t>(slot) * items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const Tensor& t = items[i];
    const Shape& ss = t.shape();
    std::vector<int64_t> idx(ss.size(), 0);
    for (int64_t e = 0; e < t.num_elements(); ++e) {
      int64_t at = 0;  // the element's offset in the padded [maxs] block
      for (size_t d = 0; d < ss.size(); ++d) at = at * maxs[d] + idx[d];
      strings[i * static_cast<size_t>(slot) + static_cast<size_t>(at)] = std::string(t.str(e));
      for (int64_t d = static_cast<int64_t>(ss.size()) - 1; d >= 0; --d) {
        if (++idx[d] < ss[d]) break;
        idx[d] = 0;
      }
    }
  }
  return Tensor::from_strings(strings, batch_shape);
}

void fill(Tensor& t, double v) {
  int64_t n = t.num_elements();
  switch (t.dtype()) {
#define FILL(D, T)                                                      \
  case DType::D:                                                        \
    for (int64_t i = 0; i < n; ++i) t.data<T>()[i] = static_cast<T>(v); \
    break;
    // One macro use per line: clang-format cannot see that FILL expands to case labels.
    // clang-format off
    FILL(Bool, uint8_t)
    FILL(U8, uint8_t)
    FILL(I8, int8_t)
    FILL(U16, uint16_t)
    FILL(I16, int16_t)
    FILL(U32, uint32_t)
    FILL(I32, int32_t)
    FILL(U64, uint64_t)
    FILL(I64, int64_t)
    FILL(F32, float)
    FILL(F64, double)
    // clang-format on
#undef FILL
    default: std::memset(t.raw(), 0, t.byte_size());
  }
}

// Copies `src` into the top-left corner of a row-major block of shape `dst_shape`.
void copy_padded(const Tensor& src, const Shape& dst_shape, uint8_t* dst) {
  size_t w = dtype_size(src.dtype());
  const Shape& ss = src.shape();
  if (ss.empty()) {
    std::memcpy(dst, src.raw(), w);
    return;
  }
  int64_t rows = shape_num_elements(ss) / std::max<int64_t>(1, ss.back());
  std::vector<int64_t> idx(ss.size() - 1, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t so = 0, dof = 0, sm = 1, dm = 1;
    for (int64_t d = static_cast<int64_t>(ss.size()) - 2; d >= 0; --d) {
      sm *= ss[d + 1];
      dm *= dst_shape[d + 1];
      so += idx[d] * sm;
      dof += idx[d] * dm;
    }
    std::memcpy(dst + dof * w, src.raw() + so * w, ss.back() * w);
    for (int64_t d = static_cast<int64_t>(idx.size()) - 1; d >= 0; --d) {
      if (++idx[d] < ss[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace

Chunk pad_rows(const std::vector<Chunk>& pieces, int64_t n, double padding, const std::vector<Shape>& fixed) {
  Chunk out;
  out.rows = 1;
  size_t ncols = pieces.at(0).columns.size();
  for (size_t k = 0; k < ncols; ++k) {
    std::vector<Tensor> items;
    for (const Chunk& c : pieces) {
      const Column& col = c.columns[k];
      for (int64_t r = 0; r < c.rows; ++r) items.push_back(column_row(col, r));
    }
    Shape maxs = items[0].shape();
    for (const Tensor& t : items) {
      if (t.rank() != static_cast<int64_t>(maxs.size()))
        throw std::runtime_error("padded_batch: elements differ in rank");
      for (size_t d = 0; d < maxs.size(); ++d) maxs[d] = std::max(maxs[d], t.shape()[d]);
    }
    if (k < fixed.size() && fixed[k].size() == maxs.size())
      for (size_t d = 0; d < maxs.size(); ++d) {
        if (fixed[k][d] < 0) continue;
        if (maxs[d] > fixed[k][d])
          throw std::runtime_error(fmt::format("an element's dimension {} is {}, longer than the {} it is padded to", d,
                                               maxs[d], fixed[k][d]));
        maxs[d] = fixed[k][d];
      }
    DType dt = items[0].dtype();
    Shape s = maxs;
    s.insert(s.begin(), n);
    s.insert(s.begin(), 1);
    if (dt == DType::Bytes) {
      out.columns.push_back(Column{false, pad_strings(items, maxs, s), {}});
      continue;
    }
    Tensor t = Tensor::empty(dt, s);
    fill(t, padding);
    int64_t slot = shape_num_elements(maxs) * static_cast<int64_t>(dtype_size(dt));
    for (int64_t i = 0; i < n; ++i) copy_padded(items[i], maxs, t.raw() + i * slot);
    out.columns.push_back(Column{false, t, {}});
  }
  return out;
}

}  // namespace pipec
