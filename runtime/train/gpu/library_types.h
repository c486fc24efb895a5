// What the cuDNN and cuBLASLt wrappers of GPU training share: the storage type of a tensor on the
// device, the workspace a call is given, and the settings every library call is made under.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/train/gpu/kernel_launcher.h"

namespace pipec::gpu {

/// How a tensor is stored on the device. Arithmetic is f32 in every case (products summed in f32):
/// the 16-bit types are storage for the mixed precisions, never the accumulator.
enum class GpuDType { F32, F16, BF16 };

const char* gpu_dtype_name(GpuDType t);  // "f32", "f16", "bf16"
size_t gpu_dtype_bytes(GpuDType t);

/// Device memory the caller lends one library call (cuDNN's and cuBLASLt's scratch): `bytes` from
/// `ptr`. Each wrapper says how much a call needs before it is made (workspace_bytes()).
struct DeviceWorkspace {
  DevPtr ptr = 0;
  size_t bytes = 0;
};

struct LibraryCallOptions {
  GpuDType dtype = GpuDType::F32;
  /// fp32 only: let the libraries round the inputs of products to TF32 on tensor cores (faster, about
  /// 1e-3 relative error). Off unless the run asks (`--allow-tf32`): fp32 means fp32.
  bool allow_tf32 = false;
  /// f32 data whose every multiplied value is a bf16 or fp16 value (mixed precision's rounded operands,
  /// tf32_exact_nodes.h): TF32 holds them exactly, so the tensor-core engines are taken with no loss, as
  /// with allow_tf32.
  bool tf32_exact_operands = false;
  /// Every device pointer passed to a call is a multiple of this many bytes (the libraries choose
  /// kernels by it; a call with a less aligned pointer is refused with an error).
  uint32_t alignment = 16;
};

}  // namespace pipec::gpu
