#include "runtime/exec/chunk_builder.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace pipec {

ChunkBuilder::ChunkBuilder(const Chunk& prototype, int64_t capacity) : capacity_(capacity) {
  for (const Column& c : prototype.columns) {
    ColumnBuilder b;
    b.ragged = c.ragged;
    if (!c.ragged) {
      b.dtype = c.dense.dtype();
      b.row_shape.assign(c.dense.shape().begin() + 1, c.dense.shape().end());
      b.row_bytes =
          b.dtype == DType::Bytes ? 0 : static_cast<size_t>(shape_num_elements(b.row_shape)) * dtype_size(b.dtype);
    } else if (!c.rows.empty()) {
      b.dtype = c.rows[0].dtype();
    }
    cols_.push_back(std::move(b));
  }
  reset();
}

void ChunkBuilder::reset() {
  rows_ = 0;
  for (ColumnBuilder& b : cols_) {
    if (b.demoted) {
      b.ragged = false;
      b.demoted = false;
    }
    b.blob.clear();
    b.offsets.assign(1, 0);
    b.rows.clear();
    if (!b.ragged && b.dtype != DType::Bytes) {
      Shape s = b.row_shape;
      s.insert(s.begin(), capacity_);
      b.data = Tensor::empty(b.dtype, s);
    }
  }
}

void ChunkBuilder::add_row(const Chunk& src, int64_t row) { add_rows(src, row, row + 1); }

bool ChunkBuilder::same_row_shape(const Tensor& t, const Shape& row_shape, bool has_rows_dim) {
  const Shape& s = t.shape();
  size_t skip = has_rows_dim ? 1 : 0;
  return s.size() == row_shape.size() + skip && std::equal(s.begin() + skip, s.end(), row_shape.begin());
}

void ChunkBuilder::demote(ColumnBuilder& b) {
  std::vector<Tensor> rows;
  rows.reserve(static_cast<size_t>(rows_));
  int64_t per_row = shape_num_elements(b.row_shape);
  for (int64_t r = 0; r < rows_; ++r) {
    if (b.dtype == DType::Bytes) {
      std::vector<std::string> strings;
      for (int64_t k = r * per_row; k < (r + 1) * per_row; ++k)
        strings.emplace_back(b.blob.substr(b.offsets[k], b.offsets[k + 1] - b.offsets[k]));
      rows.push_back(Tensor::from_strings(strings, b.row_shape));
    } else {
      Tensor t = Tensor::empty(b.dtype, b.row_shape);
      std::memcpy(t.raw(), b.data.raw() + r * b.row_bytes, b.row_bytes);
      rows.push_back(std::move(t));
    }
  }
  b.rows = std::move(rows);
  b.blob.clear();
  b.offsets.assign(1, 0);
  b.ragged = true;
  b.demoted = true;
}

