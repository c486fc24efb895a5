#include "runtime/capi/dlpack_export.h"

#include <atomic>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

namespace pipec {

namespace {

std::atomic<int64_t> g_live{0};

// What a DLManagedTensor owns: a Tensor sharing the runtime's buffer, and the shape it points at.
struct ExportedTensor {
  DLManagedTensor managed{};
  Tensor keep;  // a reference to the runtime's buffer, not a copy of the data
  std::vector<int64_t> shape;
};

void delete_exported(DLManagedTensor* self) {
  if (!self) return;
  delete static_cast<ExportedTensor*>(self->manager_ctx);
  g_live.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace

std::optional<DLDataType> dlpack_dtype(DType t) {
  auto make = [](DLDataTypeCode code, size_t bytes) {
    return DLDataType{static_cast<uint8_t>(code), static_cast<uint8_t>(bytes * 8), 1};
  };
  switch (t) {
    case DType::Bool: return make(kDLBool, 1);
    case DType::U8:
    case DType::U16:
    case DType::U32:
    case DType::U64: return make(kDLUInt, dtype_size(t));
    case DType::I8:
    case DType::I16:
    case DType::I32:
    case DType::I64: return make(kDLInt, dtype_size(t));
    case DType::F16:
    case DType::F32:
    case DType::F64: return make(kDLFloat, dtype_size(t));
    case DType::BF16: return make(kDLBfloat, 2);
    case DType::Bytes: return std::nullopt;
  }
  return std::nullopt;
}

DLManagedTensor* export_row(const Column& col, int64_t r) {
  const Tensor& src = col.ragged ? col.rows.at(static_cast<size_t>(r)) : col.dense;
  auto dt = dlpack_dtype(src.dtype());
  if (!dt) throw std::runtime_error("a byte-string field cannot be handed out as a DLPack tensor");
  auto* e = new ExportedTensor;
  e->keep = src;
  const uint8_t* data = src.raw();
  if (col.ragged) {
    e->shape = src.shape();
  } else {
    // Row r of a dense column [rows, ...]: the same buffer, `r` rows in.
    e->shape.assign(src.shape().begin() + 1, src.shape().end());
    data += static_cast<size_t>(r) * static_cast<size_t>(shape_num_elements(e->shape)) * dtype_size(src.dtype());
  }
  DLTensor& t = e->managed.dl_tensor;
  t.data = const_cast<uint8_t*>(data);
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = static_cast<int32_t>(e->shape.size());
  t.dtype = *dt;
  t.shape = e->shape.data();
  t.strides = nullptr;
  t.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = delete_exported;
  g_live.fetch_add(1, std::memory_order_relaxed);
  return &e->managed;
}

DLManagedTensor* export_tensor(const Tensor& t) {
  Column whole;  // a column of one ragged row is exported with the row's own shape
  whole.ragged = true;
  whole.rows = {t};
  return export_row(whole, 0);
}

DLManagedTensor* share_exported(const DLManagedTensor* t) {
  const auto* from = static_cast<const ExportedTensor*>(t->manager_ctx);
  auto* e = new ExportedTensor;
  e->keep = from->keep;
  e->shape = from->shape;
  e->managed.dl_tensor = t->dl_tensor;
  e->managed.dl_tensor.shape = e->shape.data();
  e->managed.manager_ctx = e;
  e->managed.deleter = delete_exported;
  g_live.fetch_add(1, std::memory_order_relaxed);
  return &e->managed;
}

int64_t live_exported_tensors() { return g_live.load(std::memory_order_relaxed); }

}  // namespace pipec
