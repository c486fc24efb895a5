#include "runtime/core/tensor.h"

#include <stdexcept>

#include "runtime/core/buffer_pool.h"

namespace pipec {

int64_t shape_num_elements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Tensor Tensor::empty(DType dtype, Shape shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  int64_t n = t.num_elements();
  if (dtype == DType::Bytes) {
    t.offsets_.assign(static_cast<size_t>(n) + 1, 0);
  } else {
    size_t bytes = static_cast<size_t>(n) * dtype_size(dtype);
    t.data_ = BufferPool::global().allocate(bytes > 0 ? bytes : 1);  // recycled storage
  }
  return t;
}

Tensor Tensor::row_view(int64_t r) const {
  if (dtype_ == DType::Bytes || shape_.empty() || r < 0 || r >= shape_[0])
    throw std::logic_error("Tensor::row_view: not a row of a numeric tensor");
  Tensor t;
  t.dtype_ = dtype_;
  t.shape_.assign(shape_.begin() + 1, shape_.end());
  const size_t row_bytes = static_cast<size_t>(shape_num_elements(t.shape_)) * dtype_size(dtype_);
  // The aliasing constructor: shares the owner (and its deleter), points into the row.
  t.data_ = std::shared_ptr<uint8_t[]>(data_, data_.get() + static_cast<size_t>(r) * row_bytes);
  return t;
}

Tensor Tensor::rows_view(int64_t begin, int64_t end) const {
  if (dtype_ == DType::Bytes || shape_.empty() || begin < 0 || end < begin || end > shape_[0])
    throw std::logic_error("Tensor::rows_view: not rows of a numeric tensor");
  Tensor t;
  t.dtype_ = dtype_;
  t.shape_ = shape_;
  t.shape_[0] = end - begin;
  Shape row(shape_.begin() + 1, shape_.end());
  const size_t row_bytes = static_cast<size_t>(shape_num_elements(row)) * dtype_size(dtype_);
  t.data_ = std::shared_ptr<uint8_t[]>(data_, data_.get() + static_cast<size_t>(begin) * row_bytes);
  return t;
}

Tensor Tensor::adopt(DType dtype, Shape shape, std::shared_ptr<uint8_t[]> data) {
  if (dtype == DType::Bytes) throw std::logic_error("Tensor::adopt: a Bytes tensor has no flat storage");
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.data_ = std::move(data);
  return t;
}

Tensor Tensor::zeros(DType dtype, Shape shape) {
  Tensor t = empty(dtype, std::move(shape));
  if (dtype != DType::Bytes) std::memset(t.data_.get(), 0, t.byte_size());
  return t;
}

Tensor Tensor::from_strings(const std::vector<std::string>& strings, Shape shape) {
  Tensor t = empty(DType::Bytes, std::move(shape));
  if (static_cast<int64_t>(strings.size()) != t.num_elements())
    throw std::invalid_argument("from_strings: shape does not match the number of strings");
  std::string blob;
  std::vector<int64_t> offsets{0};
  for (const auto& s : strings) {
    blob += s;
    offsets.push_back(static_cast<int64_t>(blob.size()));
  }
  t.set_strings(std::move(blob), std::move(offsets));
  return t;
}

size_t Tensor::byte_size() const {
  if (dtype_ == DType::Bytes) return blob_.size();
  return static_cast<size_t>(num_elements()) * dtype_size(dtype_);
}

std::string_view Tensor::str(int64_t i) const {
  return std::string_view(blob_).substr(static_cast<size_t>(offsets_[i]),
                                        static_cast<size_t>(offsets_[i + 1] - offsets_[i]));
}

void Tensor::set_strings(std::string blob, std::vector<int64_t> offsets) {
  blob_ = std::move(blob);
  offsets_ = std::move(offsets);
}

Tensor Tensor::reshaped(Shape shape) const {
  if (shape_num_elements(shape) != num_elements())
    throw std::invalid_argument("reshape from " + shape_to_string(shape_) + " to " + shape_to_string(shape) +
                                " changes the element count");
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

bool Tensor::equals(const Tensor& o) const {
  if (dtype_ != o.dtype_ || shape_ != o.shape_) return false;
  if (dtype_ == DType::Bytes) return blob_ == o.blob_ && offsets_ == o.offsets_;
  return std::memcmp(raw(), o.raw(), byte_size()) == 0;
}

}  // namespace pipec
