// The GPU executor's step kernels (runtime/train/gpu/kernels/, launched by node_kernels.cpp) compiled as
// host C++ and run through launch_node with the HostKernelLauncher, against the reference executor on
// the same node: random single-node graphs of every kind with random shapes and attributes, and every
// node of whole compiled steps (fp32, mixed_bf16, mixed_fp16) in place.
//
// Tolerances. On the host the kernels call the reference's own libm and repeat its arithmetic in its
// order (f64 accumulators, fused multiply-add off on both sides), so every output that is not a sum over
// rows must be the reference's bit for bit. The sums over rows (kernel and bias gradients, batch_norm's
// backward sums, layer_norm's dgamma and dbeta, the loss) are f64 partial sums over fixed blocks of rows
// added in block order: the same f64 sum regrouped, whose error (about rows x 2^-53 of the sum of
// magnitudes) is far below the f32 rounding of the result, so they may differ from the reference by the
// rounding of the last f32 bit: within 2^-22 of the tensor's largest magnitude (two f32 ulps of its
// largest element). With a single block they are bit-equal too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/train/gpu/host_step_kernels.h"
#include "runtime/train/gpu/node_kernels.h"
#include "runtime/train/reference/reference_executor.h"
#include "runtime/train/step_state.h"
#include "tests/unit/gpu_step_cases.h"
#include "tests/unit/train_util.h"

namespace pipec {
namespace {

using namespace step_cases;

template <class T>
gpu::DevPtr dev(T* p) {
  return reinterpret_cast<gpu::DevPtr>(p);
}

// The operands of node `n` of graph `g` for `rows` examples; the buffers are the caller's to set.
gpu::NodeOperands operands(const ModelGraph& g, const GraphNode& n, int64_t rows) {
  gpu::NodeOperands o;
  o.graph = &g;
  o.node = &n;
  o.rows = rows;
  return o;
}

// Outputs that are sums over the rows (see the file comment); every other output must be bit-equal.
bool summed_over_rows(ModelOp op, size_t output) {
  switch (op) {
    case ModelOp::Conv2dBackwardKernel:
    case ModelOp::Conv2dTransposeBackwardKernel:
    case ModelOp::DenseBackwardKernel:
    case ModelOp::BiasBackward:
    case ModelOp::BatchNormBackward:  // dx too: it is made from the two sums
    case ModelOp::Loss: return true;
    case ModelOp::LayerNormBackward: return output > 0;  // dgamma, dbeta (dx sums within a row only)
    default: return false;
  }
}

::testing::AssertionResult agree(const std::string& what, const float* got, const float* want, int64_t n, bool summed) {
  double scale = 0;
  for (int64_t i = 0; i < n; ++i) scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
  const double limit = std::ldexp(scale, -22);
  int bad = 0;
  std::string report;
  for (int64_t i = 0; i < n; ++i) {
    bool ok;
    if (summed) ok = std::fabs(static_cast<double>(got[i]) - want[i]) <= limit;
    else ok = std::memcmp(&got[i], &want[i], sizeof(float)) == 0 || (std::isnan(got[i]) && std::isnan(want[i]));
    if (!ok && bad++ < 4)
      report += fmt::format("\n  [{}]: kernels {:.9g}, reference {:.9g}{}", i, got[i], want[i],
                            summed ? fmt::format(" (limit {:.3g})", limit) : " (must be bit-equal)");
  }
  if (!bad) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << bad << " of " << n << " differ" << report;
}

// The reference executor with every node but expr and optimizer_step also run through launch_node on
// copies of its inputs, and the results compared with the reference's.
class KernelChecker {
 public:
  KernelChecker(const ModelGraph& g, uint64_t seed) : s_(g, seed, "the kernel checker") {}

  std::map<ModelOp, int> checked;  // nodes compared, per kind
  gpu::HostKernelLauncher launcher;

