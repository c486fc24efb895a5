// The cuBLASLt dense layer of GPU training (runtime/train/gpu/cublaslt_dense.h) against a recording fake
// of cuBLASLt (cuda_library_fakes.h): the transposes, layouts and leading dimensions of each of the three
// matmuls, the epilogue, compute type, the preference (workspace, no in-place split-K, alignment), the
// algorithm cache, the errors; and, since the fake multiplies what its layouts describe, the values
// against the reference executor's dense kernels on random shapes.
#include <random>

#include <gtest/gtest.h>

#include "cuda_library_fakes.h"
#include "runtime/gpu/gpu_error.h"
#include "runtime/train/gpu/cublaslt_dense.h"
#include "runtime/train/ref/ref_kernels.h"

namespace pipec::gpu {
namespace {

using namespace cublaslt;
using testing::FakeAlgo;
using testing::FakeCublasLt;
using testing::FakeLayout;

DevPtr dev(const std::vector<float>& v) { return reinterpret_cast<uintptr_t>(v.data()); }

std::vector<float> random_values(std::mt19937_64& rng, size_t n) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& e : v) e = d(rng);
  return v;
}

void expect_layout(const FakeLayout& l, uint64_t rows, uint64_t cols, int64_t ld, const char* what) {
  EXPECT_EQ(l.type, CUDA_R_32F) << what;
  EXPECT_EQ(l.rows, rows) << what;
  EXPECT_EQ(l.cols, cols) << what;
  EXPECT_EQ(l.ld, ld) << what;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::abs(want[i]))) << what << i;
}

TEST(CublasLtDense, ForwardIsTheTransposedProductWithTheBiasEpilogue) {
  FakeCublasLt f;
  std::mt19937_64 rng(1);
  const DenseShape s{5, 7, 3};
  auto x = random_values(rng, 5 * 7), k = random_values(rng, 7 * 3), b = random_values(rng, 3);
  std::vector<float> y(5 * 3), want(5 * 3);
  ref::dense<float>(5, 7, 3, x.data(), k.data(), b.data(), want.data());
  {
    const auto stream = reinterpret_cast<cuda::CUstream>(uintptr_t(0x5700));
    CublasLtDense dense(f.api(), stream, {});
    dense.forward(s, false, dev(x), dev(k), dev(b), dev(y), {}, "dense_1");
    expect_near(y, want, "y");

    ASSERT_EQ(f.descs.size(), 1u);
    EXPECT_EQ(f.descs[0].compute, CUBLAS_COMPUTE_32F);
    EXPECT_EQ(f.descs[0].scale, CUDA_R_32F);
    ASSERT_EQ(f.matmuls.size(), 1u);
    const auto& m = f.matmuls[0];
    EXPECT_EQ(m.desc_state.trans_a, CUBLAS_OP_N);
    EXPECT_EQ(m.desc_state.trans_b, CUBLAS_OP_N);
    EXPECT_EQ(m.desc_state.epilogue, static_cast<uint32_t>(CUBLASLT_EPILOGUE_BIAS));
    EXPECT_EQ(m.desc_state.bias, dev(b));
    // A = the kernel [in, out] row-major: [out, in] column-major, ld out; B = x: [in, rows], ld in.
    expect_layout(f.layouts[static_cast<size_t>(m.a)], 3, 7, 3, "A");
    expect_layout(f.layouts[static_cast<size_t>(m.b)], 7, 5, 7, "B");
    expect_layout(f.layouts[static_cast<size_t>(m.d)], 3, 5, 3, "D");
    EXPECT_EQ(m.c, m.d);
    EXPECT_EQ(m.a_ptr, dev(k));
    EXPECT_EQ(m.b_ptr, dev(x));
    EXPECT_EQ(m.c_ptr, dev(y));
    EXPECT_EQ(m.d_ptr, dev(y));
    EXPECT_EQ(m.alpha, 1.0f);
    EXPECT_EQ(m.beta, 0.0f);
    EXPECT_EQ(m.stream, stream);
    // The preference: the workspace limit, split-K only with a separate (ordered) reduction, 16-byte
    // pointers.
    ASSERT_EQ(f.preferences.size(), 1u);
    EXPECT_EQ(f.preferences[0].max_workspace, uint64_t(32) << 20);
    EXPECT_EQ(f.preferences[0].reduction_mask,
              uint32_t(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE | CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE));
    for (uint32_t a : f.preferences[0].alignment) EXPECT_EQ(a, 16u);
    EXPECT_TRUE(f.preferences[0].destroyed);

    // The algorithm is cached per shape: a second call asks no heuristic.
    dense.forward(s, false, dev(x), dev(k), dev(b), dev(y), {}, "dense_1");
    EXPECT_EQ(f.heuristic_calls, 1);
    EXPECT_EQ(dense.cached_algorithms(), 1u);
    dense.forward(s, true, dev(x), dev(k), dev(b), dev(y), {}, "dense_1");  // relu: its own
    EXPECT_EQ(f.heuristic_calls, 2);
  }
  EXPECT_EQ(f.live_objects(), 0);
}

