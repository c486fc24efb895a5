// The GPU training executor (runtime/train/gpu) against the reference executor, the -O0 oracle: every
// step-graph kind, forward and backward, step by step from the same state, then whole trajectories per
// precision, the device-side loss scaling of mixed_fp16, repeatability and the state's round trip.
//
// On a machine with a GPU the executor runs there (NVRTC-compiled kernels, cuDNN and cuBLASLt where
// found); without one, or with PIPEC_GPU_DRY_RUN=1, on the host emulation (the same kernel source
// compiled as host C++), which is how CI runs this file: the executor, its memory plan and every kernel
// are then checked, the GPU's own compilation and memory model are not. Each test says which it ran on.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "compiler/codegen/cuda/attach_step_gpu_kernels.h"
#include "compiler/compile/compile.h"
#include "runtime/core/philox.h"
#include "runtime/gpu/cuda_loader.h"
#include "runtime/train/gpu/cuda_step_device.h"
#include "runtime/train/gpu/gpu_executor.h"
#include "runtime/train/gpu/host_step_device.h"
#include "runtime/train/math/optimizer.h"
#include "runtime/train/reference/reference_executor.h"
#include "tests/gpu/gpu_harness.h"

namespace pipec {
namespace {

using gpu::GpuExecutor;

// The device these tests run on: the GPU unless there is none or this is a dry run.
std::unique_ptr<gpu::StepDevice> test_device() {
  if (!gputest::dry_run()) {
    std::string why;
    if (const gpu::CudaDriver* d = gpu::cuda_driver(&why)) return gpu::make_cuda_step_device(*d);
  }
  return gpu::make_host_emulation_device();
}

std::string device_name() {
  static const std::string name = test_device()->describe();
  return name;
}

TrainProgram compile_program(const std::string& spec, const std::string& name = "t") {
  CompileRequest request;
  request.path = "gpu_train_test.pipe";
  request.text = spec;
  request.target = CompileTarget::CheckOnly;
  CompileResult r = compile(request);
  std::ostringstream diags;
  if (r.program) r.program->diags.print(diags, false);
  EXPECT_TRUE(r.ok()) << diags.str() << r.error;
  for (CompiledTrain& t : r.trains)
    if (t.program.name == name) {
      // The expr nodes' CUDA kernels, as `pipec run` prints them (compile_train.cpp): on a GPU the executor
      // runs them; the host emulation computes those nodes on the host.
      cuda_codegen::attach_step_gpu_kernels(t.program.step);
      return std::move(t.program);
    }
  ADD_FAILURE() << "no train block `" << name << "`\n" << diags.str();
  return {};
}

Tensor random_tensor(const Shape& shape, uint64_t key, double lo, double hi) {
  Tensor t = Tensor::empty(DType::F32, shape);
  RandomStream r(77, key, 0, 0);
  for (int64_t i = 0; i < t.num_elements(); ++i)
    t.data<float>()[i] = static_cast<float>(lo + (hi - lo) * r.uniform_double());
  return t;
}

struct Batch {
  std::vector<Tensor> inputs;
  Tensor target;
};

// Float inputs in [-1, 1), integer inputs (embedding ids) in [0, kIds); targets as the loss wants them:
// class labels, one-hot-like probabilities (rows that sum to 1), {0, 1} for binary_cross_entropy, else
// values in [-0.5, 0.5).
constexpr int64_t kIds = 4;  // the cases' embedding tables have at least this many rows
Batch make_batch(const ModelGraph& g, int64_t rows, uint64_t key) {
  Batch b;
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const bool ids = is_integer(g.values[g.inputs[k]].dtype);
    b.inputs.push_back(random_tensor(g.full_shape(g.inputs[k], rows), key * 10 + k, ids ? 0 : -1, ids ? kIds : 1));
    if (ids)
      for (int64_t i = 0; i < b.inputs.back().num_elements(); ++i)
        b.inputs.back().data<float>()[i] = std::floor(b.inputs.back().data<float>()[i]);
  }
  const GraphNode* loss = nullptr;
  for (const GraphNode& n : g.nodes)
    if (n.op == ModelOp::Loss) loss = &n;
  const Shape s = g.full_shape(g.target, rows);
  const LossKind kind = loss ? loss->attrs_as<LossAttrs>().kind : LossKind::Mse;
  const bool sparse = loss && loss->attrs_as<LossAttrs>().sparse.value_or(false);
  Tensor u = random_tensor(s, key * 10 + 9, 0, 1);
  float* t = u.data<float>();
  if (sparse) {
    const int64_t classes = g.values[loss->inputs[0]].shape.back();
    for (int64_t i = 0; i < u.num_elements(); ++i) t[i] = std::floor(t[i] * static_cast<float>(classes));
  } else if (kind == LossKind::CrossEntropy) {
    const int64_t c = s.back();
    for (int64_t r = 0; r < u.num_elements() / c; ++r) {
      float sum = 0;
      for (int64_t j = 0; j < c; ++j) sum += t[r * c + j];
      for (int64_t j = 0; j < c; ++j) t[r * c + j] /= sum;
    }
  } else if (kind == LossKind::BinaryCrossEntropy) {
    for (int64_t i = 0; i < u.num_elements(); ++i) t[i] = t[i] < 0.5f ? 0.0f : 1.0f;
  } else {
    for (int64_t i = 0; i < u.num_elements(); ++i) t[i] -= 0.5f;
  }
  b.target = u;
  return b;
}

// Every element within atol + rtol * (the larger of the two tensors' largest magnitude).
struct Tolerance {
  double rtol, atol;
};

void expect_close(const std::string& what, const float* got, const float* want, int64_t n, Tolerance tol) {
  double scale = 0;
  for (int64_t i = 0; i < n; ++i) scale = std::max({scale, std::fabs(double(want[i])), std::fabs(double(got[i]))});
  const double limit = tol.atol + tol.rtol * scale;
  int reported = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double diff = std::fabs(double(got[i]) - double(want[i]));
    if (!(diff <= limit) && reported++ < 3)
      ADD_FAILURE() << what << "[" << i << "]: gpu " << got[i] << ", reference " << want[i] << " (limit " << limit
                    << ")";
  }
}

