// `pipec doctor`: what this machine offers the GPU path. The CUDA driver, each GPU, and each library
// pipec opens at run time (libcuda, NVRTC, cuDNN, cuBLASLt, NCCL) with its path and version, or why it
// is missing and what runs instead. Exits 0 whatever it finds: a machine without a GPU is a valid answer.
#include <algorithm>
#include <iostream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/driver/cli.h"
#include "compiler/driver/commands.h"
#include "runtime/gpu/gpu_inventory.h"

namespace pipec {

namespace {

using gpu::GpuInventory;

std::string gib(uint64_t bytes) { return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1ull << 30)); }

void print_text(const GpuInventory& inv, std::ostream& out) {
  out << "driver\n";
  if (inv.driver_found) {
    out << fmt::format("  {}: CUDA {}", inv.driver_path, inv.driver_cuda_version);
    if (!inv.kernel_module_version.empty()) out << fmt::format(", kernel module {}", inv.kernel_module_version);
    out << "\n";
  } else {
    out << "  missing: " << inv.driver_why << "\n";
  }
  out << "gpus\n";
  if (inv.devices.empty())
    out << "  none: " << (inv.driver_found ? inv.devices_why : std::string("no CUDA driver")) << "\n";
  for (const gpu::GpuDeviceInfo& d : inv.devices)
    out << fmt::format("  {}: {}, {}, compute capability {}.{}, {} SMs\n", d.index, d.name, gib(d.memory_bytes),
                       d.compute_major, d.compute_minor, d.multiprocessors);
  out << "libraries\n";
  size_t width = 0;
  for (const gpu::GpuLibraryInfo& l : inv.libraries) width = std::max(width, l.name.size());
  for (const gpu::GpuLibraryInfo& l : inv.libraries) {
    if (l.found) {
      out << fmt::format("  {:<{}}  {} {} ({})\n", l.name, width, l.path, l.version, l.role);
    } else {
      out << fmt::format("  {:<{}}  missing: {}\n", l.name, width, l.why);
      out << fmt::format("  {:<{}}  no {}: {}\n", "", width, l.name, l.disables);
    }
  }
  bool trains_on_gpu =
      !inv.devices.empty() && inv.libraries.size() >= 2 && inv.libraries[0].found && inv.libraries[1].found;
  out << (trains_on_gpu ? "GPU path usable: maps after to(gpu) and training can run on GPU 0\n"
                        : "GPU path not usable here: everything runs on the CPU\n");
}

nlohmann::ordered_json to_json(const GpuInventory& inv) {
  using Json = nlohmann::ordered_json;
  Json driver = Json::object();
  driver["found"] = inv.driver_found;
  if (inv.driver_found) {
    driver["path"] = inv.driver_path;
    driver["cuda_version"] = inv.driver_cuda_version;
    if (!inv.kernel_module_version.empty()) driver["kernel_module_version"] = inv.kernel_module_version;
  } else {
    driver["why"] = inv.driver_why;
  }
  Json gpus = Json::array();
  for (const gpu::GpuDeviceInfo& d : inv.devices)
    gpus.push_back({{"index", d.index},
                    {"name", d.name},
                    {"memory_bytes", d.memory_bytes},
                    {"compute_capability", fmt::format("{}.{}", d.compute_major, d.compute_minor)},
                    {"multiprocessors", d.multiprocessors}});
  Json libraries = Json::array();
  for (const gpu::GpuLibraryInfo& l : inv.libraries) {
    Json j = {{"name", l.name}, {"role", l.role}, {"found", l.found}};
    if (l.found) {
      j["path"] = l.path;
      j["version"] = l.version;
    } else {
      j["why"] = l.why;
      j["disables"] = l.disables;
    }
    libraries.push_back(j);
  }
  Json out = {{"driver", driver}, {"gpus", gpus}, {"libraries", libraries}};
  if (inv.devices.empty() && inv.driver_found) out["gpus_why"] = inv.devices_why;
  return out;
}

}  // namespace

int cmd_doctor(const Args& args) {
  bool json = false;
  auto app = make_command("doctor", "",
                          "Prints what this machine offers the GPU path: the CUDA driver, each GPU (name, memory,\n"
                          "compute capability, SMs), and each library pipec opens at run time (libcuda, NVRTC,\n"
                          "cuDNN, cuBLASLt, NCCL) with its path and version, or why it is missing and what runs\n"
                          "instead. Exits 0 with or without a GPU.");
  app->add_flag("--json", json, "print the same as one JSON object");
  app->footer(
      "The libraries are searched on the loader's path, in $CUDA_HOME, /usr/local/cuda and the nvidia/*/lib "
      "folders of Python's site-packages; $PIPEC_CUDA_LIBRARY, $PIPEC_NVRTC_LIBRARY, $PIPEC_CUDNN_LIBRARY, "
      "$PIPEC_CUBLASLT_LIBRARY and $PIPEC_NCCL_LIBRARY name a file to open instead.");
  if (auto code = parse_command_line(*app, args)) return *code;
  GpuInventory inv = gpu::gpu_inventory();
  if (json) std::cout << to_json(inv).dump(2) << "\n";
  else print_text(inv, std::cout);
  std::cout.flush();
  return 0;
}

}  // namespace pipec
