// `precision = mixed_bf16 | mixed_fp16` (compiler/train/passes/mixed_precision.cpp, runtime/train/math/loss_scale.h):
// where the step graph rounds, that -O0 rounds too, dynamic loss scaling on an fp16 overflow (the scale
// halves and the step is skipped; it doubles after 2000 finite steps), the chess net within stated
// bounds of fp32, the two executors agreeing, and what `pipec run` prints.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "compiler/train/passes/step_passes.h"
#include "runtime/core/half.h"
#include "runtime/model/train_program.h"
#include "runtime/train/dnnl/cpu_kernels.h"
#include "runtime/train/fast/fast_executor.h"
#include "runtime/train/math/round_16bit.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/train_util.h"

namespace pipec {
namespace {

// One dense layer on one example per batch: the loss gradient is 2 * (prediction - target), easy to
// push past f16's largest finite value (65504) with the initial loss scale.
const char* kTinySpec = R"(source s = tfrecord("x.tfrecord") { x: f32[2], y: f32[1] }
pipeline data = s | batch(1, drop_remainder = true)
model net(x: f32[2]) -> f32[1] { x | dense(1) }
train t = { data = data, model = net(x), loss = mse(y), optimizer = sgd(lr = 0.01), steps = 1, precision = mixed_fp16 }
)";

// The node computing `v`, or null.
const GraphNode* producer(const ModelGraph& g, int v) {
  for (const GraphNode& n : g.nodes)
    for (int o : n.outputs)
      if (o == v) return &n;
  return nullptr;
}

bool rounded(const ModelGraph& g, int v, const std::string& dtype) {
  const GraphNode* p = producer(g, v);
  return p && p->op == ModelOp::Round && enum_text(p->attrs_as<RoundAttrs>().dtype) == dtype;
}

int count_rounds(const ModelGraph& g) {
  int n = 0;
  for (const GraphNode& node : g.nodes) n += node.op == ModelOp::Round;
  return n;
}

ModelGraph compile_at(const std::string& spec, int opt_level, std::vector<std::string> disabled = {}) {
  CompileRequest request;
  request.path = "t.pipe";
  request.text = spec;
  request.target = CompileTarget::CheckOnly;
  request.options.passes.opt_level = opt_level;
  request.options.passes.disabled = std::move(disabled);
  CompileResult r = compile(request);
  EXPECT_TRUE(r.ok()) << r.error;
  return r.ok() ? r.trains.at(0).program.step : ModelGraph{};
}

void expect_casts_where_a_gpu_casts(const ModelGraph& g, const std::string& dtype) {
  int layers = 0;
  for (const GraphNode& n : g.nodes) {
    if (n.op != ModelOp::Conv2d && n.op != ModelOp::Dense) continue;
    ++layers;
    // Input, kernel and bias in the compute type; the output stored in it.
    for (int k = 0; k < 3; ++k) EXPECT_TRUE(rounded(g, n.inputs[k], dtype)) << n.layer << " input " << k;
    const int y = n.outputs[0];
    bool read_rounded = false;
    for (const GraphNode& r : g.nodes) read_rounded = read_rounded || (r.op == ModelOp::Round && r.inputs[0] == y);
    EXPECT_TRUE(read_rounded) << n.layer << " output";
  }
  EXPECT_EQ(layers, 4);
  // Every parameter gradient is rounded before the optimizer (the f32 master weights take it).
  for (int d : g.param_grads) EXPECT_TRUE(rounded(g, d, dtype)) << g.values[d].name;
  // The loss is f32, computed from the rounded prediction.
  for (const GraphNode& n : g.nodes) {
    if (n.op == ModelOp::Loss) {
      EXPECT_FALSE(rounded(g, n.outputs[0], dtype));
    }
  }
}

TEST(MixedPrecision, RoundsWhereAGpuCasts) {
  ModelGraph fp32 = testing::compile_train(testing::chess_train_spec("fp32")).step;
  EXPECT_EQ(count_rounds(fp32), 0);
  for (const char* precision : {"mixed_bf16", "mixed_fp16"}) {
    SCOPED_TRACE(precision);
    const std::string dtype = std::string(precision) == "mixed_bf16" ? "bf16" : "f16";
    // The round nodes as mixed_precision makes them: later passes fuse some into expr nodes
    // (train_round_fusion_test.cpp).
    ModelGraph g =
        compile_at(testing::chess_train_spec(precision), 1, {"fuse_round_into_expr", "fuse_round_into_expr_inputs"});
    EXPECT_EQ(enum_text(g.precision), std::string(precision));
    expect_casts_where_a_gpu_casts(g, dtype);
    // The relus stay fused: a fused layer's output is rounded once, after the activation.
    int fused = 0;
    for (const GraphNode& n : g.nodes) fused += fused_activation(n.attrs).has_value();
    EXPECT_EQ(fused, 3);
    // Only fp16 scales the loss.
    int scaled = 0;
    for (const GraphNode& n : g.nodes) scaled += loss_scaled(n.attrs);
    EXPECT_EQ(scaled, dtype == "f16" ? 2 : 0);
    // -O0 rounds too: the policy is what the step computes, not an optimization.
    ModelGraph o0 = compile_at(testing::chess_train_spec(precision), 0);
    expect_casts_where_a_gpu_casts(o0, dtype);
    // Idempotent.
    const size_t nodes = g.nodes.size();
    EXPECT_EQ(mixed_precision(g), 0);
    EXPECT_EQ(g.nodes.size(), nodes);
  }
}

// batch_norm and layer_norm compute in f32 with f32 gamma and beta (Keras' normalization layers do), so
// their parameters and parameter gradients are not rounded; their outputs are.
TEST(MixedPrecision, NormalizationKeepsF32Parameters) {
  ModelGraph g = testing::compile_train(R"(source s = tfrecord("x.tfrecord") { x: f32[6, 6, 2], y: f32[2] }
pipeline data = s | batch(4, drop_remainder = true)
model net(x: f32[6, 6, 2]) -> f32[2] { x | conv2d(3, 3) | batch_norm | relu | flatten | dense(2) }
train t = { data = data, model = net(x), loss = mse(y), optimizer = sgd(), steps = 1, precision = mixed_bf16 }
)")
                     .step;
  int checked = 0;
  for (const GraphNode& n : g.nodes) {
    if (n.op != ModelOp::BatchNorm) continue;
    EXPECT_EQ(g.values[n.inputs[1]].role, ValueRole::Param);
    EXPECT_EQ(g.values[n.inputs[2]].role, ValueRole::Param);
    ++checked;
  }
  EXPECT_EQ(checked, 1);
  for (size_t k = 0; k < g.params.size(); ++k) {
    const std::string& name = g.values[g.params[k]].name;
    bool norm = name.find("batch_normalization") != std::string::npos;
    EXPECT_EQ(rounded(g, g.param_grads[k], "bf16"), !norm) << name;
  }
}

// The round node's arithmetic: to nearest, ties to even, f16 overflowing to infinity past 65504.
TEST(MixedPrecision, RoundNodeRoundsToNearestEven) {
  ModelGraph g = testing::compile_train(R"(source s = tfrecord("x.tfrecord") { x: f32[4], y: f32[1] }
pipeline data = s | batch(1, drop_remainder = true)
model net(x: f32[4]) -> f32[1] { x | dense(1) }
train t = { data = data, model = net(x), loss = mse(y), optimizer = sgd(), steps = 1, precision = mixed_fp16 }
)")
                     .step;
  const GraphNode* dense = nullptr;
  for (const GraphNode& n : g.nodes)
    if (n.op == ModelOp::Dense) dense = &n;
  ASSERT_NE(dense, nullptr);
  ReferenceExecutor<float> ex(g, 1);
  Tensor x = Tensor::empty(DType::F32, {1, 4});
  // 1 + 2^-11 is a tie between 1 and 1 + 2^-10: to even, 1. 1 + 3 * 2^-11 ties up to 1 + 2^-9.
  const float in[4] = {1.0f + std::ldexp(1.0f, -11), 1.0f + 3 * std::ldexp(1.0f, -11), 65519.0f, 70000.0f};
  std::copy(in, in + 4, x.data<float>());
  Tensor y = Tensor::empty(DType::F32, {1, 1});
  y.data<float>()[0] = 0;
  ex.run({x}, &y, 0, OpCategory::Forward);
  const float* r = ex.value(dense->inputs[0]).data<float>();
  EXPECT_EQ(r[0], 1.0f);
  EXPECT_EQ(r[1], 1.0f + std::ldexp(1.0f, -9));
  EXPECT_EQ(r[2], 65504.0f);
  EXPECT_TRUE(std::isinf(r[3]));
}

// The fast executor splits a round node's elements over its threads: the same bits as the reference's
// one loop and as the tensor conversion itself, ties and overflow included, for both 16-bit types.
TEST(MixedPrecision, FastExecutorRoundsLikeTheReferenceOnItsThreads) {
  for (const char* precision : {"mixed_fp16", "mixed_bf16"}) {
    SCOPED_TRACE(precision);
    ModelGraph g = testing::compile_train(std::string(R"(source s = tfrecord("x.tfrecord") { x: f32[4], y: f32[1] }
pipeline data = s | batch(64, drop_remainder = true)
model net(x: f32[4]) -> f32[1] { x | dense(1) }
train t = { data = data, model = net(x), loss = mse(y), optimizer = sgd(), steps = 1, precision = )") +
                                          precision + " }\n")
                       .step;
    const GraphNode* dense = nullptr;
    for (const GraphNode& n : g.nodes)
      if (n.op == ModelOp::Dense) dense = &n;
    ASSERT_NE(dense, nullptr);
    Tensor x = Tensor::empty(DType::F32, {64, 4});
    for (int64_t i = 0; i < 256; ++i)  // ties of both types, large values, a spread of others
      x.data<float>()[i] = i % 4 == 0   ? 1.0f + std::ldexp(1.0f, -11) * static_cast<float>(i % 7)
                           : i % 4 == 1 ? 1.0f + std::ldexp(1.0f, -8) * static_cast<float>(i % 5)
                           : i % 4 == 2 ? 65519.0f + static_cast<float>(i)
                                        : std::sin(0.3f * static_cast<float>(i)) * 1e3f;
    Tensor y = Tensor::zeros(DType::F32, {64, 1});
    ReferenceExecutor<float> ref(g, 1);
    // On the f32 kernels: with bf16 ones the dense layer rounds its input itself (and host_value rounds it
    // on request, checked below).
    FastExecutorOptions o;
    o.threads = 2;
    o.cpu_bf16 = CpuBf16::Emulated;
    FastExecutor fast(g, 1, o);
    ref.run({x}, &y, 0, OpCategory::Forward);
    fast.run({x}, &y, 0, OpCategory::Forward);
    if (std::string(precision) == "mixed_bf16" && train::CpuKernels::bf16_kernels_exist()) {
      o.cpu_bf16 = CpuBf16::Native;
      FastExecutor native(g, 1, o);
      native.run({x}, &y, 0, OpCategory::Forward);
      EXPECT_FALSE(native.value(dense->inputs[0]).defined()) << "the input's round node ran";
      const Tensor r = native.host_value(dense->inputs[0]);
      ASSERT_EQ(r.num_elements(), 256);
      EXPECT_EQ(std::memcmp(r.data<float>(), ref.value(dense->inputs[0]).data<float>(), 256 * sizeof(float)), 0);
    }
    std::vector<float> want(256);
    if (std::string(precision) == "mixed_bf16") round_to_bf16(x.data<float>(), want.data(), 256);
    else round_to_f16(x.data<float>(), want.data(), 256);
    const float* r = ref.value(dense->inputs[0]).data<float>();
    const float* f = fast.value(dense->inputs[0]).data<float>();
    for (int64_t i = 0; i < 256; ++i) {
      EXPECT_EQ(std::bit_cast<uint32_t>(r[i]), std::bit_cast<uint32_t>(want[i])) << "reference, element " << i;
      EXPECT_EQ(std::bit_cast<uint32_t>(f[i]), std::bit_cast<uint32_t>(want[i])) << "fast, element " << i;
    }
  }
}

// The tensor loops round as the scalar conversions do, bit for bit (f16 may use F16C, bf16 AVX2): over a
// sweep of every 4099th f32 bit pattern, and every pattern around f16's subnormals and overflow.
TEST(MixedPrecision, TensorRoundingMatchesTheScalarConversions) {
  std::vector<float> x;
  for (uint64_t b = 0; b < (uint64_t(1) << 32); b += 4099) x.push_back(std::bit_cast<float>(static_cast<uint32_t>(b)));
  for (uint32_t b = 0x33000000u; b < 0x33800000u + 0x10000u; b += 3)
    x.push_back(std::bit_cast<float>(b));                                                     // f16 subnormal ties
  for (uint32_t b = 0x477fe000u; b < 0x47800100u; ++b) x.push_back(std::bit_cast<float>(b));  // 65504 ... 65536
  for (float v : {65519.0f, 65520.0f, -65520.0f, 5.9604644775390625e-8f, 2.98023223876953125e-8f, 1e-8f})
    x.push_back(v);
  std::vector<float> fast(x.size()), scalar(x.size()), bf(x.size());
  round_to_f16(x.data(), fast.data(), static_cast<int64_t>(x.size()));
  round_to_f16_scalar(x.data(), scalar.data(), static_cast<int64_t>(x.size()));
  round_to_bf16(x.data(), bf.data(), static_cast<int64_t>(x.size()));
  int64_t mismatches = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) {  // bf16 keeps the NaN's top bits, quieted, in the vector loop too
      mismatches += !std::isnan(fast[i]) || std::bit_cast<uint32_t>(bf[i]) !=
                                                std::bit_cast<uint32_t>(bf16_bits_to_float(float_to_bf16_bits(x[i])));
      continue;
    }
    const float want_bf = bf16_bits_to_float(float_to_bf16_bits(x[i]));
    if (std::bit_cast<uint32_t>(fast[i]) != std::bit_cast<uint32_t>(scalar[i]) ||
        std::bit_cast<uint32_t>(bf[i]) != std::bit_cast<uint32_t>(want_bf)) {
      if (mismatches++ < 5)
        ADD_FAILURE() << std::hexfloat << x[i] << ": f16 " << fast[i] << " vs " << scalar[i] << ", bf16 " << bf[i];
    }
  }
  EXPECT_EQ(mismatches, 0);
}

