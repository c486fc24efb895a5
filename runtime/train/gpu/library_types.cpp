#include "runtime/train/gpu/library_types.h"

namespace pipec::gpu {

const char* gpu_dtype_name(GpuDType t) {
  switch (t) {
    case GpuDType::F32: return "f32";
    case GpuDType::F16: return "f16";
    case GpuDType::BF16: return "bf16";
  }
  return "?";
}

size_t gpu_dtype_bytes(GpuDType t) { return t == GpuDType::F32 ? 4 : 2; }

}  // namespace pipec::gpu