// Per-element limits: got[i] within limit[i] of want[i].
void expect_within(const std::string& what, const float* got, const float* want, const std::vector<double>& limit) {
  int reported = 0;
  for (size_t i = 0; i < limit.size(); ++i) {
    const double diff = std::fabs(double(got[i]) - double(want[i]));
    if (!(diff <= limit[i]) && reported++ < 3)
      ADD_FAILURE() << what << "[" << i << "]: gpu " << got[i] << ", reference " << want[i] << " (limit " << limit[i]
                    << ")";
  }
}

// How far an fp32 Adam (or AdamW) step may move each weight of one tensor away from the reference's,
// given how far this step's gradients were from the reference's (`grad_diff`, element by element, already
// held to the gradients' bound). Adam divides by sqrt(v): a weight whose gradients have stayed near zero
// has a v near zero, and a rounding-level change of its gradient moves its update by up to about the rate
// itself. So each limit is `atol` plus, to first order and twice over, what the weight's gradient
// difference d does to its update
//   rate * m / (sqrt(v) + eps),  rate = lr * sqrt(1 - b2^t) / (1 - b1^t),
// through m (by (1 - b1) * d) and sqrt(v) (by at most sqrt(1 - b2) * d), from the reference's moments
// after the step. A wrong update (another beta, a missed bias correction, a wrong sign) moves weights
// whose gradients agree, which this holds to about `atol`.
std::vector<double> adam_weight_limits(const OptimizerConfig& c, const OptimizerSlots<float>& slots,
                                       const GraphValue& w, const std::vector<double>& grad_diff, double atol) {
  const double t = static_cast<double>(slots.iterations);
  const double rate = slots.last_lr * std::sqrt(1 - std::pow(c.beta2, t)) / (1 - std::pow(c.beta1, t));
  std::vector<double> limit(grad_diff.size(), atol);
  for (size_t i = 0; i < grad_diff.size(); ++i) {
    const double d = grad_diff[i];
    const double m = std::fabs(double(slots.m[static_cast<size_t>(w.offset) + i]));
    const double root = std::sqrt(double(slots.v[static_cast<size_t>(w.offset) + i])) + c.eps;
    limit[i] += 2 * rate * ((1 - c.beta1) * d / root + m * std::sqrt(1 - c.beta2) * d / (root * root));
  }
  return limit;
}

// The specs the kinds are drawn from: together they hold every node kind of model_ops.def and every loss
// (the coverage test below holds them to that).
struct Case {
  const char* name;
  std::string spec;
  int64_t rows;
  bool adam;  // Adam turns a rounding-level gradient into a step of about lr: weights get a looser bound
};

