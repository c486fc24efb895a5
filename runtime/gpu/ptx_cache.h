// Compiled kernels cached on disk, so a spec compiles its GPU maps once per machine, not once per run.
//
// The key is a 128-bit hash of (source, architecture, NVRTC version, options); the entry is the PTX,
// written to a temporary file and renamed, so concurrent runs never read half an entry. The folder is
// $PIPEC_CACHE_DIR/cuda, else $XDG_CACHE_HOME/pipec/cuda, else ~/.cache/pipec/cuda; a cache that
// cannot be written is skipped silently (compiling again is always correct).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "runtime/gpu/nvrtc_loader.h"

namespace pipec::gpu {

struct CachedPtx {
  PtxResult result;
  bool from_cache = false;
  double compile_ms = 0;  // 0 when it came from the cache
};

/// The cache folder described above.
std::filesystem::path ptx_cache_dir();

/// The hex file name of an entry (exposed for tests).
std::string ptx_cache_key(const std::string& source, int arch, const std::string& nvrtc_version,
                          const std::vector<std::string>& options);

/// The PTX for `source` on `arch`: from `dir` when present, else compiled with `nvrtc` and stored.
CachedPtx compile_ptx_cached(const Nvrtc& nvrtc, const std::string& source, const std::string& name, int arch,
                             const std::vector<std::string>& options = {},
                             const std::filesystem::path& dir = ptx_cache_dir());

}  // namespace pipec::gpu
