// cuBLASLt, opened with dlopen: dense layers of GPU training run as its matmuls with fused bias/ReLU
// epilogues (runtime/train/gpu/cublaslt_dense.h). Without it dense trains with pipec's own CUDA kernels.
#pragma once

#include <cstddef>
#include <string>

#include "runtime/gpu/cublaslt_api.h"

namespace pipec::gpu {

struct CublasLtLibrary {
  cublaslt::CublasLtApi api;
  std::string path;    // the file opened (absolute when the loader resolved a bare name)
  size_t version = 0;  // cublasLtGetVersion(): 130100 for 13.1.0

  /// "13.1.0"
  std::string version_string() const;
};

/// cuBLASLt opened once per process; null with `why` saying why in one sentence. Searched as
/// $PIPEC_CUBLASLT_LIBRARY, else libcublasLt.so.13/.12/.11 on the loader's path, then in the folders
/// of cuda_library_dirs() (the toolkit's; NVIDIA's pip wheels: nvidia/cu13/lib, nvidia/cublas/lib).
/// Needs no GPU.
const CublasLtLibrary* cublaslt_library(std::string* why = nullptr);

}  // namespace pipec::gpu
