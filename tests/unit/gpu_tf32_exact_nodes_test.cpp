// tf32_exact_nodes (runtime/train/gpu/tf32_exact_nodes.h): the conv and dense nodes of a mixed-precision
// step that multiply only 16-bit values, which TF32 tensor cores then compute exactly. Held to what the
// step computes: on the reference executor, both multiplied operands of every node it names hold only
// values equal to their own 16-bit rounding, on nets with every conv and dense kind, in bf16 and fp16;
// and it names none in fp32, nor in a graph marked mixed whose operands nothing rounds.
#include <gtest/gtest.h>

#include <string>

#include "runtime/core/half.h"
#include "runtime/train/gpu/tf32_exact_nodes.h"
#include "runtime/train/reference/reference_executor.h"
#include "tests/unit/train_util.h"

namespace pipec {
namespace {

// A transposed convolution, batch_norm, a residual add and a strided convolution.
const char* kKinds = R"(source s = tfrecord("x.tfrecord") { image: f32[8, 8, 3], y: f32[4] }
pipeline data = s | batch(4, drop_remainder = true)
model m(image: f32[8, 8, 3]) -> f32[4] {
  a = image | conv2d(8, 3, padding = same) | batch_norm | relu
  b = a | conv2d(8, 3, padding = same) | relu
  c = (a + b) | conv2d(8, 3, strides = 2, padding = same) | conv2d_transpose(4, 3, strides = 2, padding = same)
  flatten(c) | dense(16) | relu | dense(4)
}
train t = { data = data, model = m(image), loss = mse(y), optimizer = sgd(lr = 0.05), steps = 2)";

// The two nets' train blocks at `precision`: the chess net small, with Adam.
std::string spec_at(bool chess, const std::string& precision) {
  if (chess) return testing::chess_net_spec(16, 16, 32, "optimizer = adam(), steps = 2, precision = " + precision);
  return std::string(kKinds) + ", precision = " + precision + " }\n";
}

bool is_16_bit(float x, const std::string& precision) {
  if (precision != "mixed_fp16") return bf16_bits_to_float(float_to_bf16_bits(x)) == x || x != x;
  return half_bits_to_float(float_to_half_bits(x)) == x || x != x;
}

TEST(Tf32ExactNodes, NamedNodesMultiplyOnly16BitValues) {
  for (const bool chess : {true, false}) {
    // "unrounded": the fp32 graph marked mixed_bf16 without its round nodes, whose operands are f32
    // values: the function must see that nothing rounds them.
    for (const std::string precision : {"fp32", "mixed_bf16", "mixed_fp16", "unrounded"}) {
      SCOPED_TRACE(precision + (chess ? " chess" : " kinds"));
      const bool unrounded = precision == "unrounded";
      TrainProgram t = testing::compile_train(spec_at(chess, unrounded ? "fp32" : precision));
      if (unrounded) t.step.precision = Precision::MixedBf16;
      const ModelGraph& g = t.step;
      ASSERT_FALSE(g.nodes.empty());
      const std::vector<bool> exact = gpu::tf32_exact_nodes(g);
      ASSERT_EQ(exact.size(), g.nodes.size());
      int named = 0, layers = 0;
      for (size_t i = 0; i < g.nodes.size(); ++i) {
        const ModelOp op = g.nodes[i].op;
        layers += op == ModelOp::Conv2d || op == ModelOp::Conv2dTranspose || op == ModelOp::Dense;
        named += exact[i];
      }
      if (precision == "fp32") {
        EXPECT_EQ(named, 0);
        continue;
      }
      if (unrounded) EXPECT_EQ(named, 0);
      else EXPECT_GE(named, layers) << "fewer nodes than forward layers";  // not a vacuous check
      const int64_t rows = g.batch > 0 ? g.batch : 4;
      ReferenceExecutor<float> ref(g, 3);
      std::vector<Tensor> inputs;
      for (size_t k = 0; k < g.inputs.size(); ++k)
        inputs.push_back(testing::random_tensor(DType::F32, g.full_shape(g.inputs[k], rows), 10 + k));
      Tensor target = testing::random_tensor(DType::F32, g.full_shape(g.target, rows), 20, -0.5, 0.5);
      // Each named node's operands as it has just read them (the arena reuses a value's place after its
      // last reader).
      ref.observe_nodes([&](size_t i) {
        if (!exact[i]) return;
        for (int k : {0, 1}) {
          const int v = g.nodes[i].inputs.at(static_cast<size_t>(k));
          const Tensor& x = ref.value(v);
          const float* p = x.data<float>();
          int64_t wide = 0;
          for (int64_t e = 0; e < x.num_elements(); ++e) wide += !is_16_bit(p[e], precision);
          EXPECT_EQ(wide, 0) << model_op_name(g.nodes[i].op) << " node " << i << ", operand %" << v << " ("
                             << g.values[v].name << "): " << wide << " of " << x.num_elements()
                             << " values are not 16-bit ones";
        }
      });
      ref.run(inputs, &target, 0, OpCategory::Backward);
    }
  }
}

}  // namespace
}  // namespace pipec
