#include "runtime/ops/tensor_util.h"

#include <cstring>

#include "runtime/core/dtype_dispatch.h"
#include "runtime/ops/broadcast.h"
#include "runtime/ops/kernel_error.h"

namespace pipec {

Shape contiguous_strides(const Shape& shape) {
  Shape s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

static Shape drop_first(const Shape& s) { return Shape(s.begin() + 1, s.end()); }

Tensor row_of(const Tensor& t, int64_t r) {
  Shape elem = drop_first(t.shape());
  int64_t n = shape_num_elements(elem);
  if (t.dtype() == DType::Bytes) {
    const auto& off = t.offsets();
    int64_t b = off[r * n], e = off[(r + 1) * n];
    std::vector<int64_t> o(static_cast<size_t>(n) + 1);
    for (int64_t k = 0; k <= n; ++k) o[k] = off[r * n + k] - b;
    Tensor out = Tensor::empty(DType::Bytes, elem);
    out.set_strings(t.blob().substr(static_cast<size_t>(b), static_cast<size_t>(e - b)), std::move(o));
    return out;
  }
  Tensor out = Tensor::empty(t.dtype(), elem);
  size_t bytes = static_cast<size_t>(n) * dtype_size(t.dtype());
  if (bytes) std::memcpy(out.raw(), t.raw() + bytes * r, bytes);
  return out;
}

Tensor stack_rows(const std::vector<Tensor>& rows, DType dtype, const Shape& elem) {
  Shape e = rows.empty() ? elem : rows[0].shape();
  Shape shape{static_cast<int64_t>(rows.size())};
  shape.insert(shape.end(), e.begin(), e.end());
  for (const Tensor& r : rows)
    if (r.shape() != e)
      throw OpError("rows of different shapes cannot be stacked: " + shape_to_string(e) + " and " +
                    shape_to_string(r.shape()));
  if (dtype == DType::Bytes) {
    Tensor out = Tensor::empty(DType::Bytes, shape);
    std::string blob;
    std::vector<int64_t> off{0};
    for (const Tensor& r : rows) {
      for (int64_t k = 0; k < r.num_elements(); ++k) {
        blob += r.str(k);
        off.push_back(static_cast<int64_t>(blob.size()));
      }
    }
    out.set_strings(std::move(blob), std::move(off));
    return out;
  }
  Tensor out = Tensor::empty(dtype, shape);
  size_t bytes = static_cast<size_t>(shape_num_elements(e)) * dtype_size(dtype);
  for (size_t r = 0; r < rows.size(); ++r)
    if (bytes) std::memcpy(out.raw() + bytes * r, rows[r].raw(), bytes);
  return out;
}

Tensor broadcast_rows(const Tensor& t, int64_t rows) {
  Shape shape{rows};
  shape.insert(shape.end(), t.shape().begin(), t.shape().end());
  if (t.dtype() == DType::Bytes) {
    Tensor idx = Tensor::empty(DType::I64, shape);
    int64_t n = t.num_elements();
    int64_t* p = idx.data<int64_t>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < n; ++k) p[r * n + k] = k;
    return take_strings(t, idx);
  }
  Tensor out = Tensor::empty(t.dtype(), shape);
  size_t bytes = t.byte_size();
  if (bytes == 0) return out;
  for (int64_t r = 0; r < rows; ++r) std::memcpy(out.raw() + bytes * r, t.raw(), bytes);
  return out;
}

Tensor broadcast_to(const Tensor& t, const Shape& shape) {
  if (t.shape() == shape) return t;
  Tensor out = Tensor::empty(t.dtype(), shape);
  BroadcastPlan plan = plan_broadcast(shape, {&t.shape()});
  visit_by_size(dtype_size(t.dtype()), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = t.data<T>();
    T* dst = out.data<T>();
    plan.for_each([&](const BroadcastPlan::Offsets& off, int64_t n) {
      T* o = dst + off[0];
      const T* s = src + off[1];
      if (plan.inner_stride[1]) {
        for (int64_t i = 0; i < n; ++i) o[i] = s[i];
      } else {
        T v = s[0];
        for (int64_t i = 0; i < n; ++i) o[i] = v;
      }
    });
  });
  return out;
}

Tensor iota(const Shape& shape, int64_t base) {
  Tensor t = Tensor::empty(DType::I64, shape);
  int64_t* p = t.data<int64_t>();
  for (int64_t i = 0, n = t.num_elements(); i < n; ++i) p[i] = base + i;
  return t;
}

Tensor take_strings(const Tensor& source, const Tensor& idx) {
  Tensor out = Tensor::empty(DType::Bytes, idx.shape());
  const int64_t* p = idx.data<int64_t>();
  int64_t n = idx.num_elements();
  size_t total = 0;
  for (int64_t i = 0; i < n; ++i) total += source.str(p[i]).size();
  std::string blob;
  blob.reserve(total);
  std::vector<int64_t> off;
  off.reserve(static_cast<size_t>(n) + 1);
  off.push_back(0);
  for (int64_t i = 0; i < n; ++i) {
    blob += source.str(p[i]);
    off.push_back(static_cast<int64_t>(blob.size()));
  }
  out.set_strings(std::move(blob), std::move(off));
  return out;
}

Tensor concat_strings(const std::vector<Tensor>& parts) {
  int64_t n = 0;
  for (const Tensor& t : parts) n += t.num_elements();
  Tensor out = Tensor::empty(DType::Bytes, {n});
  std::string blob;
  std::vector<int64_t> off{0};
  for (const Tensor& t : parts) {
    for (int64_t k = 0; k < t.num_elements(); ++k) {
      blob += t.str(k);
      off.push_back(static_cast<int64_t>(blob.size()));
    }
  }
  out.set_strings(std::move(blob), std::move(off));
  return out;
}

}  // namespace pipec

namespace pipec {

void strided_copy(const uint8_t* src, int64_t base, const Shape& shape, const Shape& src_strides, uint8_t* dst,
                  size_t esize) {
  if (shape_num_elements(shape) == 0) return;
  // Coalesce: drop unit dims, merge d into d-1 when src_strides[d-1] == src_strides[d] * shape[d].
  std::vector<int64_t> dims, strides;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!dims.empty() && strides.back() == src_strides[d] * shape[d]) {
      dims.back() *= shape[d];
      strides.back() = src_strides[d];
      continue;
    }
    dims.push_back(shape[d]);
    strides.push_back(src_strides[d]);
  }
  if (dims.empty()) {
    std::memcpy(dst, src + base * esize, esize);
    return;
  }
  const int64_t inner = dims.back(), inner_stride = strides.back();
  dims.pop_back();
  strides.pop_back();
  int64_t runs = 1;
  for (int64_t d : dims) runs *= d;
  std::vector<int64_t> ctr(dims.size(), 0);
  int64_t off = base;
  visit_by_size(esize, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* s = reinterpret_cast<const T*>(src);
    T* o = reinterpret_cast<T*>(dst);
    for (int64_t r = 0; r < runs; ++r, o += inner) {
      if (inner_stride == 1) {
        std::memcpy(o, s + off, static_cast<size_t>(inner) * sizeof(T));
      } else {
        const T* p = s + off;
        for (int64_t i = 0; i < inner; ++i) o[i] = p[i * inner_stride];
      }
      for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
        off += strides[d];
        if (++ctr[d] < dims[d]) break;
        off -= strides[d] * dims[d];
        ctr[d] = 0;
      }
    }
  });
}

}  // namespace pipec
