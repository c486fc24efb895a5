// dlopen of the first library in a list of candidates, remembering why each one failed, so that a
// missing CUDA driver or NVRTC becomes one clear sentence instead of a link error.
#pragma once

#include <string>
#include <vector>

namespace pipec::gpu {

struct SharedLibrary {
  void* handle = nullptr;
  std::string path;  // the candidate that opened
  /// The symbol's address, or null.
  void* symbol(const char* name) const;
};

/// Opens the first of `candidates` that dlopen accepts (names are searched the usual way, paths are
/// taken as they are). On failure `handle` is null and `why` lists what was tried.
SharedLibrary open_first_library(const std::vector<std::string>& candidates, std::string& why);

}  // namespace pipec::gpu