TEST(CublasLtDense, ReluForwardUsesTheReluBiasEpilogue) {
  FakeCublasLt f;
  std::mt19937_64 rng(2);
  auto x = random_values(rng, 4 * 6), k = random_values(rng, 6 * 5), b = random_values(rng, 5);
  std::vector<float> y(4 * 5), want(4 * 5);
  ref::dense<float>(4, 6, 5, x.data(), k.data(), b.data(), want.data());
  for (float& v : want) v = std::max(v, 0.0f);
  CublasLtDense dense(f.api(), nullptr, {});
  dense.forward({4, 6, 5}, true, dev(x), dev(k), dev(b), dev(y), {}, "dense");
  EXPECT_EQ(f.matmuls.back().desc_state.epilogue, static_cast<uint32_t>(CUBLASLT_EPILOGUE_RELU_BIAS));
  expect_near(y, want, "relu(y)");
  EXPECT_GT(std::count(y.begin(), y.end(), 0.0f), 0);
}

TEST(CublasLtDense, BackwardInputTransposesTheKernel) {
  FakeCublasLt f;
  std::mt19937_64 rng(3);
  auto dy = random_values(rng, 5 * 3), k = random_values(rng, 7 * 3);
  std::vector<float> dx(5 * 7), want(5 * 7);
  ref::dense_backward_input<float>(5, 7, 3, dy.data(), k.data(), want.data());
  CublasLtDense dense(f.api(), nullptr, {});
  dense.backward_input({5, 7, 3}, dev(dy), dev(k), dev(dx), {}, "dense");
  expect_near(dx, want, "dx");
  const auto& m = f.matmuls.back();
  EXPECT_EQ(m.desc_state.trans_a, CUBLAS_OP_T);
  EXPECT_EQ(m.desc_state.trans_b, CUBLAS_OP_N);
  EXPECT_EQ(m.desc_state.epilogue, static_cast<uint32_t>(CUBLASLT_EPILOGUE_DEFAULT));
  expect_layout(f.layouts[static_cast<size_t>(m.a)], 3, 7, 3, "A (kernel as stored)");
  expect_layout(f.layouts[static_cast<size_t>(m.b)], 3, 5, 3, "B (dy)");
  expect_layout(f.layouts[static_cast<size_t>(m.d)], 7, 5, 7, "D (dx)");
  EXPECT_EQ(m.a_ptr, dev(k));
  EXPECT_EQ(m.b_ptr, dev(dy));
}

TEST(CublasLtDense, BackwardKernelTransposesX) {
  FakeCublasLt f;
  std::mt19937_64 rng(4);
  auto x = random_values(rng, 5 * 7), dy = random_values(rng, 5 * 3);
  std::vector<float> dk(7 * 3, 42.0f), want(7 * 3);
  ref::dense_backward_kernel<float>(5, 7, 3, x.data(), dy.data(), want.data());
  CublasLtDense dense(f.api(), nullptr, {});
  dense.backward_kernel({5, 7, 3}, dev(x), dev(dy), dev(dk), {}, "dense");
  expect_near(dk, want, "dkernel");  // overwritten, not accumulated
  const auto& m = f.matmuls.back();
  EXPECT_EQ(m.desc_state.trans_a, CUBLAS_OP_N);
  EXPECT_EQ(m.desc_state.trans_b, CUBLAS_OP_T);
  expect_layout(f.layouts[static_cast<size_t>(m.a)], 3, 5, 3, "A (dy)");
  expect_layout(f.layouts[static_cast<size_t>(m.b)], 7, 5, 7, "B (x as stored)");
  expect_layout(f.layouts[static_cast<size_t>(m.d)], 3, 7, 3, "D (dkernel)");
  EXPECT_EQ(m.a_ptr, dev(dy));
  EXPECT_EQ(m.b_ptr, dev(x));
}

