#include "runtime/core/chunk.h"

namespace pipec {

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
