#include "runtime/gpu/cudnn_loader.h"

#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "runtime/gpu/cuda_library_dirs.h"
#include "runtime/gpu/shared_library.h"

namespace pipec::gpu {

std::string cudnn_version_string(size_t version) {
  return fmt::format("{}.{}.{}", version / 10000, version % 10000 / 100, version % 100);
}

std::string CudnnLibrary::version_string() const { return cudnn_version_string(version); }

namespace {

std::unique_ptr<CudnnLibrary> open_cudnn(std::string& why) {
  SharedLibrary so =
      open_first_library(cuda_library_candidates("PIPEC_CUDNN_LIBRARY", {"libcudnn.so.9", "libcudnn.so"}), why);
  if (!so.handle) {
    why = "cuDNN 9 (libcudnn.so.9 from the nvidia-cudnn wheel or a cuDNN install) is not installed: " + why;
    return nullptr;
  }
  auto lib = std::make_unique<CudnnLibrary>();
  lib->path = so.file;
  std::string missing;
#define PIPEC_RESOLVE(name) resolve_symbol(so, lib->api.name, #name, missing);
  PIPEC_CUDNN_FUNCTIONS(PIPEC_RESOLVE)
#undef PIPEC_RESOLVE
  if (!missing.empty()) {
    why = fmt::format("{} lacks cuDNN functions pipec needs ({})", so.path, missing);
    return nullptr;
  }
  lib->version = lib->api.cudnnGetVersion();
  if (lib->version / 10000 != 9) {
    why = fmt::format("{} is cuDNN {}; pipec needs cuDNN 9", so.path, lib->version_string());
    return nullptr;
  }
  // The backend API lives in libcudnn_graph, which libcudnn.so.9 opens on first use: a wheel or
  // install missing it (or at another version) fails here, not in the middle of training.
  if (cudnn::cudnnStatus_t s = lib->api.cudnnGraphVersionCheck(); s != cudnn::CUDNN_STATUS_SUCCESS) {
    const char* text = lib->api.cudnnGetErrorString(s);
    why = fmt::format("{} could not load its graph library (libcudnn_graph.so.9): {}", so.path,
                      text ? text : fmt::format("status {}", s));
    return nullptr;
  }
  return lib;
}

}  // namespace

const CudnnLibrary* cudnn_library(std::string* why) {
  static std::once_flag once;
  static std::unique_ptr<CudnnLibrary> lib;
  static std::string reason;
  std::call_once(once, [] { lib = open_cudnn(reason); });
  if (!lib && why) *why = reason;
  return lib.get();
}

}  // namespace pipec::gpu
