#include "runtime/gpu/cublaslt_loader.h"

#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "runtime/gpu/cuda_library_dirs.h"
#include "runtime/gpu/shared_library.h"

namespace pipec::gpu {

std::string CublasLtLibrary::version_string() const {
  return fmt::format("{}.{}.{}", version / 10000, version % 10000 / 100, version % 100);
}

namespace {

std::unique_ptr<CublasLtLibrary> open_cublaslt(std::string& why) {
  SharedLibrary so = open_first_library(
      cuda_library_candidates("PIPEC_CUBLASLT_LIBRARY",
                              {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11", "libcublasLt.so"}),
      why);
  if (!so.handle) {
    why = "cuBLASLt (libcublasLt.so from the CUDA toolkit or the nvidia-cublas wheel) is not installed: " + why;
    return nullptr;
  }
  auto lib = std::make_unique<CublasLtLibrary>();
  lib->path = so.file;
  std::string missing;
#define PIPEC_RESOLVE(name) resolve_symbol(so, lib->api.name, #name, missing);
  PIPEC_CUBLASLT_FUNCTIONS(PIPEC_RESOLVE)
#undef PIPEC_RESOLVE
  if (!missing.empty()) {
    why = fmt::format("{} lacks cuBLASLt functions pipec needs ({})", so.path, missing);
    return nullptr;
  }
  lib->version = lib->api.cublasLtGetVersion();
  // The matmul API, the epilogues and CUBLAS_COMPUTE_32F used here are those of cuBLAS 11 and later.
  if (lib->version / 10000 < 11) {
    why = fmt::format("{} is cuBLASLt {}; pipec needs 11 or later", so.path, lib->version_string());
    return nullptr;
  }
  return lib;
}

}  // namespace

const CublasLtLibrary* cublaslt_library(std::string* why) {
  static std::once_flag once;
  static std::unique_ptr<CublasLtLibrary> lib;
  static std::string reason;
  std::call_once(once, [] { lib = open_cublaslt(reason); });
  if (!lib && why) *why = reason;
  return lib.get();
}

}  // namespace pipec::gpu
