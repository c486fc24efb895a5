// The GPU executor's library path (runtime/train/gpu/library_nodes.h: conv2d and conv2d_transpose on
// cuDNN, dense on cuBLASLt, the KRSC copies of Keras' kernels and the gradients moved back, bias and
// fused relu after cuDNN, cuBLASLt's epilogues) on the host emulation, with the recording fakes of the
// two libraries (tests/unit/cuda_library_fakes.h), which compute what their descriptors describe on host
// pointers: every conv and dense node of a step goes through the calls a GPU makes, and the step must
// still equal the reference executor's. On a GPU, tests/gpu/gpu_train_test.cpp runs the real libraries.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "runtime/train/gpu/gpu_executor.h"
#include "runtime/train/gpu/host_step_device.h"
#include "runtime/train/gpu/tf32_exact_nodes.h"
#include "runtime/train/reference/reference_executor.h"
#include "tests/unit/cuda_library_fakes.h"
#include "tests/unit/train_util.h"

namespace pipec {
namespace {

// The chess net, small, with SGD.
std::string chess_spec(const std::string& precision = "fp32") {
  return testing::chess_net_spec(16, 16, 32, "optimizer = sgd(lr = 0.05), steps = 2, precision = " + precision);
}

// Strided, valid and dilated convolutions, a transposed one with `same` padding at stride 2 (the odd pad
// at the end), batch_norm between: every conv node kind with asymmetric pads.
const char* kConvKinds = R"(source s = tfrecord("x.tfrecord") { image: f32[9, 9, 3], y: f32[4] }
pipeline data = s | batch(4, drop_remainder = true)
model m(image: f32[9, 9, 3]) -> f32[4] {
  a = image | conv2d(6, 3, strides = 2, padding = same) | batch_norm | relu
  b = a | conv2d_transpose(5, 3, strides = 2, padding = same) | conv2d(4, 3, padding = valid, dilation = 2)
  flatten(b) | dense(4)
}
train t = { data = data, model = m(image), loss = mse(y), optimizer = sgd(lr = 0.05, momentum = 0.9), steps = 2 }
)";

void expect_close(const std::string& what, const float* got, const float* want, int64_t n, double rtol, double atol) {
  double scale = 0;
  for (int64_t i = 0; i < n; ++i) scale = std::max({scale, std::fabs(double(want[i])), std::fabs(double(got[i]))});
  const double limit = atol + rtol * scale;
  int reported = 0;
  for (int64_t i = 0; i < n; ++i)
    if (!(std::fabs(double(got[i]) - double(want[i])) <= limit) && reported++ < 3)
      ADD_FAILURE() << what << "[" << i << "]: gpu " << got[i] << ", reference " << want[i] << " (limit " << limit
                    << ")";
}

// Two steps from the same initial weights: each step's loss within 1e-5 relative and the gradients of the
// first within 1e-4 of each tensor's largest element (the fakes sum in f64 in their own order, the
// reference in f64 in its order, both rounded to f32 at the end: a few ulp); the weights after SGD within
// 1e-5 relative.
void run_case(const std::string& spec, int64_t rows, int expected_conv_nodes_per_step) {
  TrainProgram t = testing::compile_train(spec);
  const ModelGraph& g = t.step;
  ASSERT_FALSE(g.nodes.empty());
  testing::FakeCudnn cudnn;
  testing::FakeCublasLt cublaslt;
  gpu::GpuLibraries libs;
  libs.cudnn = &cudnn.api();
  libs.cublaslt = &cublaslt.api();
  libs.cudnn_version = "fake";
  libs.cublaslt_version = "fake";
  ReferenceExecutor<float> ref(g, 4);
  gpu::GpuExecutor gpu(g, 4, gpu::make_host_emulation_device(libs));
  int dense_nodes = 0;
  for (const GraphNode& n : g.nodes)
    dense_nodes +=
        n.op == ModelOp::Dense || n.op == ModelOp::DenseBackwardInput || n.op == ModelOp::DenseBackwardKernel;
  for (int s = 0; s < 2; ++s) {
    SCOPED_TRACE("step " + std::to_string(s + 1));
    std::vector<Tensor> inputs;
    for (size_t k = 0; k < g.inputs.size(); ++k)
      inputs.push_back(testing::random_tensor(DType::F32, g.full_shape(g.inputs[k], rows), 40 + 10 * s + k));
    Tensor target = testing::random_tensor(DType::F32, g.full_shape(g.target, rows), 90 + s, -0.5, 0.5);
    const size_t execs_before = std::count_if(cudnn.calls.begin(), cudnn.calls.end(), [](const testing::CudnnCall& c) {
      return c.fn == "cudnnBackendExecute";
    });
    const size_t matmuls_before = cublaslt.matmuls.size();
    const float lr = static_cast<float>(ref.run(inputs, &target, s, OpCategory::Backward));
    const float lg = static_cast<float>(gpu.run(inputs, &target, s, OpCategory::Backward));
    expect_close("loss", &lg, &lr, 1, 1e-5, 1e-7);
    gpu.sync_to_host();
    if (s == 0)
      for (int p : g.params) {
        const GraphValue& v = g.values[p];
        expect_close("gradient of " + v.name, gpu.buffers().grads.data() + v.offset,
                     ref.buffers().grads.data() + v.offset, v.elements_per_example(), 1e-4, 1e-6);
      }
    ref.resume(s, OpCategory::Update);
    gpu.resume(s, OpCategory::Update);
    gpu.sync_to_host();
    for (int p : g.params) {
      const GraphValue& v = g.values[p];
      expect_close("after the step, " + v.name, gpu.buffers().params.data() + v.offset,
                   ref.buffers().params.data() + v.offset, v.elements_per_example(), 1e-5, 1e-7);
    }
    // Every conv node and every dense node of the step went to its library.
    const size_t execs = std::count_if(cudnn.calls.begin(), cudnn.calls.end(),
                                       [](const testing::CudnnCall& c) { return c.fn == "cudnnBackendExecute"; });
    EXPECT_EQ(static_cast<int>(execs - execs_before), expected_conv_nodes_per_step);
    EXPECT_EQ(static_cast<int>(cublaslt.matmuls.size() - matmuls_before), dense_nodes);
  }
  EXPECT_NE(gpu.description().find("conv2d on cuDNN fake, dense on cuBLASLt fake"), std::string::npos)
      << gpu.description();
}

// GpuExecutorOptions::time_nodes: every node that ran has a time and says what ran it (conv nodes cuDNN,
// dense nodes cuBLASLt, expr nodes the host under the emulation, the update the optimizer's kernels, the
// rest the step kernels); the same steps without the option leave both lists empty.
TEST(GpuExecutorLibraries, TimedNodesSayWhatRanThem) {
  TrainProgram t = testing::compile_train(chess_spec());
  const ModelGraph& g = t.step;
  testing::FakeCudnn cudnn;
  testing::FakeCublasLt cublaslt;
  gpu::GpuLibraries libs;
  libs.cudnn = &cudnn.api();
  libs.cublaslt = &cublaslt.api();
  gpu::GpuExecutorOptions timed;
  timed.time_nodes = true;
  gpu::GpuExecutor gpu(g, 4, gpu::make_host_emulation_device(libs), timed),
      plain(g, 4, gpu::make_host_emulation_device(libs));
  std::vector<Tensor> inputs;
  for (size_t k = 0; k < g.inputs.size(); ++k)
    inputs.push_back(testing::random_tensor(DType::F32, g.full_shape(g.inputs[k], 16), 40 + k));
  Tensor target = testing::random_tensor(DType::F32, g.full_shape(g.target, 16), 90, -0.5, 0.5);
  for (int s = 0; s < 2; ++s) {
    gpu.run(inputs, &target, s, OpCategory::Update);
    plain.run(inputs, &target, s, OpCategory::Update);
  }
  EXPECT_TRUE(plain.node_seconds().empty());
  EXPECT_TRUE(plain.node_ran_on().empty());
  ASSERT_EQ(gpu.node_seconds().size(), g.nodes.size());
  ASSERT_EQ(gpu.node_ran_on().size(), g.nodes.size());
  double total = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ModelOp op = g.nodes[i].op;
    SCOPED_TRACE(model_op_name(op));
    const gpu::NodeRanOn want =
        op == ModelOp::Conv2d || op == ModelOp::Conv2dBackwardInput || op == ModelOp::Conv2dBackwardKernel
            ? gpu::NodeRanOn::Cudnn
        : op == ModelOp::Dense || op == ModelOp::DenseBackwardInput || op == ModelOp::DenseBackwardKernel
            ? gpu::NodeRanOn::CublasLt
        : op == ModelOp::Expr          ? gpu::NodeRanOn::Host
        : op == ModelOp::OptimizerStep ? gpu::NodeRanOn::Optimizer
                                       : gpu::NodeRanOn::StepKernels;
    EXPECT_EQ(gpu::node_ran_on_name(gpu.node_ran_on()[i]), std::string(gpu::node_ran_on_name(want)));
    EXPECT_GE(gpu.node_seconds()[i], 0.0);
    total += gpu.node_seconds()[i];
  }
  EXPECT_GT(total, 0.0);
}

