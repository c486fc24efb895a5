#include "runtime/gpu/gpu_inventory.h"

#include <cctype>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "runtime/gpu/cublaslt_loader.h"
#include "runtime/gpu/cuda_api.h"
#include "runtime/gpu/cuda_loader.h"
#include "runtime/gpu/cudnn_loader.h"
#include "runtime/gpu/nccl_loader.h"
#include "runtime/gpu/nvrtc_loader.h"
#include "runtime/gpu/shared_library.h"

namespace pipec::gpu {

using namespace cuda;

std::string cuda_version_string(int version) { return fmt::format("{}.{}", version / 1000, version % 1000 / 10); }

std::string kernel_module_version(const std::string& proc_text) {
  // The first word of the first line that looks like a version: "... Kernel Module  580.95.05 ..." or
  // "... Open Kernel Module for x86_64  580.95.05  Release Build ...".
  std::istringstream line(proc_text.substr(0, proc_text.find('\n')));
  std::string word;
  while (line >> word) {
    bool digits = !word.empty() && std::isdigit(static_cast<unsigned char>(word[0]));
    for (char c : word) digits = digits && (std::isdigit(static_cast<unsigned char>(c)) || c == '.');
    if (digits && word.find('.') != std::string::npos) return word;
  }
  return "";
}

namespace {

std::string read_file_text(const char* path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The driver and every device, through a table of its own: cuda_driver() keeps only device 0 (with a
// context), and says nothing of the driver when the machine has no GPU, which is just when the
// driver's version is worth printing.
void probe_driver(GpuInventory& out) {
  std::string why;
  SharedLibrary lib = open_first_library(cuda_driver_candidates(), why);
  if (!lib.handle) {
    out.driver_why = "the CUDA driver library (libcuda.so.1) is not installed: " + why;
    return;
  }
  PFN_cuInit init = nullptr;
  PFN_cuGetErrorString error_string = nullptr;
  PFN_cuDriverGetVersion driver_version = nullptr;
  PFN_cuDeviceGetCount device_count = nullptr;
  PFN_cuDeviceGet device_get = nullptr;
  PFN_cuDeviceGetName device_name = nullptr;
  PFN_cuDeviceGetAttribute device_attribute = nullptr;
  PFN_cuDeviceTotalMem total_mem = nullptr;
  std::string missing;
  resolve_symbol(lib, init, "cuInit", missing);
  resolve_symbol(lib, error_string, "cuGetErrorString", missing);
  resolve_symbol(lib, driver_version, "cuDriverGetVersion", missing);
  resolve_symbol(lib, device_count, "cuDeviceGetCount", missing);
  resolve_symbol(lib, device_get, "cuDeviceGet", missing);
  resolve_symbol(lib, device_name, "cuDeviceGetName", missing);
  resolve_symbol(lib, device_attribute, "cuDeviceGetAttribute", missing);
  resolve_symbol(lib, total_mem, "cuDeviceTotalMem_v2", missing);
  if (!missing.empty()) {
    out.driver_why =
        fmt::format("{} lacks driver functions pipec needs ({}); the driver is too old", lib.path, missing);
    return;
  }
  out.driver_found = true;
  out.driver_path = lib.file;
  int version = 0;
  if (driver_version(&version) == CUDA_SUCCESS) out.driver_cuda_version = cuda_version_string(version);
  out.kernel_module_version = kernel_module_version(read_file_text("/proc/driver/nvidia/version"));
  auto text = [&](CUresult r) {
    const char* s = nullptr;
    if (error_string(r, &s) == CUDA_SUCCESS && s) return fmt::format("error {} ({})", r, s);
    return fmt::format("error {}", r);
  };
  CUresult r = init(0);
  if (r == CUDA_ERROR_STUB_LIBRARY) {
    out.driver_found = false;
    out.driver_why = fmt::format("{} is the CUDA toolkit's stub, not a driver", lib.path);
    return;
  }
  if (r == CUDA_ERROR_NO_DEVICE) {
    out.devices_why = "the CUDA driver found no GPU";
    return;
  }
  if (r != CUDA_SUCCESS) {
    out.devices_why = fmt::format("cuInit failed: {}", text(r));
    return;
  }
  int count = 0;
  if ((r = device_count(&count)) != CUDA_SUCCESS) {
    out.devices_why = fmt::format("cuDeviceGetCount failed: {}", text(r));
    return;
  }
  if (count == 0) out.devices_why = "the CUDA driver found no GPU";
  for (int i = 0; i < count; ++i) {
    GpuDeviceInfo d;
    d.index = i;
    CUdevice dev = 0;
    char name[256] = {};
    size_t bytes = 0;
    if ((r = device_get(&dev, i)) != CUDA_SUCCESS || (r = device_name(name, sizeof name - 1, dev)) != CUDA_SUCCESS ||
        (r = total_mem(&bytes, dev)) != CUDA_SUCCESS ||
        (r = device_attribute(&d.compute_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)) != CUDA_SUCCESS ||
        (r = device_attribute(&d.compute_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)) != CUDA_SUCCESS ||
        (r = device_attribute(&d.multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)) != CUDA_SUCCESS) {
      d.name = fmt::format("(could not be queried: {})", text(r));
    } else {
      d.name = name;
      d.memory_bytes = bytes;
    }
    out.devices.push_back(d);
  }
}

GpuLibraryInfo library(const char* name, const char* role, const char* disables) {
  GpuLibraryInfo info;
  info.name = name;
  info.role = role;
  info.disables = disables;
  return info;
}

}  // namespace

GpuInventory gpu_inventory() {
  GpuInventory out;
  probe_driver(out);

  GpuLibraryInfo cuda =
      library("libcuda", "the CUDA driver", "no GPU is used: maps after to(gpu) and training run on the CPU");
  cuda.found = out.driver_found;
  cuda.path = out.driver_path;
  cuda.version = out.driver_cuda_version;
  cuda.why = out.driver_why;
  out.libraries.push_back(cuda);

  std::string why;
  GpuLibraryInfo nvrtc = library("NVRTC", "compiles pipec's CUDA kernels",
                                 "no CUDA kernel can be compiled: maps after to(gpu) and training run on the CPU");
  if (const Nvrtc* n = Nvrtc::get(&why)) {
    nvrtc.found = true;
    nvrtc.path = n->library();
    nvrtc.version = n->version();
  } else {
    nvrtc.why = why;
  }
  out.libraries.push_back(nvrtc);

  GpuLibraryInfo cudnn = library("cuDNN", "conv2d and conv2d_transpose in training",
                                 "conv2d and conv2d_transpose train with pipec's own CUDA kernels, slower");
  if (const CudnnLibrary* l = cudnn_library(&why)) {
    cudnn.found = true;
    cudnn.path = l->path;
    cudnn.version = l->version_string();
  } else {
    cudnn.why = why;
  }
  out.libraries.push_back(cudnn);

  GpuLibraryInfo lt =
      library("cuBLASLt", "dense layers in training", "dense layers train with pipec's own CUDA kernels, slower");
  if (const CublasLtLibrary* l = cublaslt_library(&why)) {
    lt.found = true;
    lt.path = l->path;
    lt.version = l->version_string();
  } else {
    lt.why = why;
  }
  out.libraries.push_back(lt);

  GpuLibraryInfo nccl = library("NCCL", "all-reduce between GPUs",
                                "no all-reduce between GPUs: training uses one GPU (which needs no NCCL)");
  if (const NcclLibrary* l = nccl_library(&why)) {
    nccl.found = true;
    nccl.path = l->path;
    nccl.version = l->version_string();
  } else {
    nccl.why = why;
  }
  out.libraries.push_back(nccl);
  return out;
}

}  // namespace pipec::gpu
