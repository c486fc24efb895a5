// The gradient pass checked against finite differences: every layer's rule, every expression op with a
// rule, every loss (from probabilities and from logits). Each case compiles a small train block, runs
// the step graph on the reference executor in f64 and compares the gradient of every parameter
// (sampled entries) with (L(w + h) - L(w - h)) / 2h. Layers whose input gradient is under test sit after
// a layer with parameters, so that gradient is on the path to those parameters.
#include <gtest/gtest.h>

#include <cmath>

#include <set>

#include "compiler/lower/lower.h"
#include "compiler/sema/builtins.h"
#include "compiler/train/expr_gradients.h"
#include "compiler/train/gradients.h"
#include "runtime/train/reference/reference_executor.h"
#include "tests/unit/train_util.h"

namespace pipec {
namespace {

using testing::compile_train;
using testing::random_tensor;

enum class Target { Real, Probability, Distribution, Labels };

struct GradCase {
  GradCase(std::string input, std::string body, std::string output, std::string loss = "mse", std::string target = "",
           Target kind = Target::Real)
      : input(std::move(input)),
        body(std::move(body)),
        output(std::move(output)),
        loss(std::move(loss)),
        target(std::move(target)),
        kind(kind) {}

  std::string input;   // the type of x, one example
  std::string body;    // the model body
  std::string output;  // the model's result type
  std::string loss;
  std::string target;  // the type of y (default: the output's)
  Target kind;
  int64_t ids = 0;  // inputs of an integer type: drawn from [0, ids) (embedding ids)
};

// A case whose integer input holds embedding ids below `n`.
GradCase with_ids(GradCase c, int64_t n) {
  c.ids = n;
  return c;
}

std::string spec_of(const GradCase& c) {
  std::string target = c.target.empty() ? c.output : c.target;
  // A tf.Example field is f32 or i64: another integer type (embedding ids) is an i64 field cast by a map.
  const bool cast = c.input.rfind("f32", 0) != 0 && c.input.rfind("i64", 0) != 0;
  const std::string dtype = c.input.substr(0, c.input.find('['));
  const std::string field = cast ? "i64" + c.input.substr(dtype.size()) : c.input;
  const std::string map = cast ? " | map(e => { x: " + dtype + "(e.x), y: e.y })" : "";
  return "source s = tfrecord(\"unused.tfrecord\") { x: " + field + ", y: " + target + " }\n" + "pipeline data = s" +
         map + " | batch(3, drop_remainder = true)\n" + "model net(x: " + c.input + ") -> " + c.output + " {\n" +
         c.body + "\n}\n" + "train t = { data = data, model = net(x), loss = " + c.loss + "(y), optimizer = sgd() }\n";
}

Tensor make_target(const ModelGraph& g, Target kind, int64_t rows) {
  Shape shape = g.full_shape(g.target, rows);
  Tensor t = random_tensor(DType::F64, shape, 99,
                           kind == Target::Probability    ? 0.05
                           : kind == Target::Distribution ? 0.1
                                                          : -1.0,
                           kind == Target::Probability ? 0.95 : 1.0);
  double* d = t.data<double>();
  int64_t n = t.num_elements();
  if (kind == Target::Distribution) {
    int64_t classes = shape.back();
    for (int64_t r = 0; r < n / classes; ++r) {
      double s = 0;
      for (int64_t c = 0; c < classes; ++c) s += d[r * classes + c];
      for (int64_t c = 0; c < classes; ++c) d[r * classes + c] /= s;
    }
  }
  if (kind == Target::Labels) {
    // The class count is the prediction's last dimension.
    int64_t classes = g.values[g.output].shape.back();
    RandomStream r(5, 6, 0, 0);
    for (int64_t i = 0; i < n; ++i) d[i] = static_cast<double>(r.uniform_int(0, classes - 1));
  }
  return t;
}

void check_gradients(const GradCase& c) {
  std::string spec = spec_of(c);
  SCOPED_TRACE(spec);
  TrainProgram t = compile_train(spec);
  ASSERT_FALSE(t.step.nodes.empty());
  ModelGraph g = with_float_dtype(t.step, DType::F64);
  ASSERT_TRUE(verify_model_graph(g).empty());
  const int64_t rows = 3;
  ReferenceExecutor<double> ex(g, 7);
  std::vector<Tensor> inputs;
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    inputs.push_back(random_tensor(DType::F64, g.full_shape(g.inputs[k], rows), 10 + k));
    if (is_integer(g.values[g.inputs[k]].dtype)) {
      RandomStream r(5, 7 + k, 0, 0);
      double* d = inputs.back().data<double>();
      for (int64_t i = 0; i < inputs.back().num_elements(); ++i)
        d[i] = static_cast<double>(r.uniform_int(0, c.ids - 1));
    }
  }
  Tensor target = make_target(g, c.kind, rows);
  ex.run(inputs, &target, 0, OpCategory::Backward);
  std::vector<double> grads = ex.buffers().grads;
  std::vector<double>& w = ex.buffers().params;
  const double h = 1e-5;
  int compared = 0;
  for (size_t k = 0; k < g.params.size(); ++k) {
    const GraphValue& p = g.values[g.params[k]];
    int64_t n = p.elements_per_example();
    double largest = 0;
    for (int64_t i = 0; i < n; ++i) largest = std::max(largest, std::fabs(grads[p.offset + i]));
    EXPECT_GT(largest, 0) << p.name << " gets no gradient";
    int64_t step = std::max<int64_t>(1, n / 24);
    for (int64_t i = 0; i < n; i += step) {
      double saved = w[p.offset + i];
      w[p.offset + i] = saved + h;
      double up = ex.run(inputs, &target, 0, OpCategory::Loss);
      w[p.offset + i] = saved - h;
      double down = ex.run(inputs, &target, 0, OpCategory::Loss);
      w[p.offset + i] = saved;
      double numeric = (up - down) / (2 * h);
      double analytic = grads[p.offset + i];
      EXPECT_NEAR(analytic, numeric, 1e-7 + 1e-5 * std::max(std::fabs(analytic), std::fabs(numeric)))
          << p.name << "[" << i << "]";
      ++compared;
    }
  }
  EXPECT_GT(compared, 0);
}

// A layer under test after a dense layer (so its input gradient is checked too), then a dense head.
GradCase after_dense(const std::string& layer, const std::string& input = "f32[6, 6, 2]") {
  return GradCase{input, "x | dense(3) | " + layer + " | flatten | dense(2)", "f32[2]"};
}

TEST(TrainGradients, EveryForwardAndLossKindHasARule) {
  for (const ModelOpInfo& op : all_model_ops()) {
    bool differentiated = op.category == OpCategory::Forward || op.category == OpCategory::Loss;
    EXPECT_EQ(gradient_rule(op.op) != nullptr, differentiated) << op.name;
  }
}

// Every op of the expression IR has a gradient rule or is on this list (its gradient would be an error,
// not_differentiable, where the loss reaches parameters through it): adding an op is a decision about
// its gradient. Integer and bool results need none: bit ops, comparisons, logic, one_hot, argmax, size.
TEST(TrainGradients, EveryOpHasARuleOrIsListedAsHavingNone) {
  const std::set<std::string> none = {"param",
                                      "const",  // where the sweep ends
                                      "bit_or",
                                      "bit_and",
                                      "bit_xor",
                                      "shl",
                                      "shr",
                                      "bit_not",
                                      "eq",
                                      "ne",
                                      "lt",
                                      "le",
                                      "gt",
                                      "ge",
                                      "and",
                                      "or",
                                      "not",
                                      "unpack_bits",
                                      "pack_bits",
                                      "one_hot",
                                      "argmax",
                                      "size",
                                      "gather",
                                      "prod",
                                      "dynamic_index",
                                      "dynamic_slice",  // not written yet
                                      "random_uniform",
                                      "random_normal",
                                      "random_int",  // refused in models: unsupported_in_model
                                      "read_file",
                                      "decode_jpeg",
                                      "decode_png",
                                      "decode_image",
                                      "encode_png",
                                      "encode_jpeg",
                                      "random_crop",
                                      "crop_or_pad",
                                      "resize",
                                      "flip_left_right",
                                      "flip_up_down",
                                      "random_flip_left_right",
                                      "random_flip_up_down",
                                      "central_crop",
                                      "convert_image_dtype",
                                      "normalize",
                                      "rgb_to_grayscale",
                                      "distance_transform",
                                      "one_hot_colors",
                                      "convert_normalize",
                                      "random_flip_convert_normalize",  // made by a pipeline pass only
                                      "strip",
                                      "split",
                                      "to_number"};  // byte strings: nothing to differentiate
  for (OpKind op : all_op_kinds) {
    const std::string name(op_name(op));
    EXPECT_NE(has_expr_gradient_rule(op), none.count(name) > 0) << name;
  }
  // Every op builtin a model body may call lowers to one of those ops.
  for (const Builtin& b : all_builtins())
    if (b.kind == BuiltinKind::Op) {
      EXPECT_TRUE(op_of_builtin(b).has_value()) << b.name;
    }
}

TEST(TrainGradients, Conv2d) {
  check_gradients({"f32[6, 6, 2]", "x | conv2d(3, 3) | flatten | dense(2)", "f32[2]"});
  check_gradients(after_dense("conv2d(4, 3, strides = 2, padding = same)"));
  check_gradients(after_dense("conv2d(2, [2, 3], dilation = 2, padding = same)"));
  check_gradients(after_dense("conv2d(2, 3, strides = [2, 1])"));
  check_gradients(after_dense("conv2d(2, 4, strides = 3, padding = same)", "f32[7, 5, 2]"));
}

TEST(TrainGradients, Conv2dTranspose) {
  check_gradients(after_dense("conv2d_transpose(2, 3, strides = 2, padding = same)"));
  check_gradients(after_dense("conv2d_transpose(2, 3, strides = 2)"));
  check_gradients(after_dense("conv2d_transpose(2, 2, strides = 3)", "f32[3, 4, 2]"));
  check_gradients(after_dense("conv2d_transpose(3, [3, 2], padding = same)", "f32[4, 5, 2]"));
}

TEST(TrainGradients, Dense) {
  check_gradients({"f32[5]", "x | dense(4) | tanh | dense(3)", "f32[3]"});
  check_gradients({"f32[4, 5]", "x | dense(3) | dense(2)", "f32[4, 2]"});
}

TEST(TrainGradients, Pools) {
  check_gradients(after_dense("max_pool2d(2)"));
  check_gradients(after_dense("max_pool2d(3, strides = 2, padding = same)"));
  check_gradients(after_dense("avg_pool2d(2)"));
  check_gradients(after_dense("avg_pool2d(3, strides = 2, padding = same)"));
  check_gradients(after_dense("avg_pool2d([2, 3], strides = [1, 2])", "f32[5, 7, 2]"));
  check_gradients({"f32[6, 6, 2]", "x | dense(3) | global_avg_pool | dense(2)", "f32[2]"});
  check_gradients({"f32[6, 6, 2]", "x | dense(3) | global_max_pool | dense(2)", "f32[2]"});
}

TEST(TrainGradients, Upsample2d) {
  check_gradients(after_dense("upsample2d(2)", "f32[3, 4, 2]"));
  check_gradients(after_dense("upsample2d([2, 3], method = bilinear)", "f32[3, 4, 2]"));
}

TEST(TrainGradients, Normalization) {
  check_gradients(after_dense("batch_norm"));
  check_gradients(after_dense("batch_norm(epsilon = 0.1)"));
  check_gradients(after_dense("layer_norm"));
  check_gradients({"f32[7]", "x | dense(5) | layer_norm | dense(2)", "f32[2]"});
}

TEST(TrainGradients, Activations) {
  for (const char* act : {"relu", "leaky_relu(alpha = 0.3)", "tanh", "sigmoid", "gelu", "softmax", "softmax(axis = 0)",
                          "softmax(axis = 1)", "dropout(0.5)"}) {
    SCOPED_TRACE(act);
    check_gradients(after_dense(act));
  }
}

// The table's gradient: rows of repeated ids add up, rows no id names get none; scalar ids per example,
// ids of rank 2, and a table read twice (two embedding layers on one input would be two tables; one
// layer's output used twice sums two adjoints into one backward node).
TEST(TrainGradients, Embedding) {
  check_gradients(with_ids({"i32[5]", "x | embedding(6, 3) | flatten | dense(2)", "f32[2]"}, 6));
  check_gradients(with_ids({"i64", "x | embedding(4, 3) | tanh | dense(2)", "f32[2]"}, 4));
  check_gradients(with_ids({"u8[2, 3]", "x | embedding(9, 2) | flatten | dense(2)", "f32[2]"}, 9));
  check_gradients(
      with_ids({"i32[4]", "e = x | embedding(5, 3)\n  y = e * e + e\n  y | flatten | dense(2)", "f32[2]"}, 5));
}

TEST(TrainGradients, AddAndConcat) {
  check_gradients({"f32[6, 6, 2]", "h = x | dense(3)\n  h | add(h | tanh) | flatten | dense(2)", "f32[2]"});
  check_gradients({"f32[6, 6, 2]", "h = x | dense(3)\n  concat([h, h | relu, x]) | flatten | dense(2)", "f32[2]"});
  check_gradients(
      {"f32[6, 6, 2]", "h = x | dense(3)\n  concat([h, h | sigmoid], axis = 0) | flatten | dense(2)", "f32[2]"});
}

TEST(TrainGradients, ExpressionOps) {
  const std::vector<std::string> exprs = {
      "(h * 2.0 + 1.0) * h - h / (abs(h) + 1.0)",
      "exp(h * 0.5) + log(h * h + 1.0) + sqrt(h * h + 1.0) + rsqrt(h * h + 1.0)",
      "sin(h) * cos(h) + square(h) - neg(h) + log1p(h * h)",
      "pow(h * h + 1.0, 1.5) + pow(1.5, h)",
      "max(h, 0.1 * h) + min(h, h * h) + where(h > 0.0, h, h * h)",
      "clip(h, -0.5, 0.5) + floor(h) * h + atan2(h, h * h + 1.0)",
      "transpose(h, [1, 0, 2]) + h",
      "reshape(h, [36, 3])[:, 1:3][4:30, :]",
      "expand_dims(sum(h, axis = 0), 0) * h + expand_dims(mean(h, axis = -1), 2) + expand_dims(reduce_max(h, axis = "
      "1), 1)",
      "stack([h, h * h], axis = 0) + concat([h, h], axis = 2)[:, :, 1:4]",
      "squeeze(h[:, 2:3, :], axis = 1) * 3.0",
      "f32(f64(h) * 2.0) + f32(i32(h * 3.0))",
  };
  for (const std::string& e : exprs) {
    SCOPED_TRACE(e);
    check_gradients({"f32[6, 6, 2]", "h = x | dense(3)\n  y = " + e + "\n  y | flatten | dense(2)", "f32[2]"});
  }
}

// An index computed at run time (dynamic_index) into a model input: the input needs no gradient, so the
// step builds and the gradients through the product are exact. (Through a layer's output it is a
// not_differentiable error: tests/lang/train/fail_run_time_index.pipe.)
TEST(TrainGradients, RunTimeIndexIntoAnInput) {
  check_gradients({"f32[5]", "h = x | dense(4)\n  h * x[i64(x[0] > 0.0) + 1]", "f32[4]"});
}

TEST(TrainGradients, Losses) {
  check_gradients({"f32[5]", "x | dense(4)", "f32[4]", "mse"});
  check_gradients({"f32[5]", "x | dense(4)", "f32[4]", "mae"});
  check_gradients({"f32[5]", "x | dense(4) | tanh | dense(6) | reshape([2, 3])", "f32[2, 3]", "huber"});
  check_gradients({"f32[5]", "x | dense(4) | tanh", "f32[4]", "mse", "f32[2, 2]"});
  // binary_cross_entropy: from logits after a sigmoid, from probabilities otherwise.
  check_gradients({"f32[5]", "x | dense(4) | sigmoid", "f32[4]", "binary_cross_entropy", "", Target::Probability});
  check_gradients(
      {"f32[5]", "(x | dense(4) | tanh) * 0.4 + 0.5", "f32[4]", "binary_cross_entropy", "", Target::Probability});
  // cross_entropy: one-hot or probability targets, from logits and from probabilities...
  check_gradients({"f32[5]", "x | dense(4) | softmax", "f32[4]", "cross_entropy", "", Target::Distribution});
  check_gradients({"f32[5]", "exp(x | dense(4))", "f32[4]", "cross_entropy", "", Target::Distribution});
  // ... and integer class labels, one per position.
  check_gradients({"f32[5]", "x | dense(4) | softmax", "f32[4]", "cross_entropy", "i64", Target::Labels});
  check_gradients({"f32[5]", "(x | dense(4) | tanh) * 0.4 + 0.5", "f32[4]", "cross_entropy", "i64", Target::Labels});
  check_gradients(
      {"f32[3, 3, 2]", "x | conv2d(4, 1) | softmax", "f32[3, 3, 4]", "cross_entropy", "i64[3, 3]", Target::Labels});
  check_gradients(
      {"f32[3, 3, 2]", "x | conv2d(4, 1) | softmax", "f32[3, 3, 4]", "cross_entropy", "", Target::Distribution});
}

}  // namespace
}  // namespace pipec
