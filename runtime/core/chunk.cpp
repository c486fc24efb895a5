#include "runtime/core/chunk.h"

#include <cstring>

namespace pipec {

Tensor column_row(const Column& col, int64_t r) {
  if (col.ragged) return col.rows.at(r);
  const Tensor& d = col.dense;
  Shape s(d.shape().begin() + 1, d.shape().end());
  Tensor t = Tensor::empty(d.dtype(), s);
  if (d.dtype() == DType::Bytes) {
    int64_t per = t.num_elements();
    std::string blob;
    std::vector<int64_t> offs{0};
    for (int64_t i = 0; i < per; ++i) {
      blob += d.str(r * per + i);
      offs.push_back(static_cast<int64_t>(blob.size()));
    }
    t.set_strings(std::move(blob), std::move(offs));
  } else {
    std::memcpy(t.raw(), d.raw() + r * t.byte_size(), t.byte_size());
  }
  return t;
}

size_t chunk_bytes(const Chunk& c) {
  size_t n = 0;
  for (const Column& col : c.columns) {
    if (col.ragged) {
      for (const Tensor& t : col.rows) n += t.byte_size();
    } else {
      n += col.dense.byte_size();
    }
  }
  return n;
}

}  // namespace pipec