const char* kChess = R"(source s = tfrecord("x.tfrecord") { board: f32[8, 8, 24], flags: f32[10], score: f32[1] }
pipeline data = s | batch(32, drop_remainder = true)
model chess_net(board: f32[8, 8, 24], flags: f32[10]) -> f32[1] {
  x = board | conv2d(64, 3, padding = same) | relu | conv2d(64, 3, padding = same) | relu
  x = concat([flatten(x), flags])
  x | dense(256) | relu | dense(1) | tanh
}
train t = { data = data, model = chess_net(board, flags), loss = mse(score), optimizer = adam(lr = 1e-3), steps = 3)";

std::string chess(const std::string& precision) {
  return std::string(kChess) + (precision.empty() ? "" : ", precision = " + precision) + " }\n";
}

const char* kEveryLayer = R"(source s = tfrecord("x.tfrecord") { image: f32[12, 12, 3], label: i64 }
pipeline data = s | batch(6, drop_remainder = true)
model every(image: f32[12, 12, 3]) -> f32[4] {
  a = image | conv2d(8, 3, padding = same) | batch_norm | leaky_relu
  b = a | max_pool2d(2) | conv2d(8, 3, strides = 2, padding = valid) | gelu
  c = a | avg_pool2d(3, strides = 2, padding = same) | conv2d_transpose(6, 3, strides = 2, padding = same)
  d = c | conv2d(8, 3, padding = same, dilation = 2) | relu | dropout(0.25) | upsample2d(2)
  e = concat([global_avg_pool(b), global_max_pool(d)])
  e | dense(16) | batch_norm | layer_norm | tanh | dense(4) | softmax
}
train t = { data = data, model = every(image), loss = cross_entropy(label), optimizer = sgd(lr = 0.05, momentum = 0.9), steps = 3 }
)";

const char* kInnerSoftmax = R"(source s = tfrecord("x.tfrecord") { image: f32[6, 6, 3], label: i64 }
pipeline data = s | batch(4, drop_remainder = true)
model m(image: f32[6, 6, 3]) -> f32[3] {
  x = image | conv2d(4, 3, padding = same) | upsample2d(2, method = bilinear) | conv2d(4, 3, strides = 2)
  flatten(x) | dense(8) | softmax | dense(3) | softmax
}
train t = { data = data, model = m(image), loss = cross_entropy(label), optimizer = sgd(lr = 0.1), steps = 2 }
)";

// Two embedding tables (ids of rank 1 and 2, i32 and i64) into a dense head; adam.
const char* kEmbedding = R"(source s = tfrecord("x.tfrecord") { tokens: i64[6], grid: i64[2, 2], y: f32[2] }
pipeline data = s | map(e => { tokens: i32(e.tokens), grid: e.grid, y: e.y }) | batch(8, drop_remainder = true)
model m(tokens: i32[6], grid: i64[2, 2]) -> f32[2] {
  concat([tokens | embedding(5, 3) | flatten, grid | embedding(4, 2) | flatten]) | dense(2)
}
train t = { data = data, model = m(tokens, grid), loss = mse(y), optimizer = adam(lr = 1e-2), steps = 2 }
)";

// One small net per remaining loss: probabilities for cross_entropy, sigmoid outputs for
// binary_cross_entropy, mae and huber on a linear output; adamw with a schedule and clipping.
std::string loss_spec(const std::string& loss, const std::string& last, const std::string& optimizer) {
  return fmt::format(R"(source s = tfrecord("x.tfrecord") {{ x: f32[5, 5, 2], y: f32[3] }}
pipeline data = s | batch(8, drop_remainder = true)
model m(x: f32[5, 5, 2]) -> f32[3] {{
  h = x | conv2d(4, 2, strides = 2, padding = same) | relu | flatten
  h | dense(6) | tanh | dense(3){}
}}
train t = {{ data = data, model = m(x), loss = {}(y), optimizer = {}, steps = 2 }}
)",
                     last, loss, optimizer);
}

