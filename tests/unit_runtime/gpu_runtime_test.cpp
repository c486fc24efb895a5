// The GPU runtime pieces that work without a GPU: dlopen with clear reasons, NVRTC, the PTX disk cache,
// the buffer pool's size classes. (The device executor itself runs in tests/gpu/run.sh on a GPU.)
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "runtime/gpu/cuda_loader.h"
#include "runtime/gpu/device_buffer_pool.h"
#include "runtime/gpu/nvrtc_loader.h"
#include "runtime/gpu/ptx_cache.h"
#include "runtime/gpu/shared_library.h"

namespace pipec::gpu {
namespace {

namespace fs = std::filesystem;

const char* kKernel =
    "extern \"C\" __global__ void twice(float* x, long long n) {\n"
    "  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) x[i] *= 2.0f;\n"
    "}\n";

const Nvrtc* nvrtc_or_fail() {
  std::string why;
  const Nvrtc* n = Nvrtc::get(&why);
  const char* allow = std::getenv("PIPEC_ALLOW_NO_NVRTC");
  if (!n && !(allow && std::string(allow) == "1"))
    ADD_FAILURE() << "NVRTC is needed for this test and is missing: " << why
                  << "\n(install the CUDA toolkit, or set PIPEC_ALLOW_NO_NVRTC=1 to skip NVRTC checks on purpose)";
  return n;
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("pipec-gpu-test-" + std::to_string(::getpid()) + "-" +
                                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
  TempDir() { fs::remove_all(path); }
  ~TempDir() { fs::remove_all(path); }
};

TEST(SharedLibrary, MissingLibrariesAreListedInTheReason) {
  std::string why;
  SharedLibrary lib = open_first_library({"/nonexistent/libfoo.so.1", "libpipec_no_such_library.so"}, why);
  EXPECT_EQ(lib.handle, nullptr);
  EXPECT_NE(why.find("/nonexistent/libfoo.so.1"), std::string::npos) << why;
  EXPECT_NE(why.find("libpipec_no_such_library.so"), std::string::npos) << why;
}

TEST(CudaDriver, EitherAGpuOrOneSentenceWhyNot) {
  std::string why;
  const CudaDriver* d = cuda_driver(&why);
  if (d) {
    // On a GPU machine: a real device with a compute capability.
    EXPECT_GE(d->arch, 50);
    EXPECT_FALSE(d->device_name.empty());
    EXPECT_NE(d->context, nullptr);
  } else {
    EXPECT_FALSE(why.empty());
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
    // The answer does not change within a process.
    std::string again;
    EXPECT_EQ(cuda_driver(&again), nullptr);
    EXPECT_EQ(again, why);
  }
}

TEST(Nvrtc, CompilesToPtxForSm80AndSm90) {
  const Nvrtc* n = nvrtc_or_fail();
  if (!n) return;
  EXPECT_FALSE(n->version().empty());
  for (int arch : {80, 90}) {
    PtxResult r = n->compile(kKernel, "twice.cu", arch);
    ASSERT_TRUE(r.ok) << r.log;
    EXPECT_NE(r.ptx.find(".target sm_" + std::to_string(arch)), std::string::npos);
    EXPECT_NE(r.ptx.find(".entry twice"), std::string::npos);
  }
}

TEST(Nvrtc, CompileErrorsComeBackWithTheLog) {
  const Nvrtc* n = nvrtc_or_fail();
  if (!n) return;
  PtxResult r = n->compile("__global__ void k() { int x = ; }", "bad.cu", 80);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("bad.cu"), std::string::npos) << r.log;
  EXPECT_TRUE(r.ptx.empty());
}

TEST(PtxCache, SecondCompileComesFromDiskAndArchIsPartOfTheKey) {
  const Nvrtc* n = nvrtc_or_fail();
  if (!n) return;
  TempDir dir;
  CachedPtx first = compile_ptx_cached(*n, kKernel, "twice.cu", 80, {}, dir.path);
  ASSERT_TRUE(first.result.ok) << first.result.log;
  EXPECT_FALSE(first.from_cache);
  EXPECT_GT(first.compile_ms, 0);
  CachedPtx second = compile_ptx_cached(*n, kKernel, "twice.cu", 80, {}, dir.path);
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(second.result.ptx, first.result.ptx);
  CachedPtx other = compile_ptx_cached(*n, kKernel, "twice.cu", 90, {}, dir.path);
  EXPECT_FALSE(other.from_cache);
  EXPECT_NE(other.result.ptx, first.result.ptx);
  EXPECT_NE(ptx_cache_key(kKernel, 80, "13.0", {}), ptx_cache_key(kKernel, 90, "13.0", {}));
  EXPECT_NE(ptx_cache_key(kKernel, 80, "13.0", {}), ptx_cache_key(kKernel, 80, "13.0", {"--fmad=false"}));
  EXPECT_NE(ptx_cache_key(kKernel, 80, "13.0", {}), ptx_cache_key(std::string(kKernel) + " ", 80, "13.0", {}));
  // An empty (broken) entry is compiled again, not used.
  for (auto& e : fs::directory_iterator(dir.path)) std::ofstream(e.path(), std::ios::trunc);
  CachedPtx rebuilt = compile_ptx_cached(*n, kKernel, "twice.cu", 80, {}, dir.path);
  EXPECT_FALSE(rebuilt.from_cache);
  EXPECT_EQ(rebuilt.result.ptx, first.result.ptx);
}

TEST(PtxCache, FailedCompilesAreNotCached) {
  const Nvrtc* n = nvrtc_or_fail();
  if (!n) return;
  TempDir dir;
  CachedPtx r = compile_ptx_cached(*n, "not cuda", "bad.cu", 80, {}, dir.path);
  EXPECT_FALSE(r.result.ok);
  EXPECT_FALSE(fs::exists(dir.path) && !fs::is_empty(dir.path));
}

TEST(DeviceBufferPool, SizeClassesArePowersOfTwo) {
  EXPECT_EQ(pool_size_class(0), 256u);
  EXPECT_EQ(pool_size_class(256), 256u);
  EXPECT_EQ(pool_size_class(257), 512u);
  EXPECT_EQ(pool_size_class(3u << 20), 4u << 20);
}

}  // namespace
}  // namespace pipec::gpu