// A loss gradient that overflows f16 at the loss scale: the step is skipped (weights and optimizer
// untouched) and the scale halves, until it is small enough; after 2000 finite steps in a row it
// doubles. Both executors run the same schedule.
template <class Executor>
void overflow_then_growth() {
  ModelGraph g = testing::compile_train(kTinySpec).step;
  Executor ex(g, 7);
  ASSERT_NE(ex.loss_scale(), nullptr);
  EXPECT_EQ(ex.loss_scale()->scale, 32768);
  Tensor x = Tensor::empty(DType::F32, {1, 2});
  x.data<float>()[0] = 0.5f;
  x.data<float>()[1] = -0.25f;
  Tensor far = Tensor::empty(DType::F32, {1, 1});
  far.data<float>()[0] = 100;  // d loss / d prediction is about -200: times 32768 is far past 65504
  // Halving from 2^15 until 200 * scale < 65504: 256 is the first scale that fits, after 7 skips.
  double scale = 32768;
  for (int step = 0; step < 7; ++step) {
    SCOPED_TRACE("skipped step " + std::to_string(step + 1));
    const std::vector<float> before = ex.buffers().params;
    double loss = ex.run({x}, &far, step, OpCategory::Update);
    EXPECT_TRUE(std::isfinite(loss));  // the loss is fine: its scaled gradient overflows
    EXPECT_EQ(ex.buffers().params, before);
    EXPECT_EQ(ex.optimizer_slots().iterations, 0);
    scale /= 2;
    EXPECT_EQ(ex.loss_scale()->scale, scale);
    EXPECT_EQ(ex.loss_scale()->skipped, step + 1);
    EXPECT_TRUE(ex.loss_scale()->last_skipped);
  }
  const std::vector<float> before = ex.buffers().params;
  ex.run({x}, &far, 7, OpCategory::Update);
  EXPECT_FALSE(ex.loss_scale()->last_skipped);
  EXPECT_EQ(ex.loss_scale()->scale, 256);
  EXPECT_EQ(ex.optimizer_slots().iterations, 1);
  // The update is the unscaled gradient's: sgd moves the bias by lr * 2 * (prediction - 100), about +2.
  const GraphValue& bias = g.values[g.params[1]];
  EXPECT_NEAR(ex.buffers().params[bias.offset] - before[bias.offset], 2.0, 0.05);
  // 1999 more finite steps (targets near the prediction): the scale doubles on the 2000th.
  Tensor near = Tensor::empty(DType::F32, {1, 1});
  for (int step = 8; step < 8 + 1998; ++step) {
    std::vector<Tensor> in = {x};
    const Tensor& out = (ex.run(in, nullptr, step, OpCategory::Forward), ex.value(g.output));
    near.data<float>()[0] = out.data<float>()[0];
    ex.run(in, &near, step, OpCategory::Update);
    ASSERT_FALSE(ex.loss_scale()->last_skipped) << step;
  }
  EXPECT_EQ(ex.loss_scale()->scale, 256);
  ex.run({x}, &near, 3000, OpCategory::Update);
  EXPECT_EQ(ex.loss_scale()->scale, 512);
  EXPECT_EQ(ex.loss_scale()->skipped, 7);
}