  FlatBuffers<float>& buffers() { return s_.buffers(); }
  double run(const std::vector<Tensor>& inputs, const Tensor* target, uint64_t step, OpCategory last) {
    return s_.run(inputs, target, step, last, nullptr,
                  [this](const GraphNode& n, int64_t rows, uint64_t st) { check_node(n, rows, st); });
  }

 private:
  void check_node(const GraphNode& n, int64_t rows, uint64_t step) {
    if (n.op == ModelOp::Expr || n.op == ModelOp::OptimizerStep) {
      run_reference_node(s_, n, rows, step);
      return;
    }
    const ModelGraph& g = s_.graph();
    auto count = [&](int v) { return shape_num_elements(g.full_shape(v, rows)); };
    std::vector<std::vector<float>> ins, outs;
    for (int v : n.inputs) {
      if (g.values[v].dtype == DType::F32) ins.emplace_back(s_.data(v), s_.data(v) + count(v));
      else ins.push_back(value_bytes(s_.value(v), g.values[v].dtype));  // embedding's i64 ids
    }
    // NaN where nothing is written: an element a kernel leaves out cannot pass.
    for (int v : n.outputs) outs.emplace_back(count(v), std::nanf(""));
    std::vector<double> scratch(gpu::node_scratch_bytes(g, n, rows) / sizeof(double) + 1);
    uint64_t step_on_device[2] = {step, 0};  // the step, the batch's first example
    const LossScale* ls = s_.loss_scale();
    float loss_scale = ls ? static_cast<float>(ls->scale) : 0.0f;
    gpu::NodeOperands o = operands(g, n, rows);
    o.step = step;
    o.seed = s_.seed();
    o.step_counter = dev(step_on_device);
    o.scratch = dev(scratch.data());
    o.loss_scale = ls ? dev(&loss_scale) : 0;
    for (auto& in : ins) o.inputs.push_back(dev(in.data()));
    for (auto& out : outs) o.outputs.push_back(dev(out.data()));
    gpu::launch_node(launcher, o);
    run_reference_node(s_, n, rows, step);
    const std::string what = fmt::format("{} (node of layer `{}`)", model_op_name(n.op), n.layer);
    for (size_t k = 0; k < n.outputs.size(); ++k)
      EXPECT_TRUE(agree(fmt::format("{} output {}", what, k), outs[k].data(), s_.data(n.outputs[k]),
                        count(n.outputs[k]), summed_over_rows(n.op, k)));
    if (n.op == ModelOp::MovingAverage) {  // in place
      EXPECT_TRUE(agree(what + " state", ins[0].data(), s_.data(n.inputs[0]), count(n.inputs[0]), false));
    }
    ++checked[n.op];
  }