TEST(CublasLtDense, InPlaceSplitKIsNeverChosen) {
  std::mt19937_64 rng(5);
  auto x = random_values(rng, 8 * 4), dy = random_values(rng, 8 * 2);
  std::vector<float> dk(4 * 2);
  {
    // A library that ignores the mask still gets its in-place algorithm passed over.
    FakeCublasLt f;
    f.ignore_reduction_mask = true;
    f.algos = {FakeAlgo{1, CUBLASLT_REDUCTION_SCHEME_INPLACE, 0, CUBLAS_STATUS_SUCCESS},
               FakeAlgo{2, CUBLASLT_REDUCTION_SCHEME_NONE, 0, CUBLAS_STATUS_NOT_SUPPORTED},
               FakeAlgo{3, CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE, 0, CUBLAS_STATUS_SUCCESS}};
    CublasLtDense dense(f.api(), nullptr, {});
    dense.backward_kernel({8, 4, 2}, dev(x), dev(dy), dev(dk), {}, "dense");
    EXPECT_EQ(f.matmuls.back().algo, 3);
  }
  {
    FakeCublasLt f;
    f.ignore_reduction_mask = true;
    f.algos = {FakeAlgo{1, CUBLASLT_REDUCTION_SCHEME_INPLACE, 0, CUBLAS_STATUS_SUCCESS}};
    CublasLtDense dense(f.api(), nullptr, {});
    try {
      dense.backward_kernel({8, 4, 2}, dev(x), dev(dy), dev(dk), {}, "dense_9");
      FAIL() << "no error";
    } catch (const GpuError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("no deterministic algorithm for dense backward_kernel of layer `dense_9`"), std::string::npos)
          << m;
      EXPECT_NE(m.find("1 reduce split-K in place"), std::string::npos) << m;
    }
    EXPECT_TRUE(f.matmuls.empty());
  }
}