TEST(MixedPrecision, Fp16OverflowSkipsTheStepAndHalvesTheScale) { overflow_then_growth<ReferenceExecutor<float>>(); }

TEST(MixedPrecision, Fp16OverflowOnTheFastExecutor) { overflow_then_growth<FastExecutor>(); }

// No loss scale without fp16.
TEST(MixedPrecision, Bf16HasNoLossScale) {
  ModelGraph g = testing::compile_train(testing::chess_train_spec("mixed_bf16")).step;
  ReferenceExecutor<float> ex(g, 1);
  EXPECT_EQ(ex.loss_scale(), nullptr);
}

struct Trajectory {
  std::vector<double> losses;
  std::vector<float> params;
};

template <class Executor, class... Options>
Trajectory train_chess(const ModelGraph& g, int steps, Options... options) {
  Executor ex(g, 11, options...);
  Trajectory t;
  t.losses = testing::run_random_update_steps(ex, g, steps);
  t.params = ex.buffers().params;
  return t;
}

double max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, std::fabs(double(a[i]) - double(b[i])));
  return diff;
}

double rms_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += (double(a[i]) - double(b[i])) * (double(a[i]) - double(b[i]));
  return std::sqrt(sum / static_cast<double>(a.size()));
}

// The chess net, 5 Adam steps (lr 1e-3) from the same weights on the same batches. Bounds against fp32:
// each step's loss within 1% (bf16, 8 significand bits) and 0.2% (fp16, 11 bits); the weights within
// 1e-2 = 2 x steps x lr of fp32's (Adam moves a weight by about lr a step whatever its gradient's size,
// so a gradient near 0 whose sign the rounding flips moves it the other way), and within 1e-3 (bf16) /
// 1e-4 (fp16) in RMS over all weights. Measured: losses 0.22% / 0.03% apart at most, weights 7.3e-3 /
// 4.9e-3 at most and 2.7e-4 / 2.3e-5 RMS. The executors: losses 5e-5 apart, weights 1.1e-5 RMS.
TEST(MixedPrecision, ChessNetWithinBoundsOfFp32) {
  ModelGraph fp32 = testing::compile_train(testing::chess_train_spec("fp32")).step;
  Trajectory want = train_chess<ReferenceExecutor<float>>(fp32, 5);
  for (const char* precision : {"mixed_bf16", "mixed_fp16"}) {
    SCOPED_TRACE(precision);
    const bool bf16 = std::string(precision) == "mixed_bf16";
    ModelGraph g = testing::compile_train(testing::chess_train_spec(precision)).step;
    Trajectory got = train_chess<ReferenceExecutor<float>>(g, 5);
    for (size_t s = 0; s < want.losses.size(); ++s) {
      double rel = std::fabs(got.losses[s] - want.losses[s]) / want.losses[s];
      EXPECT_LT(rel, bf16 ? 1e-2 : 2e-3) << "step " << s + 1 << ": " << got.losses[s] << " vs fp32 " << want.losses[s];
      EXPECT_GT(rel, 0) << "step " << s + 1 << ": no rounding happened";
    }
    EXPECT_LT(max_difference(got.params, want.params), 1e-2);
    EXPECT_LT(rms_difference(got.params, want.params), bf16 ? 1e-3 : 1e-4);
    // The two executors compute the same rounded step: oneDNN's f32 sums differ from the reference's f64
    // ones by a few f32 ulps, which can move a value across a rounding boundary (one bf16/f16 ulp) now
    // and then, so they agree to a fraction of the precision's step rather than to f32's.
    Trajectory fast = train_chess<FastExecutor>(g, 5);
    for (size_t s = 0; s < got.losses.size(); ++s)
      EXPECT_NEAR(fast.losses[s], got.losses[s], (bf16 ? 2e-3 : 5e-4) * got.losses[s]) << "step " << s + 1;
    EXPECT_LT(max_difference(fast.params, got.params), 1e-2);
    EXPECT_LT(rms_difference(fast.params, got.params), 1e-4);
  }
}

