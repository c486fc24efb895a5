// What this machine offers the GPU path, for `pipec doctor`: the CUDA driver, each GPU, and each of
// the libraries pipec opens at run time (libcuda, NVRTC, cuDNN, cuBLASLt, NCCL) with its path and
// version, or why it is missing and what that disables. Gathering it never fails and needs no GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pipec::gpu {

struct GpuDeviceInfo {
  int index = 0;
  std::string name;
  uint64_t memory_bytes = 0;
  int compute_major = 0, compute_minor = 0;
  int multiprocessors = 0;
};

struct GpuLibraryInfo {
  std::string name;  // "libcuda", "NVRTC", "cuDNN", "cuBLASLt", "NCCL"
  std::string role;  // what pipec uses it for, in a few words
  bool found = false;
  std::string path;      // when found
  std::string version;   // when found: "9.19.0"
  std::string why;       // when missing: the loader's sentence
  std::string disables;  // when missing: what runs instead ("conv2d trains with ...")
};

struct GpuInventory {
  bool driver_found = false;
  std::string driver_path;            // the libcuda that opened
  std::string driver_cuda_version;    // the CUDA version the driver supports: "13.0"
  std::string kernel_module_version;  // /proc/driver/nvidia/version's "580.95.05", when readable
  std::string driver_why;             // no driver: why
  std::vector<GpuDeviceInfo> devices;
  std::string devices_why;  // no devices although a driver is there: why (cuInit's answer)
  std::vector<GpuLibraryInfo> libraries;
};

/// Opens (or reuses) each library once and asks each GPU for its properties.
GpuInventory gpu_inventory();

/// "13.0" from cuDriverGetVersion()'s 1000 * major + 10 * minor.
std::string cuda_version_string(int version);

/// The NVIDIA kernel module's version from the text of /proc/driver/nvidia/version ("NVRM version:
/// NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build ..."): "580.95.05", or "" when
/// it is not there.
std::string kernel_module_version(const std::string& proc_text);

}  // namespace pipec::gpu
