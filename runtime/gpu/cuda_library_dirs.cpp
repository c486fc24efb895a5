#include "runtime/gpu/cuda_library_dirs.h"

#include <glob.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace pipec::gpu {

namespace fs = std::filesystem;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::vector<std::string> split_path_list(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ':'))
    if (!item.empty()) out.push_back(item);
  return out;
}

bool is_dir(const std::string& p) {
  std::error_code ec;
  return !p.empty() && fs::is_directory(p, ec);
}

void add_unique(std::vector<std::string>& list, const std::string& dir) {
  if (!dir.empty() && std::find(list.begin(), list.end(), dir) == list.end()) list.push_back(dir);
}

std::vector<std::string> glob_sorted(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (glob(pattern.c_str(), GLOB_ONLYDIR, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);  // glob sorts
  globfree(&g);
  return out;
}

}  // namespace

std::vector<std::string> python_prefixes() {
  std::vector<std::string> out;
  add_unique(out, env("VIRTUAL_ENV"));
  add_unique(out, env("CONDA_PREFIX"));
  for (const std::string& dir : split_path_list(env("PATH"))) {
    std::string python = dir + "/python3";
    if (access(python.c_str(), X_OK) == 0) {
      std::error_code ec;
      fs::path parent = fs::path(dir).lexically_normal().parent_path();
      // A virtual environment's python3 is often a link to the system's: the folder above the
      // link (the environment) is the one with the packages, so the link is not resolved.
      if (!parent.empty()) add_unique(out, parent.string());
    }
  }
  if (std::string home = env("HOME"); !home.empty()) add_unique(out, home + "/.local");
  add_unique(out, "/usr/local");
  add_unique(out, "/usr");
  return out;
}

std::vector<std::string> nvidia_wheel_library_dirs(const std::vector<std::string>& prefixes) {
  std::vector<std::string> out;
  for (const std::string& prefix : prefixes)
    for (const char* packages : {"site-packages", "dist-packages"})
      for (const std::string& dir : glob_sorted(prefix + "/lib/python3*/" + packages + "/nvidia/*/lib"))
        add_unique(out, dir);
  return out;
}

std::vector<std::string> cuda_library_dirs() {
  std::vector<std::string> candidates = split_path_list(env("PIPEC_CUDA_LIBRARY_PATH"));
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (std::string v = env(var); !v.empty()) candidates.push_back(v + "/lib64");
  candidates.push_back("/usr/local/cuda/lib64");
  candidates.push_back("/usr/local/cuda/lib");
  for (const std::string& dir : nvidia_wheel_library_dirs(python_prefixes())) candidates.push_back(dir);
  std::vector<std::string> out;
  for (const std::string& dir : candidates)
    if (is_dir(dir)) add_unique(out, dir);
  return out;
}

std::vector<std::string> existing_library_files(const std::vector<std::string>& dirs,
                                                const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const std::string& dir : dirs)
    for (const std::string& name : names) {
      std::error_code ec;
      std::string path = dir + "/" + name;
      if (fs::exists(path, ec)) add_unique(out, path);
    }
  return out;
}

std::vector<std::string> cuda_library_candidates(const char* override_env, const std::vector<std::string>& names) {
  if (std::string v = env(override_env); !v.empty()) return {v};
  std::vector<std::string> out = names;
  // Only files that exist, so the reason stays short when none opens.
  for (const std::string& path : existing_library_files(cuda_library_dirs(), names)) out.push_back(path);
  return out;
}

}  // namespace pipec::gpu
