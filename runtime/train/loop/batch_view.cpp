#include "runtime/train/loop/batch_view.h"

#include <stdexcept>

namespace pipec {

size_t field_index(const ElementInfo& e, const std::string& name) {
  for (size_t i = 0; i < e.fields.size(); ++i)
    if (e.fields[i].name == name) return i;
  throw std::logic_error("training: the data has no field " + name);
}

Tensor batch_of(const Column& col, int64_t rows, int64_t r) {
  if (col.ragged) return col.rows.at(r);
  if (rows == 1) {
    Shape s(col.dense.shape().begin() + 1, col.dense.shape().end());
    return col.dense.reshaped(s);
  }
  return column_row(col, r);
}

}  // namespace pipec
