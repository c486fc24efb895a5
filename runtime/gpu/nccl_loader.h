// NCCL, opened with dlopen: the all-reduce of data-parallel training on several GPUs. `pipec doctor`
// reports it; training on one GPU never needs it.
#pragma once

#include <string>

#include "runtime/gpu/nccl_api.h"

namespace pipec::gpu {

struct NcclLibrary {
  nccl::NcclApi api;
  std::string path;  // the file opened (absolute when the loader resolved a bare name)
  int version = 0;   // ncclGetVersion(): 22809 for 2.28.9

  /// "2.28.9"
  std::string version_string() const;
};

/// NCCL opened once per process; null with `why` saying why in one sentence. Searched as
/// $PIPEC_NCCL_LIBRARY, else libnccl.so.2 on the loader's path, then in the folders of
/// cuda_library_dirs() (NVIDIA's pip wheels: nvidia/nccl/lib). Needs no GPU.
const NcclLibrary* nccl_library(std::string* why = nullptr);

/// "2.28.9" from ncclGetVersion()'s code: major * 10000 + minor * 100 + patch since 2.9, major * 1000 +
/// minor * 100 + patch before.
std::string nccl_version_string(int code);

}  // namespace pipec::gpu