// Under mixed precision the conv and dense nodes whose operands are rounded to 16 bits
// (tf32_exact_nodes.h) take TF32 tensor cores: a cuDNN engine with the TENSOR_CORE note and cuBLASLt's
// FAST_TF32 compute type; every other node, and every node of the fp32 step, keeps the f32 ones. The
// description counts them.
TEST(GpuExecutorLibraries, MixedPrecisionNodesWith16BitOperandsTakeTf32TensorCores) {
  const std::string mixed = chess_spec("mixed_bf16");
  for (const std::string& spec : {chess_spec(), mixed}) {
    const bool is_mixed = spec == mixed;
    SCOPED_TRACE(is_mixed ? "mixed_bf16" : "fp32");
    TrainProgram t = testing::compile_train(spec);
    const ModelGraph& g = t.step;
    testing::FakeCudnn cudnn;
    cudnn.mode_a = {testing::FakeEngine{2, {cudnn::CUDNN_NUMERICAL_NOTE_TENSOR_CORE}, true, 0},
                    testing::FakeEngine{7, {}, true, 0}};
    testing::FakeCublasLt cublaslt;
    gpu::GpuLibraries libs;
    libs.cudnn = &cudnn.api();
    libs.cublaslt = &cublaslt.api();
    gpu::GpuExecutor gpu(g, 4, gpu::make_host_emulation_device(libs));
    ReferenceExecutor<float> ref(g, 4);
    std::vector<Tensor> inputs;
    for (size_t k = 0; k < g.inputs.size(); ++k)
      inputs.push_back(testing::random_tensor(DType::F32, g.full_shape(g.inputs[k], 16), 40 + k));
    Tensor target = testing::random_tensor(DType::F32, g.full_shape(g.target, 16), 90, -0.5, 0.5);
    const float lg = static_cast<float>(gpu.run(inputs, &target, 0, OpCategory::Update));
    const float lr = static_cast<float>(ref.run(inputs, &target, 0, OpCategory::Update));
    expect_close("loss", &lg, &lr, 1, 1e-5, 1e-7);
    const std::vector<bool> exact = gpu::tf32_exact_nodes(g);
    std::vector<bool> conv_exact, dense_exact;  // in the order the nodes ran
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const ModelOp op = g.nodes[i].op;
      if (op == ModelOp::Conv2d || op == ModelOp::Conv2dBackwardInput || op == ModelOp::Conv2dBackwardKernel)
        conv_exact.push_back(exact[i]);
      if (op == ModelOp::Dense || op == ModelOp::DenseBackwardInput || op == ModelOp::DenseBackwardKernel)
        dense_exact.push_back(exact[i]);
    }
    std::vector<bool> conv_tc, dense_tc;
    for (const testing::CudnnCall* c : cudnn.calls_of("cudnnBackendExecute")) {
      const int64_t config =
          cudnn.descriptor(c->desc).attrs.at(cudnn::CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG).descriptors.at(0);
      conv_tc.push_back(cudnn.descriptor(config).engine == 0);  // mode A's first: the TENSOR_CORE engine
    }
    for (const testing::MatmulCall& m : cublaslt.matmuls)
      dense_tc.push_back(m.desc_state.compute == cublaslt::CUBLAS_COMPUTE_32F_FAST_TF32);
    EXPECT_EQ(conv_tc, conv_exact);
    EXPECT_EQ(dense_tc, dense_exact);
    const int named = static_cast<int>(std::count(exact.begin(), exact.end(), true));
    if (is_mixed) {
      EXPECT_GE(named, 4);  // the two convolutions and the two dense layers forward, at least
      EXPECT_NE(gpu.description().find(fmt::format("{} of their nodes on TF32 tensor cores", named)), std::string::npos)
          << gpu.description();
    } else {
      EXPECT_EQ(named, 0);
      EXPECT_EQ(gpu.description().find("TF32"), std::string::npos) << gpu.description();
    }
  }
}

TEST(GpuExecutorLibraries, ChessNetOnCudnnAndCublasLtEqualsTheReference) {
  // conv1: forward and kernel gradient (its input needs none); conv2: forward, input and kernel gradients.
  run_case(chess_spec(), 16, 5);
}

TEST(GpuExecutorLibraries, EveryConvKindWithOddPadsEqualsTheReference) {
  // conv2d (stride 2, same): forward, kernel gradient; conv2d_transpose: forward, input and kernel
  // gradients; the dilated conv2d: forward, input and kernel gradients.
  run_case(kConvKinds, 4, 8);
}

}  // namespace
}  // namespace pipec
