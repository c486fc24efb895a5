// The cuDNN convolutions of GPU training (runtime/train/gpu/cudnn_conv.h) against a recording fake of
// cuDNN's backend API (cuda_library_fakes.h): the descriptors and attributes each call builds, the
// engine filter (never NONDETERMINISTIC, never TF32 for f32 unless allowed), the plan cache, the errors;
// and, since the fake computes the convolution its descriptors describe, every conv node kind of the
// step graph against the reference executor's kernels on random geometries.
#include <random>

#include <gtest/gtest.h>

#include "cuda_library_fakes.h"
#include "runtime/gpu/gpu_error.h"
#include "runtime/train/gpu/cudnn_conv.h"
#include "runtime/train/ref/ref_kernels.h"

namespace pipec::gpu {
namespace {

using namespace cudnn;
using testing::FakeAttribute;
using testing::FakeCudnn;
using testing::FakeEngine;

DevPtr dev(const std::vector<float>& v) { return reinterpret_cast<uintptr_t>(v.data()); }

// x [2, 6, 5, 3] -> y [2, 3, 3, 4] by a 3x3 window, stride 2, `same`: 6 rows pad 0 above and 1 below
// (the odd one at the end), 5 columns 1 and 1.
ConvGeometry odd_same() { return tensorflow_conv_geometry(2, {6, 5, 3}, {3, 3, 4}, 3, 3, 2, 2, 1, 1, /*same=*/true); }

const FakeAttribute& attr(FakeCudnn& f, int64_t desc, int32_t a) {
  auto& attrs = f.descriptor(desc).attrs;
  auto it = attrs.find(a);
  if (it == attrs.end()) throw std::runtime_error("attribute not set");
  return it->second;
}

TEST(CudnnConvGeometry, TensorflowSamePadsTheOddOneAtTheEnd) {
  ConvGeometry g = odd_same();
  EXPECT_EQ(g.pad_top, 0);
  EXPECT_EQ(g.pad_bottom, 1);
  EXPECT_EQ(g.pad_left, 1);
  EXPECT_EQ(g.pad_right, 1);
  EXPECT_NO_THROW(g.validate());
  // An even window at stride 1: 1 before, 2 after... for a 4-wide window (3 in total).
  ConvGeometry e = tensorflow_conv_geometry(1, {7, 7, 1}, {7, 7, 1}, 4, 4, 1, 1, 1, 1, true);
  EXPECT_EQ(e.pad_top, 1);
  EXPECT_EQ(e.pad_bottom, 2);
  ConvGeometry v = tensorflow_conv_geometry(1, {7, 8, 1}, {3, 3, 2}, 3, 3, 2, 2, 1, 1, false);
  EXPECT_EQ(v.pad_top + v.pad_bottom + v.pad_left + v.pad_right, 0);
  EXPECT_NO_THROW(v.validate());
  ConvGeometry bad = v;
  bad.p = 4;
  EXPECT_THROW(bad.validate(), GpuError);
}

TEST(CudnnConv, ForwardBuildsNhwcTensorsKrscFilterAndAsymmetricPadding) {
  FakeCudnn f;
  ConvGeometry g = odd_same();
  std::vector<float> x(2 * 6 * 5 * 3, 1.0f), w(4 * 3 * 3 * 3, 0.5f), y(2 * 3 * 3 * 4, -7.0f);
  {
    CudnnConv conv(f.api(), reinterpret_cast<cuda::CUstream>(uintptr_t(0x5700)), {});
    EXPECT_EQ(f.stream, reinterpret_cast<cuda::CUstream>(uintptr_t(0x5700)));
    conv.forward(g, dev(x), dev(w), dev(y), {}, "conv2d_1");

    auto tensors = f.of_type(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    ASSERT_GE(tensors.size(), 3u);
    // x: dims [n, c, h, w] stored NHWC.
    EXPECT_EQ(attr(f, tensors[0], CUDNN_ATTR_TENSOR_DIMENSIONS).ints, (std::vector<int64_t>{2, 3, 6, 5}));
    EXPECT_EQ(attr(f, tensors[0], CUDNN_ATTR_TENSOR_STRIDES).ints, (std::vector<int64_t>{90, 1, 15, 3}));
    // filter: dims [k, c, r, s] stored KRSC.
    EXPECT_EQ(attr(f, tensors[1], CUDNN_ATTR_TENSOR_DIMENSIONS).ints, (std::vector<int64_t>{4, 3, 3, 3}));
    EXPECT_EQ(attr(f, tensors[1], CUDNN_ATTR_TENSOR_STRIDES).ints, (std::vector<int64_t>{27, 1, 9, 3}));
    // y: dims [n, k, p, q] stored NHWC.
    EXPECT_EQ(attr(f, tensors[2], CUDNN_ATTR_TENSOR_DIMENSIONS).ints, (std::vector<int64_t>{2, 4, 3, 3}));
    EXPECT_EQ(attr(f, tensors[2], CUDNN_ATTR_TENSOR_STRIDES).ints, (std::vector<int64_t>{36, 1, 12, 4}));
    for (int64_t t : {tensors[0], tensors[1], tensors[2]}) {
      EXPECT_EQ(attr(f, t, CUDNN_ATTR_TENSOR_DATA_TYPE).ints, (std::vector<int64_t>{CUDNN_DATA_FLOAT}));
      EXPECT_EQ(attr(f, t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT).ints, (std::vector<int64_t>{16}));
    }
    auto convs = f.of_type(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    ASSERT_EQ(convs.size(), 1u);
    EXPECT_EQ(attr(f, convs[0], CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS).ints, (std::vector<int64_t>{0, 1}));
    EXPECT_EQ(attr(f, convs[0], CUDNN_ATTR_CONVOLUTION_POST_PADDINGS).ints, (std::vector<int64_t>{1, 1}));
    EXPECT_EQ(attr(f, convs[0], CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES).ints, (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(attr(f, convs[0], CUDNN_ATTR_CONVOLUTION_DILATIONS).ints, (std::vector<int64_t>{1, 1}));
    EXPECT_EQ(attr(f, convs[0], CUDNN_ATTR_CONVOLUTION_CONV_MODE).ints,
              (std::vector<int64_t>{CUDNN_CROSS_CORRELATION}));
    EXPECT_EQ(attr(f, convs[0], CUDNN_ATTR_CONVOLUTION_COMP_TYPE).ints, (std::vector<int64_t>{CUDNN_DATA_FLOAT}));
    EXPECT_EQ(attr(f, convs[0], CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS).ints, (std::vector<int64_t>{2}));

    auto ops = f.of_type(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    ASSERT_EQ(ops.size(), 1u);
    EXPECT_EQ(attr(f, ops[0], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X).descriptors,
              (std::vector<int64_t>{tensors[0]}));
    EXPECT_EQ(attr(f, ops[0], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W).descriptors,
              (std::vector<int64_t>{tensors[1]}));
    EXPECT_EQ(attr(f, ops[0], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y).descriptors,
              (std::vector<int64_t>{tensors[2]}));
    EXPECT_EQ(attr(f, ops[0], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA).floats, (std::vector<double>{1.0}));
    EXPECT_EQ(attr(f, ops[0], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA).floats, (std::vector<double>{0.0}));
    EXPECT_EQ(attr(f, ops[0], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA).type, CUDNN_TYPE_FLOAT);

    // Heuristics mode A was asked first, and its engine 7 runs.
    auto heurs = f.of_type(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    ASSERT_EQ(heurs.size(), 1u);
    EXPECT_EQ(attr(f, heurs[0], CUDNN_ATTR_ENGINEHEUR_MODE).ints, (std::vector<int64_t>{CUDNN_HEUR_MODE_A}));
    EXPECT_EQ(conv.engine_of(ConvKind::Forward, g), 7);
    auto plans = f.of_type(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    ASSERT_EQ(plans.size(), 1u);
    EXPECT_EQ(attr(f, plans[0], CUDNN_ATTR_EXECUTION_PLAN_HANDLE).type, CUDNN_TYPE_HANDLE);

    // The variant pack: the three pointers by their unique ids.
    auto exec = f.calls_of("cudnnBackendExecute");
    ASSERT_EQ(exec.size(), 1u);
    EXPECT_EQ(exec[0]->desc, plans[0]);
    EXPECT_EQ(exec[0]->attr.pointers, (std::vector<uint64_t>{dev(x), dev(w), dev(y)}));
    // The fake ran it: every output is a sum of 0.5s over the window's taps inside the image.
    // y[0, 0, 0, :] reads rows 0..2 (no padding above) and columns 0..1 (column -1 is padding) of 3 channels.
    EXPECT_FLOAT_EQ(y[0], 0.5f * 3 * 3 * 2);
    // The second call reuses the plan: no new heuristic, one more variant pack.
    size_t descriptors = f.descriptors.size();
    conv.forward(g, dev(x), dev(w), dev(y), {}, "conv2d_1");
    EXPECT_EQ(f.of_type(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR).size(), 1u);
    EXPECT_EQ(f.descriptors.size(), descriptors + 1);
    EXPECT_EQ(f.of_type(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR).size(), 2u);
    EXPECT_EQ(conv.cached_plans(), 1u);
    // Only the plan and what it needs outlive a call.
    EXPECT_EQ(f.live_descriptors(), 8);  // 3 tensors, convolution, operation, graph, engine config, plan
  }
  EXPECT_EQ(f.live_descriptors(), 0);
  EXPECT_FALSE(f.handle_live);
}

TEST(CudnnConv, NondeterministicAndTf32EnginesAreNeverChosenForF32) {
  FakeCudnn f;
  f.mode_a = {
      FakeEngine{1, {CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC}, true, 0},
      FakeEngine{2, {CUDNN_NUMERICAL_NOTE_TENSOR_CORE}, true, 0},
      FakeEngine{3, {CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS, CUDNN_NUMERICAL_NOTE_TENSOR_CORE}, true, 0},
      FakeEngine{4, {CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION}, true, 0},
      FakeEngine{5, {}, /*builds=*/false, 0},
      FakeEngine{6, {5 /* WINOGRAD */}, true, 256},
  };
  ConvGeometry g = odd_same();
  {
    CudnnConv conv(f.api(), nullptr, {});
    EXPECT_EQ(conv.workspace_bytes(ConvKind::BackwardFilter, g, "c"), 256u);
    EXPECT_EQ(conv.engine_of(ConvKind::BackwardFilter, g), 6);
    // Plans were tried only on engines 5 (failed to build) and 6.
    EXPECT_EQ(f.of_type(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR).size(), 2u);
  }
  {
    LibraryCallOptions tf32;
    tf32.allow_tf32 = true;
    CudnnConv conv(f.api(), nullptr, tf32);
    conv.workspace_bytes(ConvKind::Forward, g, "c");
    EXPECT_EQ(conv.engine_of(ConvKind::Forward, g), 2);  // TF32 allowed; nondeterminism never
  }
  {
    LibraryCallOptions bf16;
    bf16.dtype = GpuDType::BF16;
    CudnnConv conv(f.api(), nullptr, bf16);
    conv.workspace_bytes(ConvKind::BackwardData, g, "c");
    EXPECT_EQ(conv.engine_of(ConvKind::BackwardData, g), 2);  // tensor cores are the point of 16-bit data
    auto tensors = f.of_type(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    EXPECT_EQ(attr(f, tensors.back(), CUDNN_ATTR_TENSOR_DATA_TYPE).ints, (std::vector<int64_t>{CUDNN_DATA_BFLOAT16}));
    auto convs = f.of_type(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    EXPECT_EQ(attr(f, convs.back(), CUDNN_ATTR_CONVOLUTION_COMP_TYPE).ints, (std::vector<int64_t>{CUDNN_DATA_FLOAT}));
  }
  EXPECT_EQ(f.live_descriptors(), 0);
}

// 16-bit operands in f32 storage (mixed precision's rounded values) take TF32 tensor cores as
// --allow-tf32 does; an engine that down-converts f32 inputs (to fp16) is never taken for f32 data, with
// either setting.
TEST(CudnnConv, SixteenBitOperandsTakeTensorCoresButNeverDownConvertingEngines) {
  FakeCudnn f;
  f.mode_a = {
      FakeEngine{3, {CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS, CUDNN_NUMERICAL_NOTE_TENSOR_CORE}, true, 0},
      FakeEngine{2, {CUDNN_NUMERICAL_NOTE_TENSOR_CORE}, true, 0},
      FakeEngine{9, {}, true, 0},
  };
  const ConvGeometry g = odd_same();
  LibraryCallOptions exact, tf32;
  exact.tf32_exact_operands = true;
  tf32.allow_tf32 = true;
  for (const auto& [options, want] : {std::pair{LibraryCallOptions{}, 9}, std::pair{exact, 2}, std::pair{tf32, 2}}) {
    CudnnConv conv(f.api(), nullptr, options);
    conv.workspace_bytes(ConvKind::Forward, g, "c");
    EXPECT_EQ(conv.engine_of(ConvKind::Forward, g), want)
        << "tf32_exact_operands " << options.tf32_exact_operands << ", allow_tf32 " << options.allow_tf32;
  }
  EXPECT_EQ(f.live_descriptors(), 0);
}

TEST(CudnnConv, FallsBackToTheFallbackListWhenModeAHasNothingUsable) {
  FakeCudnn f;
  f.mode_a = {FakeEngine{1, {CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC}, true, 0}};
  f.fallback = {FakeEngine{40, {CUDNN_NUMERICAL_NOTE_TENSOR_CORE}, true, 0}, FakeEngine{41, {}, true, 0}};
  CudnnConv conv(f.api(), nullptr, {});
  ConvGeometry g = odd_same();
  conv.workspace_bytes(ConvKind::Forward, g, "c");
  EXPECT_EQ(conv.engine_of(ConvKind::Forward, g), 41);
  std::vector<int64_t> modes;
  for (const auto* c : f.calls_of("cudnnBackendFinalize"))
    if (f.descriptor(c->desc).type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR) modes.push_back(c->value);
  EXPECT_EQ(modes, (std::vector<int64_t>{CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}));
}

TEST(CudnnConv, ModeAFailingGoesOnToTheFallbackList) {
  FakeCudnn f;
  f.fail["heuristics mode 3"] = CUDNN_STATUS_NOT_SUPPORTED;
  f.fallback = {FakeEngine{12, {}, true, 0}};
  CudnnConv conv(f.api(), nullptr, {});
  conv.workspace_bytes(ConvKind::Forward, odd_same(), "c");
  EXPECT_EQ(conv.engine_of(ConvKind::Forward, odd_same()), 12);
}

TEST(CudnnConv, NoUsableEngineIsAnErrorSayingWhy) {
  FakeCudnn f;
  f.mode_a = {FakeEngine{1, {CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC}, true, 0},
              FakeEngine{2, {CUDNN_NUMERICAL_NOTE_TENSOR_CORE}, true, 0}};
  f.fallback = {FakeEngine{3, {}, false, 0}};
  CudnnConv conv(f.api(), nullptr, {});
  try {
    conv.workspace_bytes(ConvKind::BackwardData, odd_same(), "conv2d_7");
    FAIL() << "no error";
  } catch (const GpuError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("no usable engine"), std::string::npos) << m;
    EXPECT_NE(m.find("conv backward_data of layer `conv2d_7`"), std::string::npos) << m;
    EXPECT_NE(m.find("x [2, 6, 5, 3]"), std::string::npos) << m;
    EXPECT_NE(m.find("offered 3; 1 nondeterministic, 1 TF32"), std::string::npos) << m;
    EXPECT_NE(m.find("1 failed to build"), std::string::npos) << m;
  }
  EXPECT_EQ(conv.cached_plans(), 0u);
  EXPECT_EQ(f.live_descriptors(), 0);
}

TEST(CudnnConv, AFailingCallIsAnErrorNamingTheCallTheLayerAndItsShapes) {
  FakeCudnn f;
  f.fail["cudnnBackendFinalize:OPERATION_CONVOLUTION_FORWARD"] = CUDNN_STATUS_BAD_PARAM;
  std::vector<float> x(2 * 6 * 5 * 3), w(4 * 3 * 3 * 3), y(2 * 3 * 3 * 4);
  {
    CudnnConv conv(f.api(), nullptr, {});
    try {
      conv.forward(odd_same(), dev(x), dev(w), dev(y), {}, "conv2d_3");
      FAIL() << "no error";
    } catch (const GpuError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("cudnnBackendFinalize(OPERATION_CONVOLUTION_FORWARD) failed with CUDNN_STATUS_BAD_PARAM"),
                std::string::npos)
          << m;
      EXPECT_NE(m.find("fake failure injected"), std::string::npos) << m;  // cuDNN's own last message
      EXPECT_NE(m.find("layer `conv2d_3`"), std::string::npos) << m;
      EXPECT_NE(m.find("x [2, 6, 5, 3], filter KRSC [4, 3, 3, 3], y [2, 3, 3, 4], stride 2x2"), std::string::npos) << m;
      EXPECT_NE(m.find("pad top 0 bottom 1 left 1 right 1"), std::string::npos) << m;
    }
    EXPECT_EQ(f.live_descriptors(), 0);  // nothing of the failed plan stays
    f.fail.clear();
    f.fail["cudnnBackendExecute"] = CUDNN_STATUS_NOT_SUPPORTED;
    try {
      conv.forward(odd_same(), dev(x), dev(w), dev(y), {}, "conv2d_3");
      FAIL() << "no error";
    } catch (const GpuError& e) {
      EXPECT_NE(std::string(e.what()).find("cudnnBackendExecute failed with CUDNN_STATUS_NOT_SUPPORTED"),
                std::string::npos)
          << e.what();
    }
  }
  f.fail.clear();
  f.fail["cudnnCreate"] = CUDNN_STATUS_NOT_SUPPORTED;
  EXPECT_THROW(CudnnConv(f.api(), nullptr, {}), GpuError);
}

TEST(CudnnConv, WorkspaceAndAlignmentAreChecked) {
  FakeCudnn f;
  f.mode_a = {FakeEngine{9, {}, true, 4096}};
  ConvGeometry g = odd_same();
  alignas(64) static float x[2 * 6 * 5 * 3 + 1], w[4 * 3 * 3 * 3], y[2 * 3 * 3 * 4];
  alignas(64) static unsigned char ws[4096];
  auto p = [](const void* v) { return static_cast<DevPtr>(reinterpret_cast<uintptr_t>(v)); };
  CudnnConv conv(f.api(), nullptr, {});
  EXPECT_EQ(conv.workspace_bytes(ConvKind::Forward, g, "c"), 4096u);
  EXPECT_THROW(conv.forward(g, p(x), p(w), p(y), {p(ws), 4095}, "c"), GpuError);
  EXPECT_THROW(conv.forward(g, p(x) + 4, p(w), p(y), {p(ws), 4096}, "c"), GpuError);  // 4-byte aligned only
  EXPECT_THROW(conv.forward(g, 0, p(w), p(y), {p(ws), 4096}, "c"), GpuError);
  conv.forward(g, p(x), p(w), p(y), {p(ws), 4096}, "c");
  auto packs = f.of_type(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  ASSERT_FALSE(packs.empty());
  EXPECT_EQ(attr(f, packs.back(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE).pointers, (std::vector<uint64_t>{p(ws)}));
}

// ---------------------------------------------------------------------------------------------------
// Every conv node kind of the step graph through conv_node_call, against the reference executor's
// kernels (windows built as runtime/train/reference/reference_executor.cpp builds them).

// HWIO / HWOI [a, b, c, d] <-> KRSC [d, a, b, c]: the last axis first, and back.
std::vector<float> last_axis_first(const std::vector<float>& v, const Shape& s) {
  std::vector<float> out(v.size());
  const int64_t a = s[0], b = s[1], c = s[2], d = s[3];
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      for (int64_t k = 0; k < c; ++k)
        for (int64_t l = 0; l < d; ++l) out[((l * a + i) * b + j) * c + k] = v[((i * b + j) * c + k) * d + l];
  return out;
}
std::vector<float> first_axis_last(const std::vector<float>& v, const Shape& s) {  // s: the HWIO shape
  std::vector<float> out(v.size());
  const int64_t a = s[0], b = s[1], c = s[2], d = s[3];
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      for (int64_t k = 0; k < c; ++k)
        for (int64_t l = 0; l < d; ++l) out[((i * b + j) * c + k) * d + l] = v[((l * a + i) * b + j) * c + k];
  return out;
}

ref::Window2d window(int64_t rows, const Shape& in, const Shape& out, const Shape& kernel, int64_t stride_h,
                     int64_t stride_w, int64_t dh, int64_t dw, bool same) {
  ref::Window2d w;
  w.batch = rows;
  w.in_h = in[0], w.in_w = in[1], w.in_c = in[2];
  w.out_h = out[0], w.out_w = out[1], w.out_c = out[2];
  w.k_h = kernel[0], w.k_w = kernel[1];
  w.stride_h = stride_h, w.stride_w = stride_w;
  w.dil_h = dh, w.dil_w = dw;
  w.pad_top = ref::pad_before(same, w.in_h, w.out_h, (w.k_h - 1) * dh + 1, stride_h);
  w.pad_left = ref::pad_before(same, w.in_w, w.out_w, (w.k_w - 1) * dw + 1, stride_w);
  return w;
}

int64_t count(const Shape& s, int64_t rows) {
  int64_t n = rows;
  for (int64_t d : s) n *= d;
  return n;
}

TEST(CudnnConv, EveryConvNodeKindMatchesTheReferenceOnRandomGeometries) {
  std::mt19937_64 rng(20261126);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  int cases = 0, asymmetric = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const bool transpose = trial % 2 == 1;
    const bool same = pick(0, 1) == 1;
    const int64_t rows = pick(1, 2), kh = pick(1, 4), kw = pick(1, 4), sh = pick(1, 3), sw = pick(1, 3);
    const int64_t dh = transpose ? 1 : pick(1, 2), dw = transpose ? 1 : pick(1, 2);
    const int64_t cin = pick(1, 3), cout = pick(1, 3);
    Shape x, y, kernel;
    if (!transpose) {
      const int64_t h = pick((kh - 1) * dh + 1, 9), w = pick((kw - 1) * dw + 1, 9);
      auto out = [&](int64_t in, int64_t k, int64_t d, int64_t s) {
        return same ? (in + s - 1) / s : (in - ((k - 1) * d + 1)) / s + 1;
      };
      x = {h, w, cin};
      y = {out(h, kh, dh, sh), out(w, kw, dw, sw), cout};
      kernel = {kh, kw, cin, cout};  // HWIO
    } else {
      const int64_t h = pick(1, 5), w = pick(1, 5);
      auto out = [&](int64_t in, int64_t k, int64_t s) { return same ? in * s : in * s + std::max<int64_t>(k - s, 0); };
      x = {h, w, cin};
      y = {out(h, kh, sh), out(w, kw, sw), cout};
      kernel = {kh, kw, cout, cin};  // HWOI
    }
    // A graph with the three nodes of the layer (forward, backward input, backward kernel).
    ModelGraph g;
    auto value_of = [&](const Shape& s, bool batched) {
      GraphValue v;
      v.shape = s;
      v.batched = batched;
      return g.add_value(v);
    };
    const int vx = value_of(x, true), vy = value_of(y, true), vk = value_of(kernel, false);
    const int vdy = value_of(y, true), vdx = value_of(x, true), vdk = value_of(kernel, false);
    auto node = [&](ModelOp op, std::vector<int> in, std::vector<int> out) {
      GraphNode n;
      n.op = op;
      n.inputs = in;
      n.outputs = out;
      n.layer = transpose ? "conv2d_transpose" : "conv2d";
      const Padding padding = same ? Padding::Same : Padding::Valid;
      if (transpose) n.attrs = Conv2dTransposeAttrs{{kh, kw}, cout, {sh, sw}, padding, std::nullopt};
      else n.attrs = Conv2dAttrs{{kh, kw}, cout, {sh, sw}, padding, {dh, dw}, std::nullopt};
      return n;
    };
    std::vector<GraphNode> nodes =
        transpose ? std::vector<GraphNode>{node(ModelOp::Conv2dTranspose, {vx, vk}, {vy}),
                                           node(ModelOp::Conv2dTransposeBackwardInput, {vdy, vk}, {vdx}),
                                           node(ModelOp::Conv2dTransposeBackwardKernel, {vx, vdy}, {vdk})}
                  : std::vector<GraphNode>{node(ModelOp::Conv2d, {vx, vk}, {vy}),
                                           node(ModelOp::Conv2dBackwardInput, {vdy, vk}, {vdx}),
                                           node(ModelOp::Conv2dBackwardKernel, {vx, vdy}, {vdk})};
    auto random = [&](size_t n) {
      std::vector<float> v(n);
      for (float& e : v) e = value(rng);
      return v;
    };
    std::vector<float> xs = random(count(x, rows)), ks = random(count(kernel, 1)), dys = random(count(y, rows));

    // The reference: conv2d's window runs x -> y; conv2d_transpose's runs its y -> x (the convolution
    // whose backward-data pass it is).
    ref::Window2d win =
        transpose ? window(rows, y, x, kernel, sh, sw, 1, 1, same) : window(rows, x, y, kernel, sh, sw, dh, dw, same);
    std::vector<float> want_y(count(y, rows)), want_dx(count(x, rows)), want_dk(count(kernel, 1));
    if (!transpose) {
      ref::conv2d<float>(win, xs.data(), ks.data(), nullptr, want_y.data());
      ref::conv2d_backward_input<float>(win, dys.data(), ks.data(), want_dx.data());
      ref::conv2d_backward_kernel<float>(win, xs.data(), dys.data(), want_dk.data());
    } else {
      ref::conv2d_backward_input<float>(win, xs.data(), ks.data(), want_y.data());
      ref::conv2d<float>(win, dys.data(), ks.data(), nullptr, want_dx.data());
      ref::conv2d_backward_kernel<float>(win, dys.data(), xs.data(), want_dk.data());
    }

    FakeCudnn f;
    CudnnConv conv(f.api(), nullptr, {});
    const std::vector<float> krsc = last_axis_first(ks, kernel);
    std::vector<float> got_y(want_y.size(), 99.0f), got_dx(want_dx.size(), 99.0f), got_dk_krsc(want_dk.size(), 99.0f);
    // Each node's operands as the executor hands them over, the kernel in KRSC.
    struct Operands {
      DevPtr in0, in1, out0;
    };
    const Operands ops[3] = {
        {dev(xs), dev(krsc), dev(got_y)}, {dev(dys), dev(krsc), dev(got_dx)}, {dev(xs), dev(dys), dev(got_dk_krsc)}};
    for (int i = 0; i < 3; ++i) {
      ConvNodeCall call = conv_node_call(g, nodes[i], rows);
      auto pick_operand = [&](NodeOperand o) {
        return o == NodeOperand::Input0 ? ops[i].in0 : o == NodeOperand::Input1 ? ops[i].in1 : ops[i].out0;
      };
      if (call.geometry.pad_top != call.geometry.pad_bottom || call.geometry.pad_left != call.geometry.pad_right)
        ++asymmetric;
      ASSERT_NO_THROW(conv.run(call.kind, call.geometry, pick_operand(call.x), pick_operand(call.filter),
                               pick_operand(call.y), {}, nodes[i].layer))
          << model_op_name(nodes[i].op) << " " << call.geometry.describe();
    }
    std::vector<float> got_dk = first_axis_last(got_dk_krsc, kernel);
    auto expect_near = [&](const std::vector<float>& got, const std::vector<float>& want, const char* what) {
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::abs(want[i])))
            << what << "[" << i << "] trial " << trial << (transpose ? " transpose" : " conv") << " x [" << x[0] << ", "
            << x[1] << ", " << x[2] << "] y [" << y[0] << ", " << y[1] << ", " << y[2] << "] k " << kh << "x" << kw
            << " s " << sh << "x" << sw << " d " << dh << "x" << dw << (same ? " same" : " valid");
    };
    expect_near(got_y, want_y, "forward");
    expect_near(got_dx, want_dx, "backward_input");
    expect_near(got_dk, want_dk, "backward_kernel");
    ++cases;
  }
  EXPECT_EQ(cases, 60);
  EXPECT_GT(asymmetric, 5);  // the odd extra pad was exercised
}

TEST(CudnnConv, ConvNodeCallRefusesOtherNodes) {
  ModelGraph g;
  GraphNode n;
  n.op = ModelOp::Dense;
  n.layer = "dense";
  EXPECT_THROW(conv_node_call(g, n, 4), std::logic_error);
}

}  // namespace
}  // namespace pipec::gpu
