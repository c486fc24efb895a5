// ChunkBuilder: collects rows copied out of other chunks into a new chunk (batch, shuffle, filter,
// take). Dense columns are filled in one preallocated buffer, byte strings in one blob, so copying a
// row costs a memcpy, not an allocation. A builder is meant to be kept and reused: finish() hands its
// full buffers out and takes fresh ones from the tensor buffer pool, so a stage that builds the same
// chunks over and over allocates nothing in steady state.
#pragma once

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/core/chunk.h"
#include "runtime/threads/thread_pool.h"

namespace pipec {

class ChunkBuilder {
 public:
  /// Columns laid out like `prototype`'s (same dtypes and per-row shapes), room for `capacity` rows.
  ChunkBuilder(const Chunk& prototype, int64_t capacity);

  /// Copies row `row` of `src` (same layout as the prototype) to the end.
  void add_row(const Chunk& src, int64_t row);
  /// Copies rows [begin, end). With a pool, a copy of many bytes is split across its threads.
  void add_rows(const Chunk& src, int64_t begin, int64_t end, ThreadPool* pool = nullptr);
  /// Whether rows of `c` can be added: same columns, dense/ragged kinds, dtypes and row shapes.
  bool compatible(const Chunk& c) const;
  /// Whether every column holds numeric rows of one fixed size (no byte strings, nothing ragged), so
  /// that rows can be added by add_fixed_row().
  bool fixed_rows() const;
  /// Bytes of one row of column `i` (a fixed_rows() builder).
  size_t row_bytes(size_t i) const { return cols_[i].row_bytes; }
  /// Appends one row given as a pointer to its bytes in each column (row_bytes(i) bytes from
  /// `column_rows[i]`): add_row() without its per-call checks of the source's layout, for a stage
  /// that moves many single rows between chunks it has checked are compatible(). Only on a
  /// fixed_rows() builder.
  void add_fixed_row(const uint8_t* const* column_rows) {
    if (rows_ >= capacity_) throw std::logic_error("ChunkBuilder: capacity exceeded");
    for (size_t i = 0; i < cols_.size(); ++i) {
      ColumnBuilder& b = cols_[i];
      if (b.row_bytes > 0)
        std::memcpy(b.data.raw() + static_cast<size_t>(rows_) * b.row_bytes, column_rows[i], b.row_bytes);
    }
    ++rows_;
  }
  /// A copy of the rows added so far (for checkpoints); the builder is unchanged.
  Chunk snapshot() const;
  int64_t rows() const { return rows_; }
  int64_t capacity() const { return capacity_; }
  bool full() const { return rows_ >= capacity_; }

  /// The chunk built so far (dense tensors trimmed to rows()); the builder is empty afterwards.
  Chunk finish();
  /// Copies of at least this many bytes are split across the pool's threads.
  static constexpr size_t kParallelCopyBytes = size_t(1) << 20;

 private:
  struct ColumnBuilder {
    bool ragged = false;
    DType dtype = DType::F32;
    Shape row_shape;       // dense: shape of one row
    size_t row_bytes = 0;  // dense numeric
    Tensor data;           // dense numeric: [capacity, row_shape...]
    std::string blob;      // dense bytes
    std::vector<int64_t> offsets{0};
    std::vector<Tensor> rows;  // ragged
    bool demoted = false;      // dense in the prototype, ragged in the chunk being built (see demote)
  };
  void reset();
  /// Turns a dense column into one tensor per row, for the rest of the chunk being built: a field whose
  /// type has an unknown dimension can hold rows of different shapes (the final partial batch among
  /// full ones), which one [rows, ...] buffer cannot.
  void demote(ColumnBuilder& b);
  static bool same_row_shape(const Tensor& row_or_column, const Shape& row_shape, bool has_rows_dim);

  std::vector<ColumnBuilder> cols_;
  int64_t capacity_;
  int64_t rows_ = 0;
};

}  // namespace pipec