TEST(CublasLtDense, Tf32OnlyWhenAllowedOrExactAnd16BitStorageComputesInF32) {
  {
    FakeCublasLt f;
    LibraryCallOptions o;
    o.allow_tf32 = true;
    CublasLtDense dense(f.api(), nullptr, o);
    dense.workspace_bytes(DenseCall::Forward, {2, 3, 4}, "d");
    EXPECT_EQ(f.descs.back().compute, CUBLAS_COMPUTE_32F_FAST_TF32);
  }
  for (bool sixteen_bit : {false, true}) {  // f32 storage of bf16 or fp16 values: exact in TF32
    FakeCublasLt f;
    LibraryCallOptions o;
    o.tf32_exact_operands = sixteen_bit;
    CublasLtDense dense(f.api(), nullptr, o);
    dense.workspace_bytes(DenseCall::BackwardKernel, {2, 3, 4}, "d");
    EXPECT_EQ(f.descs.back().compute, sixteen_bit ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
  }
  {
    FakeCublasLt f;
    LibraryCallOptions o;
    o.dtype = GpuDType::BF16;
    o.allow_tf32 = true;  // meaningless for bf16 data: products are still summed in f32
    CublasLtDense dense(f.api(), nullptr, o);
    dense.workspace_bytes(DenseCall::BackwardInput, {2, 3, 4}, "d");
    EXPECT_EQ(f.descs.back().compute, CUBLAS_COMPUTE_32F);
    EXPECT_EQ(f.descs.back().scale, CUDA_R_32F);
    for (const FakeLayout& l : f.layouts) EXPECT_EQ(l.type, CUDA_R_16BF);
  }
}

TEST(CublasLtDense, WorkspaceAlignmentAndFailuresAreClearErrors) {
  FakeCublasLt f;
  f.algos = {FakeAlgo{4, CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE, 1 << 20, CUBLAS_STATUS_SUCCESS}};
  std::mt19937_64 rng(6);
  auto x = random_values(rng, 5 * 7), k = random_values(rng, 7 * 3), b = random_values(rng, 3);
  std::vector<float> y(5 * 3), ws((1 << 20) / 4);
  CublasLtDense dense(f.api(), nullptr, {});
  EXPECT_EQ(dense.workspace_bytes(DenseCall::Forward, {5, 7, 3}, "dense_2"), size_t(1) << 20);
  EXPECT_THROW(dense.forward({5, 7, 3}, false, dev(x), dev(k), dev(b), dev(y), {}, "dense_2"), GpuError);
  EXPECT_THROW(dense.forward({5, 7, 3}, false, dev(x) + 4, dev(k), dev(b), dev(y), {dev(ws), 1 << 20}, "dense_2"),
               GpuError);
  EXPECT_THROW(dense.forward({5, 7, 3}, false, dev(x), dev(k), 0, dev(y), {dev(ws), 1 << 20}, "dense_2"), GpuError);
  dense.forward({5, 7, 3}, false, dev(x), dev(k), dev(b), dev(y), {dev(ws), 1 << 20}, "dense_2");
  EXPECT_EQ(f.matmuls.back().workspace, dev(ws));
  EXPECT_EQ(f.matmuls.back().workspace_bytes, size_t(1) << 20);

  f.fail["cublasLtMatmul"] = CUBLAS_STATUS_NOT_SUPPORTED;
  try {
    dense.forward({5, 7, 3}, false, dev(x), dev(k), dev(b), dev(y), {dev(ws), 1 << 20}, "dense_2");
    FAIL() << "no error";
  } catch (const GpuError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("cublasLtMatmul failed with CUBLAS_STATUS_NOT_SUPPORTED (the functionality requested is not "
                     "supported) in dense forward of layer `dense_2` (rows 5, in 7, out 3, f32)"),
              std::string::npos)
        << m;
  }
  EXPECT_THROW(dense.workspace_bytes(DenseCall::Forward, {0, 7, 3}, "dense_2"), GpuError);
  f.fail.clear();
  f.fail["cublasLtCreate"] = CUBLAS_STATUS_NOT_SUPPORTED;
  EXPECT_THROW(CublasLtDense(f.api(), nullptr, {}), GpuError);
}

TEST(CublasLtDense, RandomShapesMatchTheReference) {
  std::mt19937_64 rng(20261126);
  for (int trial = 0; trial < 40; ++trial) {
    auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
    const int64_t rows = pick(1, 9), in = pick(1, 12), out = pick(1, 12);
    const bool relu = trial % 2 == 0;
    auto x = random_values(rng, rows * in), k = random_values(rng, in * out), b = random_values(rng, out),
         dy = random_values(rng, rows * out);
    std::vector<float> y(rows * out), dx(rows * in), dk(in * out);
    std::vector<float> want_y(rows * out), want_dx(rows * in), want_dk(in * out);
    ref::dense<float>(rows, in, out, x.data(), k.data(), b.data(), want_y.data());
    if (relu)
      for (float& v : want_y) v = std::max(v, 0.0f);
    ref::dense_backward_input<float>(rows, in, out, dy.data(), k.data(), want_dx.data());
    ref::dense_backward_kernel<float>(rows, in, out, x.data(), dy.data(), want_dk.data());
    FakeCublasLt f;
    CublasLtDense dense(f.api(), nullptr, {});
    const DenseShape s{rows, in, out};
    dense.forward(s, relu, dev(x), dev(k), dev(b), dev(y), {}, "dense");
    dense.backward_input(s, dev(dy), dev(k), dev(dx), {}, "dense");
    dense.backward_kernel(s, dev(x), dev(dy), dev(dk), {}, "dense");
    expect_near(y, want_y, "y");
    expect_near(dx, want_dx, "dx");
    expect_near(dk, want_dk, "dk");
  }
}

}  // namespace
}  // namespace pipec::gpu