  StepState<float> s_;
};

// Runs a case through the checker: the kernels against the reference on its node (and nothing else).
void check_case(const Case& c, std::map<ModelOp, int>& checked, std::map<std::string, int64_t>& launches) {
  SCOPED_TRACE(c.what);
  KernelChecker checker(c.g, c.seed);
  std::mt19937_64 rng(c.seed);
  for (float& p : checker.buffers().params) p = static_cast<float>(std::uniform_real_distribution<double>(-1, 1)(rng));
  for (float& s : checker.buffers().states) s = static_cast<float>(std::uniform_real_distribution<double>(-1, 1)(rng));
  std::vector<Tensor> inputs;
  for (size_t k = 0; k < c.g.inputs.size(); ++k)
    inputs.push_back(draw(c.dists[k], c.g.full_shape(c.g.inputs[k], c.rows), c.classes, rng));
  Tensor target;
  if (c.g.target >= 0) target = draw(c.target_dist, c.g.full_shape(c.g.target, c.rows), c.classes, rng);
  checker.run(inputs, c.g.target >= 0 ? &target : nullptr, c.step, OpCategory::Update);
  for (const auto& [op, n] : checker.checked) checked[op] += n;
  for (const auto& [name, n] : checker.launcher.launches()) launches[name] += n;
}

TEST(GpuStepKernels, EveryKindAgreesWithTheReferenceOnRandomNodes) {
  Random r(20261126);
  std::map<ModelOp, int> checked;
  std::map<std::string, int64_t> launches;
  for (const ModelOpInfo& info : all_model_ops()) {
    if (info.op == ModelOp::Expr || info.op == ModelOp::OptimizerStep) continue;
    std::vector<Case> cases = cases_for(info.op, r);
    // The coverage rule: a kind added to model_ops.def needs cases here and kernels in launch_node.
    ASSERT_FALSE(cases.empty()) << "no random cases for " << info.name << " (tests/unit/gpu_step_cases.h)";
    for (const Case& c : cases) check_case(c, checked, launches);
    EXPECT_GE(checked[info.op], static_cast<int>(cases.size())) << info.name << " was not run through launch_node";
  }
  // Every node kernel of step_kernels.def ran (the optimizer's and the layout transposes have tests of
  // their own: gpu_step_optimizer_test.cpp; bias_add follows cuDNN's convolutions in library_nodes.cpp:
  // gpu_executor_libraries_test.cpp).
  const std::set<std::string> elsewhere = {
      "grad_norm_partial", "grad_norm_finish", "grad_finite_partial", "all_nonzero",  "loss_scale_update",
      "unscale_gradients", "optimizer_update", "hwio_to_krsc",        "krsc_to_hwio", "bias_add"};
  for (std::string_view name : gpu::step_kernel_names()) {
    if (elsewhere.count(std::string(name))) continue;
    EXPECT_GT(launches[std::string(name)], 0) << name << " never ran";
  }
}

// launch_node refuses what it does not compute, naming the node, rather than skipping it.
TEST(GpuStepKernels, RefusesWhatItDoesNotCompute) {
  Random r(7);
  gpu::HostKernelLauncher launcher;
  auto expect_refused = [&](Case c, const std::string& words) {
    SCOPED_TRACE(c.what);
    const GraphNode& n = c.g.nodes.at(0);
    std::vector<std::vector<float>> buffers;
    gpu::NodeOperands o = operands(c.g, n, c.rows);
    std::vector<double> scratch(1 << 16);
    o.scratch = dev(scratch.data());
    for (int v : n.inputs) {
      buffers.emplace_back(shape_num_elements(c.g.full_shape(v, c.rows)) + 1);
      o.inputs.push_back(dev(buffers.back().data()));
    }
    for (int v : n.outputs) {
      buffers.emplace_back(shape_num_elements(c.g.full_shape(v, c.rows)) + 1);
      o.outputs.push_back(dev(buffers.back().data()));
    }
    try {
      gpu::launch_node(launcher, o);
      ADD_FAILURE() << "launched, expected an error about " << words;
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(model_op_name(n.op)), std::string::npos) << e.what();
    }
  };
  // Attributes are typed (model_attrs.def): a node holding another kind's struct is refused by name.
  Case swapped = conv_case(ModelOp::Conv2d, r);
  swapped.g.nodes[0].attrs = Pool2dAttrs{{2, 2}, {2, 2}, Padding::Valid};
  expect_refused(swapped, "holds Pool2dAttrs, not Conv2dAttrs");
  Case dropout = dropout_case(r);
  dropout.g.nodes[0].attrs_as<DropoutAttrs>().inference = Flag{};
  expect_refused(dropout, "step counter");
  Case scaled = loss_case(ModelOp::LossBackward, LossKind::Mse, r);
  scaled.g.nodes[0].attrs_as<LossAttrs>().loss_scale = LossScaling::Dynamic;
  expect_refused(scaled, "loss scale");
  Case opt = loss_case(ModelOp::Loss, LossKind::Mse, r);
  opt.g.nodes[0].op = ModelOp::OptimizerStep;
  expect_refused(opt, "launch_optimizer_step");
}

// A class label that is not a class: the reference throws; the kernels make that loss NaN (the executor
// reads the loss back every step), never a number.
TEST(GpuStepKernels, AClassLabelOutOfRangeMakesTheLossNaN) {
  Builder b("cross_entropy with a bad label", 2);
  int p = b.input({3}), t = b.target({}, Dist::Labels, 3);
  int loss = b.value({}, false), grad = b.value({3});
  b.node(ModelOp::Loss, {p, t}, {loss},
         LossAttrs{LossKind::CrossEntropy, /*from_logits=*/true, /*sparse=*/true, {}, {}});
  std::mt19937_64 rng(1);
  Case c = b.done(rng);
  GraphNode backward = c.g.nodes[0];
  backward.op = ModelOp::LossBackward;
  backward.outputs = {grad};
  std::vector<float> pred = {0.5f, -1, 2, 1, 0, 0}, labels = {1, 3}, out(1), dpred(6);
  std::vector<double> scratch(gpu::node_scratch_bytes(c.g, c.g.nodes[0], 2) / sizeof(double) + 1);
  gpu::HostKernelLauncher launcher;
  gpu::NodeOperands o = operands(c.g, c.g.nodes[0], 2);
  o.inputs = {dev(pred.data()), dev(labels.data())};
  o.outputs = {dev(out.data())};
  o.scratch = dev(scratch.data());
  gpu::launch_node(launcher, o);
  EXPECT_TRUE(std::isnan(out[0]));
  o.node = &backward;
  o.outputs = {dev(dpred.data())};
  gpu::launch_node(launcher, o);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(std::isnan(dpred[i])) << i;  // example 0's label is fine
  for (int i = 3; i < 6; ++i) EXPECT_TRUE(std::isnan(dpred[i])) << i;
}

// An embedding id that names no row: the reference stops naming the layer and the id; the forward kernel
// makes that position's row NaN (so the loss is NaN, which stops the run) and the backward kernel leaves
// the id out, the other rows' gradients being what they are.
TEST(GpuStepKernels, AnEmbeddingIdOutOfRangeMakesItsRowNaN) {
  Builder b("embedding with a bad id", 2);
  const int ids = b.ids({2}, 3);
  const int table = b.param({3, 2});
  const int y = b.value({2, 2}), dtable = b.value({3, 2}, false);
  b.node(ModelOp::Embedding, {ids, table}, {y}, EmbeddingAttrs{3, 2});
  std::mt19937_64 rng(1);
  Case c = b.done(rng);
  c.g.nodes[0].layer = "tokens";
  std::vector<int64_t> id = {1, 3, 2, -1};  // example 0: 1, 3 (bad); example 1: 2, -1 (bad)
  std::vector<float> w = {10, 11, 20, 21, 30, 31}, out(8), dy = {1, 2, 3, 4, 5, 6, 7, 8}, dw(6);
  gpu::HostKernelLauncher launcher;
  gpu::NodeOperands o = operands(c.g, c.g.nodes[0], 2);
  o.inputs = {dev(id.data()), dev(w.data())};
  o.outputs = {dev(out.data())};
  gpu::launch_node(launcher, o);
  EXPECT_EQ(out[0], 20);
  EXPECT_EQ(out[1], 21);
  EXPECT_TRUE(std::isnan(out[2]) && std::isnan(out[3]));
  EXPECT_EQ(out[4], 30);
  EXPECT_EQ(out[5], 31);
  EXPECT_TRUE(std::isnan(out[6]) && std::isnan(out[7]));
  GraphNode backward = c.g.nodes[0];
  backward.op = ModelOp::EmbeddingBackward;
  backward.inputs = {ids, y};  // ids, dy
  backward.outputs = {dtable};
  std::vector<double> scratch(gpu::node_scratch_bytes(c.g, backward, 2) / sizeof(double) + 1);
  o.node = &backward;
  o.inputs = {dev(id.data()), dev(dy.data())};
  o.outputs = {dev(dw.data())};
  o.scratch = dev(scratch.data());
  gpu::launch_node(launcher, o);
  EXPECT_EQ(dw, (std::vector<float>{0, 0, 1, 2, 5, 6}));
  // The reference names the layer, the example and the id.
  StepState<float> s(c.g, 1, "test");
  Tensor fed = Tensor::empty(DType::F32, {2, 2});
  for (int i = 0; i < 4; ++i) fed.data<float>()[i] = static_cast<float>(id[static_cast<size_t>(i)]);
  try {
    s.run({fed}, nullptr, 0, OpCategory::Forward, nullptr,
          [&](const GraphNode& n, int64_t rows, uint64_t step) { run_reference_node(s, n, rows, step); });
    ADD_FAILURE() << "the reference ran a bad id";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("embedding layer `tokens`: example 0 of the batch has id 3 (position 1 of "
                                         "the example), not one of 0..2 (input_dim = 3)"),
              std::string::npos)
        << e.what();
  }
}