void ChunkBuilder::add_rows(const Chunk& src, int64_t begin, int64_t end, ThreadPool* pool) {
  int64_t n = end - begin;
  if (n <= 0) return;
  if (rows_ + n > capacity_) throw std::logic_error("ChunkBuilder: capacity exceeded");
  if (src.columns.size() != cols_.size()) throw std::logic_error("ChunkBuilder: column count differs");
  size_t dense_bytes = 0;
  for (size_t i = 0; i < cols_.size(); ++i) {
    ColumnBuilder& b = cols_[i];
    const Column& c = src.columns[i];
    if (!b.ragged) {
      bool fits = c.ragged ? b.dtype == DType::Bytes &&
                                 std::all_of(c.rows.begin() + begin, c.rows.begin() + end,
                                             [&](const Tensor& t) { return same_row_shape(t, b.row_shape, false); })
                           : same_row_shape(c.dense, b.row_shape, true);
      if (!fits) demote(b);
    }
    if (b.ragged) {
      // Dense rows into a ragged column: each becomes a tensor of its own.
      for (int64_t r = begin; r < end; ++r) b.rows.push_back(c.ragged ? c.rows[r] : column_row(c, r));
    } else if (c.ragged) {
      // Byte strings kept one tensor per row (a shuffle buffer) back into one dense column.
      if (b.dtype != DType::Bytes) throw std::logic_error("ChunkBuilder: ragged/dense column mismatch");
      for (int64_t r = begin; r < end; ++r) {
        const Tensor& t = c.rows[r];
        for (int64_t k = 0; k < t.num_elements(); ++k) {
          b.blob += t.str(k);
          b.offsets.push_back(static_cast<int64_t>(b.blob.size()));
        }
      }
    } else if (b.dtype == DType::Bytes) {
      // A row holds as many strings as its shape has elements (a batch of strings holds several).
      const int64_t per_row = shape_num_elements(b.row_shape);
      for (int64_t k = begin * per_row; k < end * per_row; ++k) {
        b.blob += c.dense.str(k);
        b.offsets.push_back(static_cast<int64_t>(b.blob.size()));
      }
    } else {
      dense_bytes += static_cast<size_t>(n) * b.row_bytes;
    }
  }
  // Fixed-size rows: one memcpy per column, or per column and slice of rows when split across threads.
  auto copy = [&](int64_t lo, int64_t hi) {
    for (size_t i = 0; i < cols_.size(); ++i) {
      ColumnBuilder& b = cols_[i];
      if (b.ragged || b.dtype == DType::Bytes) continue;
      std::memcpy(b.data.raw() + (rows_ + lo) * b.row_bytes, src.columns[i].dense.raw() + (begin + lo) * b.row_bytes,
                  static_cast<size_t>(hi - lo) * b.row_bytes);
    }
  };
  if (pool && pool->size() > 1 && dense_bytes >= kParallelCopyBytes && n > 1) {
    int64_t parts = std::min<int64_t>(n, pool->size());
    pool->parallel_for(0, n, (n + parts - 1) / parts, copy);
  } else if (dense_bytes > 0) {
    copy(0, n);
  }
  rows_ += n;
}

bool ChunkBuilder::compatible(const Chunk& c) const {
  if (c.columns.size() != cols_.size()) return false;
  for (size_t i = 0; i < cols_.size(); ++i) {
    const ColumnBuilder& b = cols_[i];
    const Column& col = c.columns[i];
    if (b.ragged != col.ragged) return false;
    if (b.ragged) continue;
    const Shape& s = col.dense.shape();
    if (col.dense.dtype() != b.dtype || s.empty() ||
        !std::equal(s.begin() + 1, s.end(), b.row_shape.begin(), b.row_shape.end()))
      return false;
  }
  return true;
}

bool ChunkBuilder::fixed_rows() const {
  for (const ColumnBuilder& b : cols_)
    if (b.ragged || b.dtype == DType::Bytes) return false;
  return true;
}

Chunk ChunkBuilder::snapshot() const {
  Chunk out;
  out.rows = rows_;
  for (const ColumnBuilder& b : cols_) {
    Column c;
    c.ragged = b.ragged;
    Shape s = b.row_shape;
    s.insert(s.begin(), rows_);
    if (b.ragged) {
      c.rows = b.rows;
    } else if (b.dtype == DType::Bytes) {
      c.dense = Tensor::empty(DType::Bytes, s);
      c.dense.set_strings(b.blob, b.offsets);
    } else {
      c.dense = Tensor::empty(b.dtype, s);
      std::memcpy(c.dense.raw(), b.data.raw(), static_cast<size_t>(rows_) * b.row_bytes);
    }
    out.columns.push_back(std::move(c));
  }
  return out;
}

Chunk ChunkBuilder::finish() {
  Chunk out;
  out.rows = rows_;
  for (ColumnBuilder& b : cols_) {
    Column c;
    c.ragged = b.ragged;
    if (b.ragged) {
      c.rows = std::move(b.rows);
    } else if (b.dtype == DType::Bytes) {
      Shape s = b.row_shape;
      s.insert(s.begin(), rows_);
      c.dense = Tensor::empty(DType::Bytes, s);
      c.dense.set_strings(std::move(b.blob), std::move(b.offsets));
    } else {
      Shape s = b.row_shape;
      s.insert(s.begin(), rows_);
      if (rows_ == capacity_) {
        c.dense = b.data;
      } else {
        c.dense = Tensor::empty(b.dtype, s);
        std::memcpy(c.dense.raw(), b.data.raw(), rows_ * b.row_bytes);
      }
    }
    out.columns.push_back(std::move(c));
  }
  reset();
  return out;
}

}  // namespace pipec
