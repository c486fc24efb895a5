// Where CUDA's user-space libraries (NVRTC, cuDNN, cuBLASLt, NCCL) may be on a
// machine: a toolkit install, or the pip wheels that PyTorch and JAX bring (nvidia/<package>/lib in a
// Python site-packages). Machines that run models often have only the wheels, so both are searched.
#pragma once

#include <string>
#include <vector>

namespace pipec::gpu {

/// The folders to search, in order, each listed once:
///   1. $PIPEC_CUDA_LIBRARY_PATH (colon-separated; tests/gpu/run.sh sets it from Python's `nvidia`
///      package),
///   2. $CUDA_HOME/lib64, $CUDA_PATH/lib64, /usr/local/cuda/lib64, /usr/local/cuda/lib (never the
///      stubs folder: its libcuda only fails),
///   3. nvidia_wheel_library_dirs(python_prefixes()).
/// Folders that do not exist are left out.
std::vector<std::string> cuda_library_dirs();

/// Install prefixes that may hold Python packages, in order: $VIRTUAL_ENV, $CONDA_PREFIX, the folder
/// above each folder of $PATH that holds a `python3`, ~/.local, /usr/local, /usr.
std::vector<std::string> python_prefixes();

/// The `lib` folders of NVIDIA's wheels under `prefixes`:
/// PREFIX/lib/python3*/{site,dist}-packages/nvidia/*/lib (e.g. nvidia/cu13/lib for CUDA 13's wheels,
/// nvidia/cuda_nvrtc/lib for CUDA 12's), sorted within each prefix.
std::vector<std::string> nvidia_wheel_library_dirs(const std::vector<std::string>& prefixes);

/// The existing files `dir/name` for every folder of `dirs` and every name of `names` (folder-major),
/// so that a loader tries only real files and its error stays short.
std::vector<std::string> existing_library_files(const std::vector<std::string>& dirs,
                                                const std::vector<std::string>& names);

/// What a loader of one of CUDA's user-space libraries tries, in order: $`override_env` alone when it
/// is set (tests point it at a missing file), else each of `names` on the loader's own search path,
/// then the existing files of existing_library_files(cuda_library_dirs(), names).
std::vector<std::string> cuda_library_candidates(const char* override_env, const std::vector<std::string>& names);

}  // namespace pipec::gpu
