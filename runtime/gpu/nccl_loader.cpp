#include "runtime/gpu/nccl_loader.h"

#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "runtime/gpu/cuda_library_dirs.h"
#include "runtime/gpu/shared_library.h"

namespace pipec::gpu {

std::string nccl_version_string(int code) {
  if (code >= 10000) return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);
}

std::string NcclLibrary::version_string() const { return nccl_version_string(version); }

namespace {

std::unique_ptr<NcclLibrary> open_nccl(std::string& why) {
  SharedLibrary so =
      open_first_library(cuda_library_candidates("PIPEC_NCCL_LIBRARY", {"libnccl.so.2", "libnccl.so"}), why);
  if (!so.handle) {
    why = "NCCL (libnccl.so.2 from the nvidia-nccl wheel or an NCCL install) is not installed: " + why;
    return nullptr;
  }
  auto lib = std::make_unique<NcclLibrary>();
  lib->path = so.file;
  std::string missing;
#define PIPEC_RESOLVE(name) resolve_symbol(so, lib->api.name, #name, missing);
  PIPEC_NCCL_FUNCTIONS(PIPEC_RESOLVE)
#undef PIPEC_RESOLVE
  if (!missing.empty()) {
    why = fmt::format("{} lacks NCCL functions pipec needs ({})", so.path, missing);
    return nullptr;
  }
  if (nccl::ncclResult_t r = lib->api.ncclGetVersion(&lib->version); r != nccl::ncclSuccess) {
    why = fmt::format("{}: ncclGetVersion failed: {}", so.path, lib->api.ncclGetErrorString(r));
    return nullptr;
  }
  return lib;
}

}  // namespace

const NcclLibrary* nccl_library(std::string* why) {
  static std::once_flag once;
  static std::unique_ptr<NcclLibrary> lib;
  static std::string reason;
  std::call_once(once, [] { lib = open_nccl(reason); });
  if (!lib && why) *why = reason;
  return lib.get();
}

}  // namespace pipec::gpu