FastExecutorOptions bf16_kernels(CpuBf16 how) {
  FastExecutorOptions o;
  o.threads = 2;
  o.cpu_bf16 = how;
  return o;
}

// mixed_bf16's layers on oneDNN's bf16 kernels (what CPUs with AVX512_BF16 run by default) against the
// emulation on f32 kernels and against the reference: the operands are the same bf16 values, so the two
// differ only in the order of their f32 sums, and agree within the bounds the executors already keep
// (losses to 0.2%, weights to 1e-4 RMS and 1e-2 at most: Adam moves a weight whose tiny gradient flips
// sign by 2 lr a step), and with fp32 within the precision's own bounds. Measured on an AVX512_BF16 CPU:
// losses 7.3e-5 apart at most (relative), weights 9.6e-6 RMS and 4.5e-3 at most.
// Runs wherever oneDNN has bf16 kernels (every AVX-512 CPU: without the instructions it emulates them).
TEST(MixedPrecision, Bf16KernelsAgreeWithTheEmulation) {
  if (!train::CpuKernels::bf16_kernels_exist())
    GTEST_SKIP() << "oneDNN has no bf16 kernels for this CPU (" << train::CpuKernels::isa()
                 << "): mixed_bf16 runs emulated here, as the other tests check";
  ModelGraph g = testing::compile_train(testing::chess_train_spec("mixed_bf16")).step;
  {
    FastExecutor probe(g, 11, bf16_kernels(CpuBf16::Native));
    EXPECT_TRUE(probe.bf16_kernels());
    FastExecutor emulated(g, 11, bf16_kernels(CpuBf16::Emulated));
    EXPECT_FALSE(emulated.bf16_kernels());
  }
  Trajectory native = train_chess<FastExecutor>(g, 5, bf16_kernels(CpuBf16::Native));
  Trajectory emulated = train_chess<FastExecutor>(g, 5, bf16_kernels(CpuBf16::Emulated));
  Trajectory reference = train_chess<ReferenceExecutor<float>>(g, 5);
  Trajectory fp32 =
      train_chess<ReferenceExecutor<float>>(testing::compile_train(testing::chess_train_spec("fp32")).step, 5);
  double worst_loss = 0;
  for (size_t s = 0; s < native.losses.size(); ++s) {
    worst_loss = std::max(worst_loss, std::fabs(native.losses[s] - emulated.losses[s]) / emulated.losses[s]);
    EXPECT_NEAR(native.losses[s], emulated.losses[s], 2e-3 * emulated.losses[s]) << "step " << s + 1;
    EXPECT_NEAR(native.losses[s], reference.losses[s], 2e-3 * reference.losses[s]) << "step " << s + 1;
    EXPECT_LT(std::fabs(native.losses[s] - fp32.losses[s]) / fp32.losses[s], 1e-2) << "step " << s + 1;
  }
  EXPECT_LT(max_difference(native.params, emulated.params), 1e-2);
  EXPECT_LT(rms_difference(native.params, emulated.params), 1e-4);
  EXPECT_LT(rms_difference(native.params, reference.params), 1e-4);
  EXPECT_LT(max_difference(native.params, fp32.params), 1e-2);
  EXPECT_LT(rms_difference(native.params, fp32.params), 1e-3);
  std::cout << "bf16 kernels vs emulation: losses " << worst_loss << " apart (relative), weights "
            << rms_difference(native.params, emulated.params) << " RMS, "
            << max_difference(native.params, emulated.params) << " at most\n";
}

