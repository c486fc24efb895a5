// Handing runtime tensors to C callers as DLPack tensors without copying them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/capi/pipe.h"
#include "runtime/core/chunk.h"

namespace pipec {

/// The DLPack dtype of a runtime dtype; nullopt for byte strings, which DLPack cannot describe.
std::optional<DLDataType> dlpack_dtype(DType t);

/// Row `r` of `col` as a new DLManagedTensor pointing into the column's buffer. Its manager_ctx holds
/// a reference to that buffer (and the shape array), so the data stays valid until the caller runs
/// the deleter, whatever the runtime does meanwhile. Throws std::runtime_error for byte strings.
DLManagedTensor* export_row(const Column& col, int64_t r);

/// The whole of `t` as a new DLManagedTensor sharing its buffer (as export_row's).
DLManagedTensor* export_tensor(const Tensor& t);

/// Another DLManagedTensor over the same data as `t`, which export_row (or this) made, with its own
/// reference to the buffer: for hosts that hand one tensor to several consumers, each of which takes
/// ownership of what it gets (Python's __dlpack__ may be called more than once).
DLManagedTensor* share_exported(const DLManagedTensor* t);

/// DLManagedTensors made by export_row whose deleter has not run yet.
int64_t live_exported_tensors();

}  // namespace pipec
