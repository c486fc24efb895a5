// cuDNN 9, opened with dlopen: the convolutions of GPU training run through its backend graph API
// (runtime/train/gpu/cudnn_conv.h). Without it conv2d trains with pipec's own CUDA kernels.
#pragma once

#include <cstddef>
#include <string>

#include "runtime/gpu/cudnn_api.h"

namespace pipec::gpu {

struct CudnnLibrary {
  cudnn::CudnnApi api;
  std::string path;    // the file opened (absolute when the loader resolved a bare name)
  size_t version = 0;  // cudnnGetVersion(): 91900 for 9.19.0

  /// "9.19.0"
  std::string version_string() const;
};

/// cuDNN opened once per process; null with `why` saying why in one sentence (not installed, a
/// function missing, not version 9, its graph sub-library not loading). Searched as
/// $PIPEC_CUDNN_LIBRARY, else libcudnn.so.9 on the loader's path, then in the folders of
/// cuda_library_dirs() (the toolkit's, NVIDIA's pip wheels: nvidia/cudnn/lib). libcudnn.so.9 is the
/// small library that opens its sub-libraries (libcudnn_graph, the engines) from beside itself.
/// Needs no GPU.
const CudnnLibrary* cudnn_library(std::string* why = nullptr);

/// "9.19.0" from cudnnGetVersion()'s major * 10000 + minor * 100 + patch.
std::string cudnn_version_string(size_t version);

}  // namespace pipec::gpu
