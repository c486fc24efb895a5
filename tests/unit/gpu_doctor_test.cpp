// `pipec doctor`: exits 0 with or without a GPU, names the driver, the GPUs and each library (libcuda,
// NVRTC, cuDNN, cuBLASLt, NCCL) found or missing; a library pointed at a missing file (or at one that is
// not it) is missing with why and what runs instead, in text and in --json.
#include <cstdlib>
#include <filesystem>
#include <optional>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_util.h"

namespace pipec {
namespace {

using testing::run_pipec;

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

const char* kLibraries[] = {"libcuda", "NVRTC", "cuDNN", "cuBLASLt", "NCCL"};

TEST(Doctor, ExitsZeroAndNamesTheDriverGpusAndEveryLibrary) {
  auto r = run_pipec({"doctor"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* section : {"driver\n", "gpus\n", "libraries\n"})
    EXPECT_NE(r.out.find(section), std::string::npos) << section << "\n" << r.out;
  for (const char* lib : kLibraries) EXPECT_NE(r.out.find(std::string("  ") + lib), std::string::npos) << lib;
  // Either a GPU is listed or it says why there is none.
  EXPECT_TRUE(r.out.find("compute capability") != std::string::npos || r.out.find("  none: ") != std::string::npos)
      << r.out;
  EXPECT_TRUE(r.out.find("GPU path usable") != std::string::npos ||
              r.out.find("GPU path not usable here") != std::string::npos)
      << r.out;
}

TEST(Doctor, EachMissingLibrarySaysWhyAndWhatRunsInstead) {
  ScopedEnv cuda("PIPEC_CUDA_LIBRARY", "/nonexistent/libcuda.so.1");
  ScopedEnv nvrtc("PIPEC_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so.13");
  ScopedEnv cudnn("PIPEC_CUDNN_LIBRARY", "/nonexistent/libcudnn.so.9");
  ScopedEnv lt("PIPEC_CUBLASLT_LIBRARY", "/nonexistent/libcublasLt.so.13");
  ScopedEnv nccl("PIPEC_NCCL_LIBRARY", "/nonexistent/libnccl.so.2");
  auto r = run_pipec({"doctor"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* path : {"/nonexistent/libcuda.so.1", "/nonexistent/libnvrtc.so.13", "/nonexistent/libcudnn.so.9",
                           "/nonexistent/libcublasLt.so.13", "/nonexistent/libnccl.so.2"})
    EXPECT_NE(r.out.find(path), std::string::npos) << path << "\n" << r.out;
  EXPECT_NE(r.out.find("cuDNN     missing: cuDNN 9 (libcudnn.so.9"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no cuDNN: conv2d and conv2d_transpose train with pipec's own CUDA kernels, slower"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("no cuBLASLt: dense layers train with pipec's own CUDA kernels, slower"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("no NCCL: no all-reduce between GPUs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no NVRTC: no CUDA kernel can be compiled"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no libcuda: no GPU is used"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  none: no CUDA driver"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GPU path not usable here"), std::string::npos) << r.out;
}

TEST(Doctor, ALibraryThatIsNotTheOneNamedLacksItsFunctions) {
  // zlib is there on every machine that built pipec, and has no cuDNN in it.
  ScopedEnv cudnn("PIPEC_CUDNN_LIBRARY", "libz.so.1");
  auto r = run_pipec({"doctor"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("libz.so.1 lacks cuDNN functions pipec needs (cudnnGetVersion, cudnnGetErrorString"),
            std::string::npos)
      << r.out;
}

TEST(Doctor, JsonHasTheSameFacts) {
  ScopedEnv cudnn("PIPEC_CUDNN_LIBRARY", "/nonexistent/libcudnn.so.9");
  auto r = run_pipec({"doctor", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j["driver"].is_object());
  ASSERT_TRUE(j["driver"]["found"].is_boolean());
  ASSERT_TRUE(j["gpus"].is_array());
  ASSERT_EQ(j["libraries"].size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    const auto& lib = j["libraries"][i];
    EXPECT_EQ(lib["name"], kLibraries[i]);
    if (lib["found"].get<bool>()) {
      EXPECT_FALSE(lib["path"].get<std::string>().empty());
      EXPECT_FALSE(lib["version"].get<std::string>().empty());
    } else {
      EXPECT_FALSE(lib["why"].get<std::string>().empty());
      EXPECT_FALSE(lib["disables"].get<std::string>().empty());
    }
  }
  EXPECT_FALSE(j["libraries"][2]["found"].get<bool>());
  EXPECT_NE(j["libraries"][2]["why"].get<std::string>().find("/nonexistent/libcudnn.so.9"), std::string::npos);
}

// Where the toolkit is installed (this machine kind and CI have /usr/local/cuda), the libraries it holds
// are found there with their versions; elsewhere they are missing with a reason.
TEST(Doctor, TheToolkitsLibrariesAreFoundWithTheirVersions) {
  auto r = run_pipec({"doctor", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  struct Expect {
    const char* name;
    const char* file;
    const char* version_prefix;
  };
  for (const Expect& e : {Expect{"cuDNN", "/usr/local/cuda/lib64/libcudnn.so.9", "9."},
                          Expect{"NCCL", "/usr/local/cuda/lib64/libnccl.so.2", "2."}}) {
    const nlohmann::json* lib = nullptr;
    for (const auto& l : j["libraries"])
      if (l["name"] == e.name) lib = &l;
    ASSERT_NE(lib, nullptr) << e.name;
    if (std::filesystem::exists(e.file)) {
      ASSERT_TRUE((*lib)["found"].get<bool>()) << e.name << ": " << (*lib).dump();
      EXPECT_EQ((*lib)["version"].get<std::string>().rfind(e.version_prefix, 0), 0u) << (*lib).dump();
    } else if (!(*lib)["found"].get<bool>()) {
      EXPECT_NE((*lib)["why"].get<std::string>().find("not installed"), std::string::npos) << (*lib).dump();
    }
  }
}

TEST(Doctor, RejectsOperands) {
  auto r = run_pipec({"doctor", "extra"});
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace pipec
