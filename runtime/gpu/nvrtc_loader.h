// NVRTC, the CUDA run-time compiler, opened with dlopen: CUDA C++ source in, PTX out. It needs no GPU,
// so CI compiles every generated kernel with it even though nothing there can run one.
#pragma once

#include <string>
#include <vector>

namespace pipec::gpu {

struct PtxResult {
  bool ok = false;
  std::string ptx;
  std::string log;  // NVRTC's messages (the errors when !ok)
};

/// The options generated map kernels are compiled with: IEEE arithmetic as on the CPU. No fused
/// multiply-add (the interpreter rounds every multiply and add on its own, and a fusion would change
/// the last bit of values such as lo + (hi - lo) * u), no flushing of denormals to zero, correctly
/// rounded division and square root (NVRTC's defaults too, spelled out so they cannot drift).
std::vector<std::string> exact_math_options();

class Nvrtc {
 public:
  /// NVRTC opened once per process; null with `why` filled when it is not installed. Searched as
  /// $PIPEC_NVRTC_LIBRARY, then libnvrtc.so(.13/.12/.11.2) on the loader's path, then in the folders
  /// of cuda_library_dirs() ($PIPEC_CUDA_LIBRARY_PATH, the toolkit's, NVIDIA's pip wheels). NVRTC
  /// opens its builtins library (libnvrtc-builtins) from beside itself.
  static const Nvrtc* get(std::string* why = nullptr);

  /// Compiles `source` to PTX for compute capability `arch` (80 for sm_80) with `options` added.
  PtxResult compile(const std::string& source, const std::string& name, int arch,
                    const std::vector<std::string>& options = {}) const;

  /// "13.0"
  std::string version() const;
  const std::string& library() const { return library_; }

  struct Api;
  ~Nvrtc();

 private:
  Nvrtc() = default;
  Api* api_ = nullptr;
  std::string library_;
};

}  // namespace pipec::gpu
