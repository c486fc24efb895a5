#include "compiler/codegen/llvm/kernel_cache.h"

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/SHA1.h>

#ifndef PIPEC_VERSION
#define PIPEC_VERSION "dev"
#endif

namespace pipec::codegen {

namespace {

constexpr const char* kMagic = "PIPEC-KERNEL-OBJECT-1 ";

std::string sha1_hex(const std::string& data) {
  llvm::SHA1 h;
  h.update(data);
  return llvm::toHex(h.final(), true);
}

std::string path_of(const std::string& dir, const std::string& key) { return dir + "/" + key + ".o"; }

}  // namespace

std::string default_cache_dir() {
  if (const char* d = std::getenv("PIPEC_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/pipec";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/pipec";
  return "/tmp/pipec-cache";
}

std::string kernel_cache_key(const std::string& ir_text, const std::string& target) {
  return sha1_hex(ir_text + "\n--target " + target + "\n--pipec " + PIPEC_VERSION);
}

std::optional<std::string> cache_load(const std::string& dir, const std::string& key) {
  std::ifstream f(path_of(dir, key), std::ios::binary);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  std::string all = ss.str();
  const size_t magic = std::char_traits<char>::length(kMagic);
  const size_t header = magic + 40 + 1;
  if (all.size() < header || all.compare(0, magic, kMagic) != 0 || all[header - 1] != '\n') return std::nullopt;
  std::string object = all.substr(header);
  if (sha1_hex(object) != all.substr(magic, 40)) return std::nullopt;
  return object;
}

bool cache_store(const std::string& dir, const std::string& key, const std::string& object) {
  static std::atomic<int> counter{0};
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string final_path = path_of(dir, key);
  const std::string tmp = final_path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return false;
    f << kMagic << sha1_hex(object) << '\n';
    f.write(object.data(), static_cast<std::streamsize>(object.size()));
    if (!f.good()) {
      f.close();
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::filesystem::rename(tmp, final_path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return false;
  }
  return true;
}

}  // namespace pipec::codegen
