#include "runtime/exec/stages/stack_rows.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "runtime/exec/chunk_builder.h"
#include "runtime/exec/iterator.h"

namespace pipec {

namespace {

std::string differ(const StackNames& names, const std::string& shapes) {
  return fmt::format("the elements of a {} have different shapes{}{}{}", names.noun, shapes,
                     names.fix.empty() ? "" : "; ", names.fix);
}

}  // namespace

Chunk as_single_element(Chunk rows, const StackNames& names) {
  Chunk out;
  out.rows = 1;
  for (Column& c : rows.columns) {
    // Rows of different shapes cannot form one dense tensor.
    if (c.ragged) throw std::runtime_error(differ(names, ""));
    Shape s = c.dense.shape();
    s.insert(s.begin(), 1);
    out.columns.push_back(Column{false, c.dense.reshaped(s), {}});
  }
  return out;
}

Chunk densify(const Chunk& c, const StackNames& names) {
  bool any = false;
  for (const Column& col : c.columns) any = any || col.ragged;
  if (!any) return c;
  Chunk out = c;
  for (Column& col : out.columns) {
    if (!col.ragged) continue;
    const Shape& s0 = col.rows.at(0).shape();
    for (const Tensor& t : col.rows)
      if (t.shape() != s0)
        throw std::runtime_error(
            differ(names, fmt::format(" ({} and {})", shape_to_string(s0), shape_to_string(t.shape()))));
    Shape s = s0;
    s.insert(s.begin(), static_cast<int64_t>(col.rows.size()));
    if (col.rows[0].dtype() == DType::Bytes) {  // strings live in a blob, not in raw()
      std::vector<std::string> strings;
      for (const Tensor& t : col.rows)
        for (int64_t k = 0; k < t.num_elements(); ++k) strings.emplace_back(t.str(k));
      col = Column{false, Tensor::from_strings(strings, s), {}};
      continue;
    }
    Tensor d = Tensor::empty(col.rows[0].dtype(), s);
    size_t row_bytes = col.rows[0].byte_size();
    for (size_t r = 0; r < col.rows.size(); ++r) std::memcpy(d.raw() + r * row_bytes, col.rows[r].raw(), row_bytes);
    col = Column{false, d, {}};
  }
  return out;
}

Chunk stack_rows(const std::vector<Chunk>& pieces, int64_t n, const StackNames& names) {
  // Ragged columns whose rows happen to agree in shape are stacked densely.
  ChunkBuilder b(densify(pieces.at(0), names), n);
  for (const Chunk& c : pieces) {
    Chunk d = densify(c, names);
    if (!b.compatible(d)) throw std::runtime_error(differ(names, ""));
    b.add_rows(d, 0, c.rows);
  }
  return as_single_element(b.finish(), names);
}

Chunk unstack_rows(const Chunk& in) {
  // Elements of one chunk may differ in length only when ragged, so take them one at a time and join them.
  Chunk out;
  for (int64_t r = 0; r < in.rows; ++r) {
    Chunk part;
    for (const Column& c : in.columns) {
      Tensor t = column_row(c, r);
      if (t.rank() == 0) throw std::runtime_error("an element has no leading dimension to unbatch");
      part.rows = t.shape()[0];
      part.columns.push_back(Column{false, t, {}});
    }
    if (r == 0) out = std::move(part);
    else append_rows(out, part, 0, part.rows);
  }
  return out;
}

}  // namespace pipec
