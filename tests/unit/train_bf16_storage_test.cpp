// mixed_bf16 values stored as bf16 on bf16 kernels (runtime/model/bf16_storage.h, the JIT's bf16
// variants of expr kernels, FastExecutor::plan_bf16_values): which values of the chess step are, that
// training with them stored so is bit for bit training with every value in f32 (the chess net and two
// other nets: strided valid convolutions whose windows leave rows out, conv2d_transpose, gelu, norms),
// that the executor keeps every value in f32 when one kernel lacks its variant, and the narrowing loop
// against the scalar conversion. The tests that train on bf16 kernels skip, saying why, on a CPU without
// them.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <iostream>

#include "runtime/core/half.h"
#include "runtime/model/bf16_storage.h"
#include "runtime/train/dnnl/cpu_kernels.h"
#include "runtime/train/fast/fast_executor.h"
#include "runtime/train/math/round_16bit.h"
#include "tests/unit/train_util.h"

namespace pipec {
namespace {

// Strided valid convolutions (12 -> 5 leaves the last row and column out), a transposed one, gelu on
// oneDNN, global pooling, sigmoid.
const char* kImageSpec = R"(source s = tfrecord("x.tfrecord") { image: f32[12, 12, 3], y: f32[4] }
pipeline data = s | batch(32, drop_remainder = true)
model m(image: f32[12, 12, 3]) -> f32[4] {
  a = image | conv2d(8, 3, padding = same) | relu | conv2d(8, 3, strides = 2, padding = valid) | tanh
  c = a | conv2d_transpose(6, 3, strides = 2, padding = same) | relu
  e = concat([flatten(a), global_avg_pool(c)])
  e | dense(16) | gelu | dense(16) | relu | dense(4) | sigmoid
}
train t = { data = data, model = m(image), loss = mse(y), optimizer = adam(lr = 1e-3), steps = 3, precision = mixed_bf16 }
)";

// Dense layers with batch_norm and layer_norm between them.
const char* kDenseSpec = R"(source s = tfrecord("x.tfrecord") { x: f32[20], y: f32[3] }
pipeline data = s | batch(32, drop_remainder = true)
model m(x: f32[20]) -> f32[3] {
  h = x | dense(32) | relu | dense(32) | tanh
  h | batch_norm | dense(16) | relu | layer_norm | dense(16) | relu | dense(3)
}
train t = { data = data, model = m(x), loss = mse(y), optimizer = sgd(lr = 0.05, momentum = 0.9), steps = 3, precision = mixed_bf16 }
)";

FastExecutorOptions options(CpuBf16 how, bool storage) {
  FastExecutorOptions o;
  o.threads = 2;
  o.cpu_bf16 = how;
  o.bf16_storage = storage;
  return o;
}

struct Trajectory {
  std::vector<double> losses;
  std::vector<float> params;
  std::vector<float> output;  // the model's output after the last step's forward pass
  int bf16_values = 0;
  int64_t arena_bytes = 0;  // the step's planned block
};

Trajectory train(const ModelGraph& g, int steps, FastExecutorOptions o) {
  FastExecutor ex(g, 11, o);
  Trajectory t;
  t.losses = testing::run_random_update_steps(ex, g, steps);
  t.params = ex.buffers().params;
  const Tensor out = ex.host_value(g.output);
  t.output.assign(out.data<float>(), out.data<float>() + out.num_elements());
  t.bf16_values = ex.bf16_values();
  t.arena_bytes = ex.arena().bytes;
  EXPECT_GT(ex.expr_kernel_runs(), 0);
  EXPECT_EQ(ex.expr_fallbacks(), 0);
  return t;
}

void expect_same_bits(const Trajectory& want, const Trajectory& got) {
  ASSERT_EQ(want.losses.size(), got.losses.size());
  for (size_t s = 0; s < want.losses.size(); ++s) EXPECT_EQ(want.losses[s], got.losses[s]) << "step " << s + 1;
  ASSERT_EQ(want.params.size(), got.params.size());
  size_t differ = 0;
  for (size_t i = 0; i < want.params.size(); ++i)
    differ += std::memcmp(&want.params[i], &got.params[i], sizeof(float)) != 0;
  EXPECT_EQ(differ, 0u) << "weights that differ, of " << want.params.size();
  ASSERT_EQ(want.output.size(), got.output.size());
  EXPECT_EQ(std::memcmp(want.output.data(), got.output.data(), want.output.size() * sizeof(float)), 0);
}

bool skip_without_bf16_kernels() {
  if (train::CpuKernels::bf16_kernels_exist()) return false;
  std::cout << "skipped: oneDNN has no bf16 kernels for this CPU (" << train::CpuKernels::isa() << ")\n";
  return true;
}

