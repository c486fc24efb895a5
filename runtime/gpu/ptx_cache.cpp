#include "runtime/gpu/ptx_cache.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace pipec::gpu {

namespace fs = std::filesystem;

namespace {

// FNV-1a over 64 bits with two different offset bases: two independent 64-bit hashes make a 128-bit
// key, enough that distinct kernels never share an entry in practice.
uint64_t fnv1a(const std::string& s, uint64_t h) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

fs::path ptx_cache_dir() {
  if (const char* v = std::getenv("PIPEC_CACHE_DIR"); v && *v) return fs::path(v) / "cuda";
  if (const char* v = std::getenv("XDG_CACHE_HOME"); v && *v) return fs::path(v) / "pipec" / "cuda";
  if (const char* v = std::getenv("HOME"); v && *v) return fs::path(v) / ".cache" / "pipec" / "cuda";
  return fs::temp_directory_path() / "pipec-cache" / "cuda";
}

std::string ptx_cache_key(const std::string& source, int arch, const std::string& nvrtc_version,
                          const std::vector<std::string>& options) {
  std::string all = fmt::format("sm_{}\nnvrtc {}\n", arch, nvrtc_version);
  for (const std::string& o : options) all += o + "\n";
  all += source;
  return fmt::format("{:016x}{:016x}-sm_{}", fnv1a(all, 0xcbf29ce484222325ULL), fnv1a(all, 0x84222325cbf29ce4ULL),
                     arch);
}

CachedPtx compile_ptx_cached(const Nvrtc& nvrtc, const std::string& source, const std::string& name, int arch,
                             const std::vector<std::string>& options, const fs::path& dir) {
  CachedPtx out;
  const fs::path entry = dir / (ptx_cache_key(source, arch, nvrtc.version(), options) + ".ptx");
  if (std::ifstream in(entry, std::ios::binary); in) {
    std::stringstream ss;
    ss << in.rdbuf();
    // PTX is text ending in a newline; an empty entry is a broken one (ignored and rewritten).
    if (!ss.str().empty()) {
      out.result.ok = true;
      out.result.ptx = ss.str();
      out.from_cache = true;
      return out;
    }
  }
  auto start = std::chrono::steady_clock::now();
  out.result = nvrtc.compile(source, name, arch, options);
  out.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!out.result.ok) return out;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return out;
  const fs::path tmp = entry.string() + fmt::format(".tmp{}", static_cast<long>(getpid()));
  {
    std::ofstream o(tmp, std::ios::binary | std::ios::trunc);
    if (!o) return out;
    o << out.result.ptx;
    if (!o.flush()) {
      fs::remove(tmp, ec);
      return out;
    }
  }
  fs::rename(tmp, entry, ec);
  if (ec) fs::remove(tmp, ec);
  return out;
}

}  // namespace pipec::gpu
