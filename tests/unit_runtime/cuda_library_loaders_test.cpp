// The cuDNN, cuBLASLt and NCCL loaders (runtime/gpu/*_loader.h) and what `pipec doctor` gathers
// (gpu_inventory.h): the version strings, and, where the toolkit is installed, each library opened with
// every function of its table and a version it accepts. The missing-library paths run in
// tests/unit/gpu_doctor_test.cpp (each loader opens once per process, so they need a process of their own).
#include <filesystem>

#include <gtest/gtest.h>

#include "runtime/gpu/cublaslt_loader.h"
#include "runtime/gpu/cudnn_loader.h"
#include "runtime/gpu/gpu_inventory.h"
#include "runtime/gpu/nccl_loader.h"
#include "runtime/gpu/shared_library.h"

namespace pipec::gpu {
namespace {

TEST(CudaLibraryVersions, AreSpelledAsTheirProjectsSpellThem) {
  EXPECT_EQ(cudnn_version_string(91900), "9.19.0");
  EXPECT_EQ(cudnn_version_string(90105), "9.1.5");
  EXPECT_EQ(nccl_version_string(22809), "2.28.9");
  EXPECT_EQ(nccl_version_string(2708), "2.7.8");  // before 2.9 the code was major * 1000 + minor * 100 + patch
  EXPECT_EQ(cuda_version_string(13000), "13.0");
  EXPECT_EQ(cuda_version_string(12080), "12.8");
  EXPECT_EQ(kernel_module_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Tue Sep 30 2025\n"
                                  "GCC version:  gcc version 12.2.0\n"),
            "580.95.05");
  EXPECT_EQ(kernel_module_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  "
                                  "(dvs-builder@U22-I3-AF03-09-1)  Tue Sep 23 09:51:53 UTC 2025\n"),
            "580.95.05");
  EXPECT_EQ(kernel_module_version(""), "");
}

TEST(CudaLibraryLoaders, ResolveSymbolNamesEveryMissingFunction) {
  std::string why;
  SharedLibrary libc = open_first_library({"libc.so.6"}, why);
  ASSERT_NE(libc.handle, nullptr) << why;
  void (*slot)() = nullptr;
  std::string missing;
  resolve_symbol(libc, slot, "pipec_no_such_function_a", missing);
  resolve_symbol(libc, slot, "pipec_no_such_function_b", missing);
  EXPECT_EQ(missing, "pipec_no_such_function_a, pipec_no_such_function_b");
  size_t (*strlen_slot)(const char*) = nullptr;
  resolve_symbol(libc, strlen_slot, "strlen", missing);
  ASSERT_NE(strlen_slot, nullptr);
  EXPECT_EQ(strlen_slot("four"), 4u);
}

TEST(CudaLibraryLoaders, ABareNameIsReportedAsTheFileTheLoaderMapped) {
  std::string why;
  SharedLibrary libc = open_first_library({"libc.so.6"}, why);
  ASSERT_NE(libc.handle, nullptr) << why;
  EXPECT_EQ(libc.path, "libc.so.6");
  EXPECT_EQ(libc.file.front(), '/') << libc.file;
  EXPECT_TRUE(std::filesystem::exists(libc.file)) << libc.file;
}

template <class Api>
int null_functions(const Api& api) {
  int n = 0;
  const auto* p = reinterpret_cast<void* const*>(&api);
  for (size_t i = 0; i < sizeof(Api) / sizeof(void*); ++i) n += p[i] == nullptr;
  return n;
}

// The toolkit of this machine kind (and CI's) has all three; a machine without them gets the reason.
TEST(CudaLibraryLoaders, OpenTheToolkitsLibrariesOrSayWhyNot) {
  std::string why;
  if (const CudnnLibrary* l = cudnn_library(&why)) {
    EXPECT_EQ(null_functions(l->api), 0);
    EXPECT_EQ(l->version / 10000, 9u);
    EXPECT_FALSE(l->path.empty());
  } else {
    EXPECT_FALSE(std::filesystem::exists("/usr/local/cuda/lib64/libcudnn.so.9")) << why;
    EXPECT_NE(why.find("cuDNN"), std::string::npos) << why;
  }
  if (const CublasLtLibrary* l = cublaslt_library(&why)) {
    EXPECT_EQ(null_functions(l->api), 0);
    EXPECT_GE(l->version / 10000, 11u);
  } else {
    EXPECT_FALSE(std::filesystem::exists("/usr/local/cuda/lib64/libcublasLt.so.13")) << why;
    EXPECT_NE(why.find("cuBLASLt"), std::string::npos) << why;
  }
  if (const NcclLibrary* l = nccl_library(&why)) {
    EXPECT_EQ(null_functions(l->api), 0);
    EXPECT_EQ(l->version_string().substr(0, 2), "2.");
  } else {
    EXPECT_FALSE(std::filesystem::exists("/usr/local/cuda/lib64/libnccl.so.2")) << why;
    EXPECT_NE(why.find("NCCL"), std::string::npos) << why;
  }
}

TEST(GpuInventory, ListsTheFiveLibrariesInOrder) {
  GpuInventory inv = gpu_inventory();
  ASSERT_EQ(inv.libraries.size(), 5u);
  const char* names[] = {"libcuda", "NVRTC", "cuDNN", "cuBLASLt", "NCCL"};
  for (size_t i = 0; i < 5; ++i) {
    const GpuLibraryInfo& l = inv.libraries[i];
    EXPECT_EQ(l.name, names[i]);
    if (l.found) {
      EXPECT_FALSE(l.path.empty()) << l.name;
    } else {
      EXPECT_FALSE(l.why.empty()) << l.name;
      EXPECT_FALSE(l.disables.empty()) << l.name;
    }
  }
  EXPECT_EQ(inv.libraries[0].found, inv.driver_found);
  if (!inv.driver_found) {
    EXPECT_TRUE(inv.devices.empty());
  }
}

}  // namespace
}  // namespace pipec::gpu