std::vector<Case> cases() {
  return {
      {"chess fp32", chess(""), 32, true},
      {"every layer", kEveryLayer, 6, false},
      {"inner softmax, bilinear", kInnerSoftmax, 4, false},
      {"embedding", kEmbedding, 8, true},
      {"cross_entropy on probabilities", loss_spec("cross_entropy", " | softmax", "sgd(lr = 0.1)"), 8, false},
      {"binary_cross_entropy", loss_spec("binary_cross_entropy", " | sigmoid", "sgd(lr = 0.1, momentum = 0.5)"), 8,
       false},
      {"mae, adamw, schedule, clipnorm",
       loss_spec("mae", "",
                 "adamw(lr = cosine_decay(1e-3, 8, alpha = 0.1, warmup_target = 1e-2, warmup_steps = 2), "
                 "global_clipnorm = 0.05)"),
       8, true},
      {"huber, adamw weight decay", loss_spec("huber", "", "adamw(lr = 1e-2, weight_decay = 0.05)"), 8, true},
      {"chess mixed_bf16", chess("mixed_bf16"), 32, true},
      {"chess mixed_fp16", chess("mixed_fp16"), 32, true},
  };
}

// The GPU executor's state made the reference's (weights, state, optimizer slots, loss scale).
void copy_state(ReferenceExecutor<float>& from, GpuExecutor& to) {
  to.buffers() = from.buffers();
  to.optimizer_slots() = from.optimizer_slots();
  if (from.loss_scale()) *to.loss_scale() = *from.loss_scale();
  to.sync_to_device();
}

// Every node kind and every loss appears in the cases: a kind added to model_ops.def without a GPU test
// fails here.
TEST(GpuTraining, CasesCoverEveryKindAndLoss) {
  std::set<ModelOp> kinds;
  std::set<std::string> losses;
  for (const Case& c : cases()) {
    TrainProgram t = compile_program(c.spec);
    for (const GraphNode& n : t.step.nodes) {
      kinds.insert(n.op);
      if (n.op == ModelOp::Loss) losses.insert(loss_kind_name(n.attrs_as<LossAttrs>().kind));
    }
  }
  for (const ModelOpInfo& info : all_model_ops()) EXPECT_TRUE(kinds.count(info.op)) << info.name << " is in no case";
  for (LossKind k : all_loss_kinds())
    EXPECT_TRUE(losses.count(loss_kind_name(k))) << loss_kind_name(k) << " is in no case";
}