// The executor line says which kernels a mixed_bf16 step multiplies on, and why; fp32 says nothing of it.
TEST(MixedPrecision, ExecutorLineSaysWhichBf16Kernels) {
  EXPECT_EQ(parse_cpu_bf16("native"), CpuBf16::Native);
  EXPECT_EQ(parse_cpu_bf16("emulated"), CpuBf16::Emulated);
  EXPECT_EQ(parse_cpu_bf16("auto"), CpuBf16::Auto);
  EXPECT_EQ(parse_cpu_bf16("bf16"), std::nullopt);
  ModelGraph g = testing::compile_train(testing::chess_train_spec("mixed_bf16")).step;
  const std::string emulated = FastExecutor(g, 1, bf16_kernels(CpuBf16::Emulated)).description();
  EXPECT_NE(emulated.find("mixed_bf16 emulated on f32 kernels (--cpu-bf16 emulated)"), std::string::npos) << emulated;
  const std::string automatic = FastExecutor(g, 1, bf16_kernels(CpuBf16::Auto)).description();
  if (train::CpuKernels::native_bf16())
    EXPECT_TRUE(std::regex_search(
        automatic, std::regex("mixed_bf16 layers on bf16 kernels \\([1-9][0-9]* round nodes left to the layers, [0-9]+ "
                              "values stored in bf16; "
                              "--cpu-bf16 emulated for f32 ones\\)")))
        << automatic;
  else
    EXPECT_NE(automatic.find("mixed_bf16 emulated on f32 kernels: this CPU has no bf16 instructions"),
              std::string::npos)
        << automatic;
  const std::string fp32 =
      FastExecutor(testing::compile_train(testing::chess_train_spec("fp32")).step, 1, bf16_kernels(CpuBf16::Native))
          .description();
  EXPECT_EQ(fp32.find("mixed_bf16"), std::string::npos) << fp32;
  // `pipec explain` does not know the CPU that will run the step: it says what depends on it.
  const std::string explained = print_train_program(testing::compile_train(testing::chess_train_spec("mixed_bf16")));
  EXPECT_NE(
      explained.find("precision mixed_bf16 (rounded to bf16 where a GPU casts; on the CPU conv2d, "
                     "conv2d_transpose and dense multiply in bf16 where it has bf16 instructions, the rest in f32)"),
      std::string::npos)
      << explained;
}

