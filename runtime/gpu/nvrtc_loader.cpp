#include "runtime/gpu/nvrtc_loader.h"

#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "runtime/gpu/cuda_api.h"
#include "runtime/gpu/cuda_library_dirs.h"
#include "runtime/gpu/shared_library.h"

namespace pipec::gpu {

using namespace cuda;

struct Nvrtc::Api {
  PFN_nvrtcVersion version = nullptr;
  PFN_nvrtcGetErrorString error_string = nullptr;
  PFN_nvrtcCreateProgram create = nullptr;
  PFN_nvrtcDestroyProgram destroy = nullptr;
  PFN_nvrtcCompileProgram compile = nullptr;
  PFN_nvrtcGetPTXSize ptx_size = nullptr;
  PFN_nvrtcGetPTX ptx = nullptr;
  PFN_nvrtcGetProgramLogSize log_size = nullptr;
  PFN_nvrtcGetProgramLog log = nullptr;
};

std::vector<std::string> exact_math_options() {
  return {"--fmad=false", "--ftz=false", "--prec-div=true", "--prec-sqrt=true"};
}

Nvrtc::~Nvrtc() { delete api_; }

const Nvrtc* Nvrtc::get(std::string* why) {
  static std::once_flag once;
  static std::unique_ptr<Nvrtc> instance;
  static std::string reason;
  std::call_once(once, [] {
    // A wheel's libnvrtc finds its libnvrtc-builtins beside itself through its $ORIGIN runpath, like
    // the toolkit's.
    std::vector<std::string> candidates = cuda_library_candidates(
        "PIPEC_NVRTC_LIBRARY", {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"});
    SharedLibrary lib = open_first_library(candidates, reason);
    if (!lib.handle) {
      reason = "NVRTC (libnvrtc.so from the CUDA toolkit, or the nvidia-cuda-nvrtc wheel) is not installed: " + reason;
      return;
    }
    auto api = std::make_unique<Api>();
    api->version = reinterpret_cast<PFN_nvrtcVersion>(lib.symbol("nvrtcVersion"));
    api->error_string = reinterpret_cast<PFN_nvrtcGetErrorString>(lib.symbol("nvrtcGetErrorString"));
    api->create = reinterpret_cast<PFN_nvrtcCreateProgram>(lib.symbol("nvrtcCreateProgram"));
    api->destroy = reinterpret_cast<PFN_nvrtcDestroyProgram>(lib.symbol("nvrtcDestroyProgram"));
    api->compile = reinterpret_cast<PFN_nvrtcCompileProgram>(lib.symbol("nvrtcCompileProgram"));
    api->ptx_size = reinterpret_cast<PFN_nvrtcGetPTXSize>(lib.symbol("nvrtcGetPTXSize"));
    api->ptx = reinterpret_cast<PFN_nvrtcGetPTX>(lib.symbol("nvrtcGetPTX"));
    api->log_size = reinterpret_cast<PFN_nvrtcGetProgramLogSize>(lib.symbol("nvrtcGetProgramLogSize"));
    api->log = reinterpret_cast<PFN_nvrtcGetProgramLog>(lib.symbol("nvrtcGetProgramLog"));
    if (!api->version || !api->error_string || !api->create || !api->destroy || !api->compile || !api->ptx_size ||
        !api->ptx || !api->log_size || !api->log) {
      reason = lib.path + " lacks NVRTC functions pipec needs";
      return;
    }
    instance.reset(new Nvrtc());
    instance->api_ = api.release();
    instance->library_ = lib.file;
  });
  if (!instance && why) *why = reason;
  return instance.get();
}

std::string Nvrtc::version() const {
  int major = 0, minor = 0;
  api_->version(&major, &minor);
  return fmt::format("{}.{}", major, minor);
}

PtxResult Nvrtc::compile(const std::string& source, const std::string& name, int arch,
                         const std::vector<std::string>& options) const {
  PtxResult out;
  nvrtcProgram prog = nullptr;
  nvrtcResult r = api_->create(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr);
  if (r != NVRTC_SUCCESS) {
    out.log = fmt::format("nvrtcCreateProgram failed: {}", api_->error_string(r));
    return out;
  }
  // A virtual architecture (compute_XX) makes PTX, which the driver finishes for the GPU it has.
  std::vector<std::string> opts = {fmt::format("--gpu-architecture=compute_{}", arch), "--std=c++17"};
  opts.insert(opts.end(), options.begin(), options.end());
  std::vector<const char*> argv;
  for (const std::string& o : opts) argv.push_back(o.c_str());
  r = api_->compile(prog, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  if (api_->log_size(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    out.log.resize(log_size);
    api_->log(prog, out.log.data());
    out.log.resize(log_size - 1);  // drop the terminating NUL
  }
  if (r != NVRTC_SUCCESS) {
    if (out.log.empty()) out.log = fmt::format("nvrtcCompileProgram failed: {}", api_->error_string(r));
  } else {
    size_t n = 0;
    if (api_->ptx_size(prog, &n) == NVRTC_SUCCESS && n > 0) {
      out.ptx.resize(n);
      if (api_->ptx(prog, out.ptx.data()) == NVRTC_SUCCESS) {
        out.ptx.resize(n - 1);
        out.ok = true;
      }
    }
    if (!out.ok) out.log += "\nNVRTC produced no PTX";
  }
  api_->destroy(&prog);
  return out;
}

}  // namespace pipec::gpu
