#include "compiler/driver/installed_layout.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace pipec {

namespace fs = std::filesystem;

namespace {

// PREFIX when this executable is PREFIX/bin/pipec of an install (PREFIX/share/pipec exists), else "".
fs::path install_prefix() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  fs::path prefix = exe.parent_path().parent_path();
  if (exe.parent_path().filename() != "bin" || !fs::is_directory(prefix / "share" / "pipec", ec)) return {};
  return prefix;
}

void set_default(const char* name, const fs::path& value) {
  std::error_code ec;
  if (!std::getenv(name) && fs::exists(value, ec)) setenv(name, value.c_str(), 0);
}

}  // namespace

void use_installed_layout() {
  fs::path prefix = install_prefix();
  if (prefix.empty()) return;
  set_default("PIPEC_STDLIB", prefix / "share" / "pipec" / "stdlib");
  set_default("PIPEC_RUNTIME_LIB_DIR", prefix / "lib" / "pipec");
}

std::string capi_header_path() {
  fs::path prefix = install_prefix();
  std::error_code ec;
  if (!prefix.empty() && fs::exists(prefix / "include" / "pipec" / "pipe.h", ec))
    return (prefix / "include" / "pipec" / "pipe.h").string();
  return PIPEC_CAPI_HEADER;
}

}  // namespace pipec