// `--cpu-bf16`: emulated runs mixed_bf16 on the f32 kernels on any CPU and says so; native on a CPU
// without bf16 instructions (DNNL_MAX_CPU_ISA=AVX2 makes any CPU one) stops before training, naming what
// the CPU runs; native where the instructions exist trains on the bf16 kernels.
TEST(MixedPrecision, CpuBf16FlagChoosesTheKernels) {
  testing::ScratchDir d;
  std::ofstream(d / "x.pipe") << R"(pipeline data = range(64)
  | map(i => {
      x = random_uniform([8], -1.0, 1.0, seed = 1)
      { x, y: [sum(x)] }
    })
  | batch(32, drop_remainder = true)
model net(x: f32[8]) -> f32[1] { x | dense(16) | relu | dense(1) }
train fit = { data = data, model = net(x), loss = mse(y), optimizer = adam(), steps = 2, precision = mixed_bf16 }
)";
  const std::string spec = (d / "x.pipe").string();
  auto emulated = testing::run_pipec({"run", spec, "--cpu-bf16", "emulated"});
  ASSERT_EQ(emulated.exit_code, 0) << emulated.err;
  EXPECT_NE(emulated.err.find("mixed_bf16 emulated on f32 kernels (--cpu-bf16 emulated)"), std::string::npos)
      << emulated.err;
  EXPECT_NE(emulated.err.find("where a GPU casts, computed in f32 on the CPU"), std::string::npos) << emulated.err;

  auto avx2 = testing::run_shell("DNNL_MAX_CPU_ISA=AVX2 " + testing::shell_quote(PIPEC_BINARY) + " run " +
                                 testing::shell_quote(spec) + " --cpu-bf16 native");
  EXPECT_EQ(avx2.exit_code, 2) << avx2.out;
  EXPECT_NE(avx2.out.find("--cpu-bf16 native: this CPU has no bf16 instructions (oneDNN runs avx2 code here)"),
            std::string::npos)
      << avx2.out;
  EXPECT_EQ(avx2.out.find("train fit:"), std::string::npos) << "trained: " << avx2.out;

  auto native = testing::run_pipec({"run", spec, "--cpu-bf16", "native"});
  if (train::CpuKernels::native_bf16()) {
    ASSERT_EQ(native.exit_code, 0) << native.err;
    EXPECT_NE(native.err.find("mixed_bf16 layers on bf16 kernels"), std::string::npos) << native.err;
  } else {
    EXPECT_EQ(native.exit_code, 2) << native.err;
  }
  auto bad = testing::run_pipec({"run", spec, "--cpu-bf16", "fast"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--cpu-bf16"), std::string::npos) << bad.err;
}

// `pipec run` says what it trained in: the summary's precision line, the loss scale in the progress data
// (--stats-json) and the summary.
TEST(MixedPrecision, RunShowsPrecisionAndLossScale) {
  testing::ScratchDir d;
  for (const char* precision : {"mixed_bf16", "mixed_fp16"}) {
    SCOPED_TRACE(precision);
    testing::write_file(d / "fit.pipe", std::string(R"(pipeline data = range(256)
  | map(r => {
      x = random_uniform([8], -1.0, 1.0, seed = 1)
      { x, y: [sum(x)] }
    })
  | batch(32, drop_remainder = true)
model net(x: f32[8]) -> f32[1] { x | dense(16) | relu | dense(1) }
train fit = { data = data, model = net(x), loss = mse(y), optimizer = adam(), steps = 4, precision = )") +
                                            precision + " }\n");
    const std::string stats = (d / "stats.json").string();
    auto run = testing::run_pipec({"run", (d / "fit.pipe").string(), "--stats-json", stats});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const bool fp16 = std::string(precision) == "mixed_fp16";
    EXPECT_NE(run.err.find(std::string("precision   ") + precision + ": operands rounded to " +
                           (fp16 ? "fp16" : "bf16") + " where a GPU casts, " +
                           (fp16 ? "computed in f32 on the CPU" : testing::cpu_bf16_precision_text())),
              std::string::npos)
        << run.err;
    EXPECT_EQ(run.err.find("not implemented"), std::string::npos) << run.err;
    // Four steps: no growth, so the scale is 2^15 halved once per skipped step (a batch of 32 can
    // overflow f16 in a kernel gradient at the initial scale).
    std::smatch m;
    const bool shown =
        std::regex_search(run.err, m, std::regex("loss scale ([0-9]+) at the end, ([0-9]+) steps? skipped"));
    EXPECT_EQ(shown, fp16) << run.err;
    std::ifstream in(stats);
    nlohmann::json j = nlohmann::json::parse(in);
    EXPECT_EQ(j["precision"], precision);
    EXPECT_EQ(j.contains("loss_scale"), fp16);
    if (fp16 && shown) {
      const int skipped = std::stoi(m[2]);
      EXPECT_EQ(std::stod(m[1]), std::ldexp(32768.0, -skipped));
      EXPECT_EQ(j["loss_scale"].get<double>(), std::stod(m[1]));
      EXPECT_EQ(j["skipped_steps"].get<int>(), skipped);
    }
  }
}

// A forward pass that overflows fp16 by itself (inputs past 65504) makes every loss infinite: each step
// is skipped and halves the scale, which cannot help; the run stops once the scale falls below 1 (after
// 16 skips from 2^15), naming the step, instead of skipping forever. bf16 has f32's range: it trains.
TEST(MixedPrecision, ForwardOverflowStopsTheRun) {
  testing::ScratchDir d;
  for (const char* precision : {"mixed_fp16", "mixed_bf16"}) {
    SCOPED_TRACE(precision);
    testing::write_file(d / "big.pipe", std::string(R"(pipeline data = range(1024)
  | map(r => {
      x = random_uniform([8], 70000.0, 80000.0, seed = 1)
      { x, y: [1.0] }
    })
  | batch(8, drop_remainder = true)
model net(x: f32[8]) -> f32[1] { x | dense(1) }
train fit = { data = data, model = net(x), loss = mse(y), optimizer = sgd(lr = 1e-12), steps = 40, precision = )") +
                                            precision + " }\n");
    auto run = testing::run_pipec({"run", (d / "big.pipe").string()});
    if (std::string(precision) == "mixed_fp16") {
      EXPECT_EQ(run.exit_code, 1) << run.err;
      EXPECT_NE(
          run.err.find(
              "step 16: the loss scale fell below 1 after 16 skipped steps: the step overflows fp16 at any scale"),
          std::string::npos)
          << run.err;
    } else {
      EXPECT_EQ(run.exit_code, 0) << run.err;
    }
  }
}

}  // namespace
}  // namespace pipec
