// A host tensor: a dtype, a shape and a reference-counted buffer in row-major order.
//
// Byte-string tensors (DType::Bytes) keep all strings in one blob plus num_elements()+1 offsets, so a
// batch of strings is two allocations, not one per string. Ragged fields are Bytes-like: values in one
// flat tensor plus row offsets (see RaggedTensor).
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/dtype.h"

namespace pipec {

using Shape = std::vector<int64_t>;

int64_t shape_num_elements(const Shape& shape);
std::string shape_to_string(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;
  /// A tensor of `shape` with uninitialized (numeric) storage. For Bytes, all strings are empty.
  static Tensor empty(DType dtype, Shape shape);
  /// A zero-filled numeric tensor.
  static Tensor zeros(DType dtype, Shape shape);
  /// A numeric tensor over storage someone else allocated (at least num_elements x dtype size bytes,
  /// suitably aligned), e.g. pinned host memory a GPU copied results into; `data`'s deleter frees it.
  static Tensor adopt(DType dtype, Shape shape, std::shared_ptr<uint8_t[]> data);
  /// A Bytes tensor holding `strings` with the given shape (product must equal strings.size()).
  static Tensor from_strings(const std::vector<std::string>& strings, Shape shape);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t num_elements() const { return shape_num_elements(shape_); }
  bool defined() const { return data_ != nullptr || dtype_ == DType::Bytes; }
  size_t byte_size() const;

  template <class T>
  T* data() {
    return reinterpret_cast<T*>(data_.get());
  }
  template <class T>
  const T* data() const {
    return reinterpret_cast<const T*>(data_.get());
  }
  uint8_t* raw() { return data_.get(); }
  const uint8_t* raw() const { return data_.get(); }

  // Bytes tensors.
  std::string_view str(int64_t i) const;
  const std::vector<int64_t>& offsets() const { return offsets_; }
  const std::string& blob() const { return blob_; }
  /// Replaces the strings of a Bytes tensor (offsets has num_elements()+1 entries).
  void set_strings(std::string blob, std::vector<int64_t> offsets);

  /// Same storage, new shape with the same element count.
  Tensor reshaped(Shape shape) const;
  /// Row `r` of a numeric tensor of rank >= 1 (the first dimension dropped), sharing this tensor's
  /// storage: no copy, and the storage lives while either does. Nothing may write through it (tensors
  /// handed between ops are read-only; a stage that writes in place owns storage it made).
  Tensor row_view(int64_t r) const;
  /// Rows [begin, end) of a numeric tensor of rank >= 1 (the first dimension end - begin), sharing its
  /// storage as row_view does.
  Tensor rows_view(int64_t begin, int64_t end) const;
  /// Element-wise equality of dtype, shape and contents.
  bool equals(const Tensor& other) const;

 private:
  DType dtype_ = DType::F32;
  Shape shape_;
  std::shared_ptr<uint8_t[]> data_;
  std::string blob_;
  std::vector<int64_t> offsets_;
};

}  // namespace pipec