// On the chess step: the activations and gradients that are bf16 values and that only expr kernels and
// conv2d/dense operands read. Ten: conv2d's rounded output, the flattened and concatenated features, the
// first dense layer's rounded output, and six gradients (the tanh gradient dense_1 reads, the three relu
// gradients, the concat and flatten gradients). Never a parameter, its gradient, the output or the loss; the round
// nodes of the board and the kernels are left to the layers, not stored.
TEST(Bf16Storage, ChessStepPlan) {
  ModelGraph g = testing::compile_train_jit(testing::chess_train_spec("mixed_bf16")).step;
  const std::vector<bool> bf16 = plan_bf16_storage(g);
  ASSERT_EQ(bf16.size(), g.values.size());
  int stored = 0;
  for (size_t v = 0; v < bf16.size(); ++v) {
    if (!bf16[v]) continue;
    ++stored;
    const GraphValue& gv = g.values[v];
    EXPECT_TRUE(gv.role == ValueRole::Activation || gv.role == ValueRole::Gradient) << "%" << v;
    EXPECT_LT(gv.grad_of, 0) << "%" << v;
    EXPECT_NE(static_cast<int>(v), g.output);
    EXPECT_NE(static_cast<int>(v), g.loss);
  }
  EXPECT_EQ(stored, 10);
  // Every expr node touching one has the JIT's variant, flagged for exactly those values.
  int variants = 0;
  for (const GraphNode& n : g.nodes) {
    if (n.op != ModelOp::Expr) continue;
    bool touches = false;
    for (int v : n.inputs) touches = touches || bf16[v];
    for (int v : n.outputs) touches = touches || bf16[v];
    ASSERT_NE(n.native, nullptr);
    EXPECT_EQ(n.native->bf16_storage != nullptr, touches) << n.fn->name;
    if (!n.native->bf16_storage) continue;
    ++variants;
    const NativeKernel& k = *n.native->bf16_storage;
    for (size_t i = 0; i < k.bf16_inputs.size(); ++i)
      EXPECT_EQ(k.bf16_inputs[i], bf16[n.inputs[n.native->input_fields[i]]]) << n.fn->name << " input " << i;
    for (size_t j = 0; j < k.bf16_outputs.size(); ++j)
      EXPECT_EQ(k.bf16_outputs[j], bf16[n.outputs[j]]) << n.fn->name << " output " << j;
  }
  EXPECT_EQ(variants, 8);  // all 9 but the output's tanh, which reads the unrounded dense_1 output
  // fp32 stores nothing so.
  const std::vector<bool> fp32 = plan_bf16_storage(testing::compile_train_jit(testing::chess_train_spec("fp32")).step);
  EXPECT_EQ(std::count(fp32.begin(), fp32.end(), true), 0);
}

// Training with the values stored as bf16 is training with them in f32, bit for bit: the losses, every
// weight and the output, on the chess net and two others. Only bf16 kernels store them; the emulation
// keeps f32 (and is unchanged).
TEST(Bf16Storage, TrainsBitForBit) {
  if (skip_without_bf16_kernels()) GTEST_SKIP() << "no bf16 kernels on " << train::CpuKernels::isa();
  const std::vector<std::pair<const char*, std::string>> nets = {
      {"chess", testing::chess_train_spec("mixed_bf16")}, {"image", kImageSpec}, {"dense", kDenseSpec}};
  for (const auto& [name, spec] : nets) {
    SCOPED_TRACE(name);
    ModelGraph g = testing::compile_train_jit(spec).step;
    const Trajectory stored = train(g, 4, options(CpuBf16::Native, true));
    const Trajectory f32 = train(g, 4, options(CpuBf16::Native, false));
    EXPECT_GT(stored.bf16_values, 0);
    EXPECT_EQ(f32.bf16_values, 0);
    // Their places in the arena are half as large: the planned block shrinks.
    EXPECT_LT(stored.arena_bytes, f32.arena_bytes);
    expect_same_bits(f32, stored);
    EXPECT_EQ(train(g, 1, options(CpuBf16::Emulated, true)).bf16_values, 0);
    // The executor line says how many.
    const std::string line = FastExecutor(g, 1, options(CpuBf16::Native, true)).description();
    EXPECT_NE(line.find(", " + std::to_string(stored.bf16_values) + " values stored in bf16;"), std::string::npos)
        << line;
    std::cout << name << ": " << stored.bf16_values << " values stored in bf16, trained bit for bit; arena "
              << stored.arena_bytes << " bytes against " << f32.arena_bytes << "\n";
  }
}

// One expr kernel without its variant (as when the JIT could not make one): nothing is stored as bf16,
// and the step trains as before.
TEST(Bf16Storage, MissingVariantKeepsEveryValueF32) {
  if (skip_without_bf16_kernels()) GTEST_SKIP() << "no bf16 kernels on " << train::CpuKernels::isa();
  ModelGraph g = testing::compile_train_jit(testing::chess_train_spec("mixed_bf16")).step;
  const Trajectory want = train(g, 2, options(CpuBf16::Native, false));
  for (GraphNode& n : g.nodes)
    if (n.op == ModelOp::Expr && n.native && n.native->bf16_storage) {
      auto without = std::make_shared<NativeKernel>(*n.native);
      without->bf16_storage = nullptr;
      n.native = without;
      break;
    }
  const Trajectory got = train(g, 2, options(CpuBf16::Native, true));
  EXPECT_EQ(got.bf16_values, 0);
  EXPECT_EQ(got.arena_bytes, want.arena_bytes);
  expect_same_bits(want, got);
}

// round_to_bf16_bits is float_to_bf16_bits, bit for bit: every top half with low halves at and around
// the tie, zero, 0xffff (NaNs kept and quieted, infinities, the largest finite values rounding up to
// infinity), in lengths that leave a scalar tail.
TEST(Bf16Storage, NarrowingMatchesTheScalarConversion) {
  std::vector<float> x;
  for (uint32_t top = 0; top < 0x10000; ++top)
    for (uint32_t low : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu})
      x.push_back(std::bit_cast<float>(top << 16 | low));
  for (int64_t n : {static_cast<int64_t>(x.size()), static_cast<int64_t>(x.size()) - 3, int64_t(5)}) {
    std::vector<uint16_t> got(static_cast<size_t>(n));
    round_to_bf16_bits(x.data(), got.data(), n);
    int64_t differ = 0;
    for (int64_t i = 0; i < n; ++i) differ += got[i] != float_to_bf16_bits(x[i]);
    EXPECT_EQ(differ, 0) << "of " << n;
  }
}

}  // namespace
}  // namespace pipec