// ---- whole compiled steps, every node in place ----

// Every layer kind with kernels in one net (tests/unit/train_fast_executor_test.cpp's), with a fused relu
// after the dense layer and a bilinear upsampling.
const char* kEveryLayerSpec = R"(source s = tfrecord("x.tfrecord") { image: f32[12, 12, 3], label: i64 }
pipeline data = s | batch(6, drop_remainder = true)
model every(image: f32[12, 12, 3]) -> f32[4] {
  a = image | conv2d(8, 3, padding = same) | batch_norm | leaky_relu
  b = a | max_pool2d(2) | conv2d(8, 3, strides = 2, padding = valid) | gelu
  c = a | avg_pool2d(3, strides = 2, padding = same) | conv2d_transpose(6, 3, strides = 2, padding = same) | relu
  d = c | conv2d(8, 3, padding = same, dilation = 2) | relu | dropout(0.25) | upsample2d(2, method = bilinear)
  e = concat([global_avg_pool(b), global_max_pool(d)])
  e | dense(16) | relu | batch_norm | layer_norm | tanh | dense(4) | softmax
}
train t = { data = data, model = every(image), loss = cross_entropy(label), optimizer = sgd(lr = 0.05, momentum = 0.9), steps = 2, precision = PRECISION }
)";

TEST(GpuStepKernels, EveryNodeOfCompiledStepsAgreesInPlace) {
  for (const char* precision : {"fp32", "mixed_bf16", "mixed_fp16"}) {
    SCOPED_TRACE(precision);
    std::string spec = kEveryLayerSpec;
    spec.replace(spec.find("PRECISION"), 9, precision);
    TrainProgram t = testing::compile_train(spec);
    ASSERT_FALSE(t.step.nodes.empty());
    const ModelGraph& g = t.step;
    KernelChecker checker(g, 11);
    for (uint64_t step = 0; step < 2; ++step) {
      const int64_t rows = 6;
      std::vector<Tensor> inputs = {testing::random_tensor(DType::F32, g.full_shape(g.inputs[0], rows), step)};
      Tensor labels = testing::random_tensor(DType::F64, g.full_shape(g.target, rows), step + 100, 0, 4);
      Tensor target = Tensor::empty(DType::F32, labels.shape());
      for (int64_t i = 0; i < labels.num_elements(); ++i)
        target.data<float>()[i] = static_cast<float>(std::floor(labels.data<double>()[i]));
      checker.run(inputs, &target, step, OpCategory::Update);
    }
    // Every kind of the step but expr and the optimizer went through the kernels, each node every step.
    std::map<ModelOp, int> nodes;
    for (const GraphNode& n : g.nodes)
      if (n.op != ModelOp::Expr && n.op != ModelOp::OptimizerStep) nodes[n.op] += 2;
    EXPECT_EQ(checker.checked, nodes);
    EXPECT_GE(nodes.size(), 25u);
    EXPECT_GT(nodes[ModelOp::Conv2dTransposeBackwardKernel], 0);
    EXPECT_TRUE(std::any_of(g.nodes.begin(), g.nodes.end(), [](const GraphNode& n) {
      return fused_activation(n.attrs).has_value();
    })) << "no fused relu in the step";
    EXPECT_EQ(nodes[ModelOp::Round] > 0, std::string(precision) != "fp32");
  }
}

}  // namespace
}  // namespace pipec
