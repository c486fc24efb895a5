// Where the GPU loaders look for CUDA's libraries: the toolkit, $PIPEC_CUDA_LIBRARY_PATH, and the pip
// wheels PyTorch brings (nvidia/<package>/lib), which GPU machines without a toolkit rely on.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include <gtest/gtest.h>

#include "runtime/gpu/cuda_library_dirs.h"

namespace pipec::gpu {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("pipec-cuda-dirs-" + std::to_string(::getpid()) + "-" +
                                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
  TempDir() { fs::remove_all(path); }
  ~TempDir() { fs::remove_all(path); }
};

/// Sets an environment variable for one test and puts the old value back.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(std::string n, const std::string& value) : name(std::move(n)) {
    if (const char* v = std::getenv(name.c_str())) old = v;
    setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old) setenv(name.c_str(), old->c_str(), 1);
    else unsetenv(name.c_str());
  }
};

void touch(const fs::path& p) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << "x";
}

TEST(CudaLibraryDirs, WheelLibFoldersAreFoundInSiteAndDistPackages) {
  TempDir t;
  fs::path site = t.path / "venv/lib/python3.12/site-packages/nvidia";
  fs::create_directories(site / "cu13/lib");
  fs::create_directories(site / "cudnn/lib");
  fs::create_directories(site / "cu13/include");                                   // not a lib folder
  fs::create_directories(t.path / "venv/lib/python3.12/site-packages/torch/lib");  // not NVIDIA's
  fs::create_directories(t.path / "usr/lib/python3/dist-packages/nvidia/cuda_nvrtc/lib");
  std::vector<std::string> dirs =
      nvidia_wheel_library_dirs({(t.path / "venv").string(), (t.path / "usr").string(), (t.path / "none").string()});
  std::vector<std::string> want = {(site / "cu13/lib").string(), (site / "cudnn/lib").string(),
                                   (t.path / "usr/lib/python3/dist-packages/nvidia/cuda_nvrtc/lib").string()};
  EXPECT_EQ(dirs, want);
}

TEST(CudaLibraryDirs, TheEnvironmentsFolderComesFirstAndMissingFoldersAreLeftOut) {
  TempDir t;
  fs::create_directories(t.path / "first");
  fs::create_directories(t.path / "venv/lib/python3.11/site-packages/nvidia/cu13/lib");
  ScopedEnv path_list("PIPEC_CUDA_LIBRARY_PATH", (t.path / "first").string() + ":" + (t.path / "missing").string());
  ScopedEnv venv("VIRTUAL_ENV", (t.path / "venv").string());
  std::vector<std::string> dirs = cuda_library_dirs();
  ASSERT_FALSE(dirs.empty());
  EXPECT_EQ(dirs[0], (t.path / "first").string());
  EXPECT_EQ(std::count(dirs.begin(), dirs.end(), (t.path / "missing").string()), 0);
  EXPECT_EQ(
      std::count(dirs.begin(), dirs.end(), (t.path / "venv/lib/python3.11/site-packages/nvidia/cu13/lib").string()), 1);
}

TEST(CudaLibraryDirs, PythonPrefixesStartWithTheActiveEnvironment) {
  TempDir t;
  touch(t.path / "env/bin/python3");
  fs::permissions(t.path / "env/bin/python3", fs::perms::owner_all);
  ScopedEnv venv("VIRTUAL_ENV", (t.path / "venv").string());
  ScopedEnv path("PATH", (t.path / "env/bin").string() + ":/nonexistent/bin");
  std::vector<std::string> prefixes = python_prefixes();
  ASSERT_GE(prefixes.size(), 2u);
  EXPECT_EQ(prefixes[0], (t.path / "venv").string());
  EXPECT_NE(std::find(prefixes.begin(), prefixes.end(), (t.path / "env").string()), prefixes.end());
  EXPECT_NE(std::find(prefixes.begin(), prefixes.end(), "/usr"), prefixes.end());
}

TEST(CudaLibraryDirs, OnlyExistingFilesAreCandidates) {
  TempDir t;
  touch(t.path / "a/libnvrtc.so.13");
  touch(t.path / "b/libnvrtc.so");
  touch(t.path / "b/libnvrtc.so.13");
  std::vector<std::string> files = existing_library_files(
      {(t.path / "a").string(), (t.path / "b").string(), (t.path / "c").string()}, {"libnvrtc.so", "libnvrtc.so.13"});
  std::vector<std::string> want = {(t.path / "a/libnvrtc.so.13").string(), (t.path / "b/libnvrtc.so").string(),
                                   (t.path / "b/libnvrtc.so.13").string()};
  EXPECT_EQ(files, want);
}

}  // namespace
}  // namespace pipec::gpu