// Each step starts from the reference's state, so a difference is that step's, not an accumulation:
// the loss within 1e-5 relative (docs/design.md's fp32 bound), the output likewise, the gradients within
// 1e-4 of each tensor's largest element (+3e-6 for the exactly-zero bias gradients before batch_norm that
// f32 sums leave at about 1e-6), the weights after the update within 1e-4 relative for SGD and, for Adam,
// within 1e-5 absolute plus what the weight's own gradient difference can do to its update
// (adam_weight_limits: a weight whose gradients stayed near zero moves by up to about the rate on a
// rounding-level change of its gradient).
// Mixed precision: the CPU's mixed bounds (2e-3 bf16, 5e-4 fp16 on losses; 1e-2 of the largest element
// for gradients and weights): a rounding-level difference can flip a value's 16-bit rounding.
TEST(GpuTraining, EveryKindAgreesWithReferenceStepByStep) {
  std::cout << "[ gpu-train ] device: " << device_name() << "\n";
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    TrainProgram t = compile_program(c.spec);
    const ModelGraph& g = t.step;
    ASSERT_FALSE(g.nodes.empty());
    const bool bf16 = g.precision == Precision::MixedBf16, fp16 = g.precision == Precision::MixedFp16;
    const Tolerance loss_tol = bf16 ? Tolerance{2e-3, 1e-6} : fp16 ? Tolerance{5e-4, 1e-6} : Tolerance{1e-5, 1e-7};
    const Tolerance grad_tol = bf16 || fp16 ? Tolerance{1e-2, 1e-5} : Tolerance{1e-4, 3e-6};
    const Tolerance weight_tol = bf16 || fp16 ? Tolerance{1e-2, 1e-5}
                                 : c.adam     ? Tolerance{0, 1e-5}
                                              : Tolerance{1e-4, 1e-6};
    const bool adam_bounds = c.adam && !bf16 && !fp16;
    OptimizerConfig optimizer;
    for (const GraphNode& n : g.nodes)
      if (n.op == ModelOp::OptimizerStep) optimizer = OptimizerConfig::from_node(n);
    int64_t adam_weights = 0, adam_loose = 0;  // weights checked by adam_weight_limits, those above 10x atol
    ReferenceExecutor<float> ref(g, 5);
    GpuExecutor gpu(g, 5, test_device());
    ASSERT_EQ(ref.buffers().params, gpu.buffers().params);  // the same initialization
    for (int s = 0; s < 3; ++s) {
      SCOPED_TRACE("step " + std::to_string(s + 1));
      copy_state(ref, gpu);
      Batch b = make_batch(g, c.rows, static_cast<uint64_t>(s));
      const float lr = static_cast<float>(ref.run(b.inputs, &b.target, s, OpCategory::Backward));
      const float lg = static_cast<float>(gpu.run(b.inputs, &b.target, s, OpCategory::Backward));
      expect_close("loss", &lg, &lr, 1, loss_tol);
      const Tensor out = gpu.host_value(g.output);
      const Tensor& want = ref.value(g.output);
      ASSERT_EQ(out.num_elements(), want.num_elements());
      expect_close("output", out.data<float>(), want.data<float>(), want.num_elements(), loss_tol);
      gpu.sync_to_host();
      std::vector<std::vector<double>> grad_diffs(g.params.size());
      for (size_t k = 0; k < g.params.size(); ++k) {
        const GraphValue& v = g.values[g.params[k]];
        grad_diffs[k].assign(static_cast<size_t>(v.elements_per_example()), 0.0);
        if (g.param_grads[k] < 0) continue;
        const float* got = gpu.buffers().grads.data() + v.offset;
        const float* want = ref.buffers().grads.data() + v.offset;
        expect_close("gradient of " + v.name, got, want, v.elements_per_example(), grad_tol);
        for (size_t i = 0; i < grad_diffs[k].size(); ++i)
          grad_diffs[k][i] = std::fabs(double(got[i]) - double(want[i]));
      }
      ref.resume(s, OpCategory::Update);
      gpu.resume(s, OpCategory::Update);
      gpu.sync_to_host();
      for (size_t k = 0; k < g.params.size(); ++k) {
        const GraphValue& v = g.values[g.params[k]];
        const float* got = gpu.buffers().params.data() + v.offset;
        const float* want = ref.buffers().params.data() + v.offset;
        if (adam_bounds) {
          const std::vector<double> limits =
              adam_weight_limits(optimizer, ref.optimizer_slots(), v, grad_diffs[k], weight_tol.atol);
          expect_within("after the step, " + v.name, got, want, limits);
          adam_weights += static_cast<int64_t>(limits.size());
          adam_loose += std::count_if(limits.begin(), limits.end(), [&](double l) { return l > 10 * weight_tol.atol; });
        } else expect_close("after the step, " + v.name, got, want, v.elements_per_example(), weight_tol);
      }
      for (int st : g.states) {
        const GraphValue& v = g.values[st];
        expect_close("after the step, " + v.name, gpu.buffers().states.data() + v.offset,
                     ref.buffers().states.data() + v.offset, v.elements_per_example(), weight_tol);
      }
      EXPECT_EQ(gpu.optimizer_slots().iterations, ref.optimizer_slots().iterations);
      EXPECT_EQ(gpu.optimizer_slots().last_lr, ref.optimizer_slots().last_lr);
      if (ref.optimizer_slots().last_grad_norm > 0) {
        EXPECT_NEAR(gpu.optimizer_slots().last_grad_norm, ref.optimizer_slots().last_grad_norm,
                    1e-4 * ref.optimizer_slots().last_grad_norm);
      }
      if (ref.loss_scale()) {
        EXPECT_EQ(gpu.loss_scale()->scale, ref.loss_scale()->scale);
        EXPECT_EQ(gpu.loss_scale()->skipped, ref.loss_scale()->skipped);
      }
    }
    std::cout << fmt::format(
        "[ gpu-train ] {}: 3 steps from the reference's state agree{}; {}\n", c.name,
        adam_weights > 0 ? fmt::format(" (Adam: {} of {} weight bounds above 1e-4)", adam_loose, adam_weights) : "",
        gpu.description());
  }
}

