// dlopen of the first library in a list of candidates, remembering why each one failed, so that a
// missing CUDA driver or NVRTC becomes one clear sentence instead of a link error.
#pragma once

#include <string>
#include <vector>

namespace pipec::gpu {

struct SharedLibrary {
  void* handle = nullptr;
  std::string path;  // the candidate that opened
  /// The file the dynamic loader mapped for it (absolute: a bare name resolved through the loader's
  /// search path), or `path` when the loader cannot tell.
  std::string file;
  /// The symbol's address, or null.
  void* symbol(const char* name) const;
};

/// Opens the first of `candidates` that dlopen accepts (names are searched the usual way, paths are
/// taken as they are). On failure `handle` is null and `why` lists what was tried.
SharedLibrary open_first_library(const std::vector<std::string>& candidates, std::string& why);

/// Looks `name` up in `lib` into the function pointer `slot`; when it is absent, appends the name to
/// `missing` (comma-separated), so that a loader names every function a too-old library lacks.
template <class F>
void resolve_symbol(const SharedLibrary& lib, F& slot, const char* name, std::string& missing) {
  slot = reinterpret_cast<F>(lib.symbol(name));
  if (!slot) missing += missing.empty() ? name : std::string(", ") + name;
}

}  // namespace pipec::gpu
