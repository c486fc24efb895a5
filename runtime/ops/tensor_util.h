// Tensor plumbing shared by the interpreter and the kernels: rows in and out of dense tensors,
// broadcasting copies, and byte-string tensors moved through index tensors.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/core/tensor.h"

namespace pipec {

/// Row-major strides in elements.
Shape contiguous_strides(const Shape& shape);
/// Row r of a tensor [rows, ...] as a tensor [...] (a copy).
Tensor row_of(const Tensor& t, int64_t r);
/// Stacks equally shaped tensors into [n, ...]. Empty input gives [0, ...elem] from `elem`/`dtype`.
Tensor stack_rows(const std::vector<Tensor>& rows, DType dtype, const Shape& elem);
/// [rows, ...t.shape] with every row equal to t.
Tensor broadcast_rows(const Tensor& t, int64_t rows);
/// A copy of t broadcast numpy-style to `shape` (numeric only).
Tensor broadcast_to(const Tensor& t, const Shape& shape);
/// An i64 tensor of `shape` holding base, base+1, ... (row-major).
Tensor iota(const Shape& shape, int64_t base = 0);
/// Byte strings picked by an i64 index tensor from the flat strings of `source`: result shape = idx's.
Tensor take_strings(const Tensor& source, const Tensor& idx);
/// The strings of several Bytes tensors, flattened into one [total] tensor (in order).
Tensor concat_strings(const std::vector<Tensor>& parts);

}  // namespace pipec

namespace pipec {

/// dst (contiguous, shape `shape`) [i0, i1, ...] = src[base + sum_d i_d * src_strides[d]], in elements of
/// `esize` bytes. Neighbouring dims that stay contiguous are merged; a unit-stride innermost run is memcpy'd.
void strided_copy(const uint8_t* src, int64_t base, const Shape& shape, const Shape& src_strides, uint8_t* dst,
                  size_t esize);

}  // namespace pipec
