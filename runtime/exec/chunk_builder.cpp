#include "runtime/exec/chunk_builder.h"

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
      b.row_bytes = b.dtype == DType::Bytes ? 0 : static_cast<size_t>(shape_num_elements(b.row_shape)) * dtype_size(b.dtype);
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

void ChunkBuilder::add_rows(const Chunk& src, int64_t begin, int64_t end) {
  int64_t n = end - begin;
  if (n <= 0) return;
  if (rows_ + n > capacity_) throw std::logic_error("ChunkBuilder: capacity exceeded");
  if (src.columns.size() != cols_.size()) throw std::logic_error("ChunkBuilder: column count differs");
  for (size_t i = 0; i < cols_.size(); ++i) {
    ColumnBuilder& b = cols_[i];
    const Column& c = src.columns[i];
    if (b.ragged || c.ragged) {
      if (!c.ragged) throw std::logic_error("ChunkBuilder: ragged/dense column mismatch");
      for (int64_t r = begin; r < end; ++r) b.rows.push_back(c.rows[r]);
    } else if (b.dtype == DType::Bytes) {
      for (int64_t r = begin; r < end; ++r) {
        b.blob += c.dense.str(r);
        b.offsets.push_back(static_cast<int64_t>(b.blob.size()));
      }
    } else {
      std::memcpy(b.data.raw() + rows_ * b.row_bytes, c.dense.raw() + begin * b.row_bytes, n * b.row_bytes);
    }
  }
  rows_ += n;
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