// 20 steps each on its own (batches of 32), from the same initial weights: the whole trajectories stay within the CPU's
// bounds for fast-vs-reference (docs/design.md): fp32 losses within 1e-4 relative, weights RMS 1e-5;
// mixed precision losses 2e-3 (bf16) and 5e-4 (fp16) relative, weights RMS 1e-4.
// (The host emulation's convolutions are plain loops: there it takes 6 steps of 8 examples, which CI runs.)
TEST(GpuTraining, ChessTrajectoriesStayWithinTheCpuBounds) {
  const bool emulated = test_device()->emulated();
  const int steps = emulated ? 6 : 20;
  const int64_t rows = emulated ? 8 : 32;
  for (const char* precision : {"", "mixed_bf16", "mixed_fp16"}) {
    SCOPED_TRACE(precision[0] ? precision : "fp32");
    TrainProgram t = compile_program(chess(precision));
    const ModelGraph& g = t.step;
    const bool mixed = precision[0] != 0;
    ReferenceExecutor<float> ref(g, 11);
    GpuExecutor gpu(g, 11, test_device());
    for (int s = 0; s < steps; ++s) {
      Batch b = make_batch(g, rows, 100 + static_cast<uint64_t>(s));
      const double lr = ref.run(b.inputs, &b.target, s, OpCategory::Update);
      const double lg = gpu.run(b.inputs, &b.target, s, OpCategory::Update);
      const double bound = std::string(precision) == "mixed_bf16" ? 2e-3 : mixed ? 5e-4 : 1e-4;
      EXPECT_NEAR(lg, lr, bound * std::fabs(lr) + 1e-7) << "step " << s + 1;
    }
    gpu.sync_to_host();
    double sum = 0;
    const auto& a = gpu.buffers().params;
    const auto& w = ref.buffers().params;
    for (size_t i = 0; i < a.size(); ++i) sum += (double(a[i]) - w[i]) * (double(a[i]) - w[i]);
    EXPECT_LT(std::sqrt(sum / static_cast<double>(a.size())), mixed ? 1e-4 : 1e-5);
  }
}

// mixed_fp16's overflow path, decided on the device: a learning rate and inputs that overflow f16 in the
// backward pass skip the step there (weights untouched), halve the scale, and the host reads the same
// scale and skip count the reference's LossScale has.
TEST(GpuTraining, Fp16OverflowSkipsTheStepOnTheDevice) {
  TrainProgram t = compile_program(chess("mixed_fp16"));
  const ModelGraph& g = t.step;
  ReferenceExecutor<float> ref(g, 3);
  GpuExecutor gpu(g, 3, test_device());
  Batch b = make_batch(g, 32, 7);
  // Targets far from the tanh output: the loss gradient times the scale (2^15) is far past f16's 65504.
  for (int64_t i = 0; i < b.target.num_elements(); ++i) b.target.data<float>()[i] *= 1e5f;
  const std::vector<float> before = gpu.buffers().params;
  ref.run(b.inputs, &b.target, 0, OpCategory::Update);
  gpu.run(b.inputs, &b.target, 0, OpCategory::Update);
  ASSERT_TRUE(ref.loss_scale()->last_skipped) << "the case must overflow on the reference too";
  EXPECT_TRUE(gpu.loss_scale()->last_skipped);
  EXPECT_EQ(gpu.loss_scale()->scale, ref.loss_scale()->scale);
  EXPECT_EQ(gpu.loss_scale()->skipped, 1);
  EXPECT_EQ(gpu.optimizer_slots().iterations, 0);
  gpu.sync_to_host();
  EXPECT_EQ(gpu.buffers().params, before);
}

// The same seed and batches give the same weights bit for bit (fixed-order reductions, deterministic
// library engines), and a state taken to the host and back continues exactly as if it never left.
TEST(GpuTraining, RepeatableAndStateRoundTripsBitForBit) {
  TrainProgram t = compile_program(kEveryLayer);
  const ModelGraph& g = t.step;
  auto train = [&](int steps, GpuExecutor& ex, int from) {
    for (int s = from; s < from + steps; ++s) {
      Batch b = make_batch(g, 6, static_cast<uint64_t>(s));
      ex.run(b.inputs, &b.target, s, OpCategory::Update);
    }
  };
  GpuExecutor a(g, 9, test_device()), b(g, 9, test_device());
  train(4, a, 0);
  train(2, b, 0);
  b.sync_to_host();
  // c's own device state first (a step on another batch), then b's state from the host: what follows must
  // not depend on anything c kept on the device. The seed keys dropout, so it is the same.
  GpuExecutor c(g, 9, test_device());
  train(1, c, 50);
  c.buffers() = b.buffers();
  c.optimizer_slots() = b.optimizer_slots();
  c.sync_to_device();
  train(2, c, 2);
  a.sync_to_host();
  c.sync_to_host();
  EXPECT_EQ(a.buffers().params, c.buffers().params);
  EXPECT_EQ(a.buffers().states, c.buffers().states);
  EXPECT_EQ(a.optimizer_slots().m, c.optimizer_slots().m);
}

}  // namespace
}  // namespace pipec
