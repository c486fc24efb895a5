// Random single-node step graphs of every kind of model_ops.def (but expr and optimizer_step), with
// random shapes and attributes and the distributions their inputs are drawn from: the cases the step
// kernels are checked on, against the reference executor (tests/unit/gpu_step_kernels_test.cpp) and on a
// GPU against their host build (tests/gpu/step_kernels_device_test.cpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/core/tensor.h"
#include "runtime/model/model_graph.h"
#include "runtime/ops/kernel.h"

namespace pipec::step_cases {

// How a fed value's elements are drawn.
enum class Dist {
  Uniform,      // [-1, 1)
  Wide,         // [-4, 4)
  Coarse,       // multiples of 1/2 in [-1, 1]: ties for the max pools' first-maximum rule
  Positive,     // [0.1, 2): variances
  Offset,       // [4, 6): statistics far from zero (batch_norm's merge)
  Probability,  // (0, 1), a few exactly 0 or 1 (the clipped cross-entropies' edges)
  OneHot,       // one 1 per class vector, else 0
  Simplex,      // positive, summing to one per class vector
  Labels,       // class indices (embedding ids) 0 .. classes - 1
  Magnitudes,   // +-[2^-30, 2^20): the 16-bit roundings' subnormals, overflow and ties
};

struct Case {
  std::string what;
  ModelGraph g;
  std::vector<Dist> dists;  // per g.inputs
  Dist target_dist = Dist::Uniform;
  int64_t rows = 1, classes = 1;
  uint64_t seed = 0, step = 0;
};

class Builder {
 public:
  explicit Builder(std::string what, int64_t rows) {
    c_.what = std::move(what);
    c_.rows = rows;
    c_.g.batch = rows;
    c_.g.name = "case";
  }
  int input(Shape s, Dist d = Dist::Uniform, bool batched = true) {
    const int id = add(s, batched, ValueRole::Input);
    c_.g.inputs.push_back(id);
    c_.g.input_fields.push_back(c_.g.values[id].name);
    c_.dists.push_back(d);
    return id;
  }
  // Embedding ids in [0, n): an i64 value, as lowering makes the ids (drawn as labels of n classes).
  int ids(Shape s, int64_t n) {
    const int id = input(std::move(s), Dist::Labels);
    c_.g.values[id].dtype = DType::I64;
    c_.classes = n;
    return id;
  }
  int target(Shape s, Dist d, int64_t classes = 1) {
    const int id = add(s, true, ValueRole::Target);
    c_.g.target = id;
    c_.target_dist = d;
    c_.classes = classes;
    return id;
  }
  int param(Shape s) {
    GraphValue v;
    v.name = fmt::format("param{}", c_.g.params.size());
    v.shape = s;
    v.batched = false;
    v.role = ValueRole::Param;
    v.offset = c_.g.param_elements();
    v.init = Init::GlorotUniform;
    v.fan_in = v.fan_out = 4;
    const int id = c_.g.add_value(v);
    c_.g.params.push_back(id);
    c_.g.param_grads.push_back(-1);
    return id;
  }
  int state(Shape s) {
    GraphValue v;
    v.name = fmt::format("state{}", c_.g.states.size());
    v.shape = s;
    v.batched = false;
    v.role = ValueRole::State;
    v.offset = c_.g.state_elements();
    v.init = Init::Ones;
    const int id = c_.g.add_value(v);
    c_.g.states.push_back(id);
    return id;
  }
  int value(Shape s, bool batched = true) { return add(s, batched, ValueRole::Activation); }
  void node(ModelOp op, std::vector<int> ins, std::vector<int> outs, ModelAttrs attrs = {}) {
    GraphNode n;
    n.op = op;
    n.inputs = std::move(ins);
    n.outputs = std::move(outs);
    n.attrs = std::move(attrs);
    n.layer = model_op_name(op);
    c_.g.add_node(std::move(n));
  }
  Case done(std::mt19937_64& rng) {
    c_.seed = rng();
    c_.step = rng() % 1000;
    return std::move(c_);
  }

 private:
  int add(const Shape& s, bool batched, ValueRole role) {
    GraphValue v;
    v.name = fmt::format("v{}", c_.g.values.size());
    v.shape = s;
    v.batched = batched;
    v.role = role;
    return c_.g.add_value(v);
  }
  Case c_;
};

class Random {
 public:
  explicit Random(uint64_t seed) : rng(seed) {}
  int64_t pick(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }
  bool coin() { return pick(0, 1) == 1; }
  double real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }
  std::mt19937_64 rng;
};

// TensorFlow's output size along one axis.
inline int64_t conv_out(bool same, int64_t in, int64_t window, int64_t stride) {
  return same ? (in + stride - 1) / stride : (in - window) / stride + 1;
}

inline Case conv_case(ModelOp op, Random& r) {
  const bool transpose = op == ModelOp::Conv2dTranspose || op == ModelOp::Conv2dTransposeBackwardInput ||
                         op == ModelOp::Conv2dTransposeBackwardKernel;
  const int64_t b = r.pick(1, 3), ci = r.pick(1, 5), co = r.pick(1, 6), kh = r.pick(1, 3), kw = r.pick(1, 3),
                sh = r.pick(1, 3), sw = r.pick(1, 3), dh = transpose ? 1 : r.pick(1, 2),
                dw = transpose ? 1 : r.pick(1, 2);
  const bool same = r.coin(), relu = r.coin();
  // x [h, w, ci] -> y [oh, ow, co] (conv2d: y the conv's output; conv2d_transpose: y its output).
  const int64_t h = r.pick((kh - 1) * dh + 1, 9), w = r.pick((kw - 1) * dw + 1, 9);
  int64_t oh, ow;
  if (!transpose) {
    oh = conv_out(same, h, (kh - 1) * dh + 1, sh);
    ow = conv_out(same, w, (kw - 1) * dw + 1, sw);
  } else {  // Keras: in * stride with same, in * stride + max(kernel - stride, 0) with valid
    oh = h * sh + (same ? 0 : std::max<int64_t>(kh - sh, 0));
    ow = w * sw + (same ? 0 : std::max<int64_t>(kw - sw, 0));
  }
  const Padding padding = same ? Padding::Same : Padding::Valid;
  // The attributes of the layer (a fused relu only on the forward kinds, as the step passes make it).
  auto attrs = [&](bool fused) -> ModelAttrs {
    const std::optional<Activation> act = fused && relu ? std::optional(Activation::Relu) : std::nullopt;
    if (transpose) return Conv2dTransposeAttrs{{kh, kw}, co, {sh, sw}, padding, act};
    return Conv2dAttrs{{kh, kw}, co, {sh, sw}, padding, {dh, dw}, act};
  };
  Builder g(fmt::format("{} x [{}, {}, {}, {}] kernel {}x{} -> {} strides {}x{} dilation {}x{} {}{}", model_op_name(op),
                        b, h, w, ci, kh, kw, co, sh, sw, dh, dw, same ? "same" : "valid", relu ? " relu" : ""),
            b);
  const Shape kernel = transpose ? Shape{kh, kw, co, ci} : Shape{kh, kw, ci, co};
  const Shape xs = {h, w, ci}, ys = {oh, ow, co};
  switch (op) {
    case ModelOp::Conv2d:
    case ModelOp::Conv2dTranspose: {
      int x = g.input(xs), k = g.param(kernel), bias = g.param({co});
      g.node(op, {x, k, bias}, {g.value(ys)}, attrs(true));
      break;
    }
    case ModelOp::Conv2dBackwardInput:
    case ModelOp::Conv2dTransposeBackwardInput: {
      int dy = g.input(ys), k = g.param(kernel);
      g.node(op, {dy, k}, {g.value(xs)}, attrs(false));
      break;
    }
    default: {  // the kernel gradients
      int x = g.input(xs), dy = g.input(ys);
      g.node(op, {x, dy}, {g.value(kernel, false)}, attrs(false));
      break;
    }
  }
  return g.done(r.rng);
}

inline Case dense_case(ModelOp op, Random& r, bool many_rows) {
  const int64_t b = r.pick(1, 3), in = r.pick(1, 12), out = r.pick(1, 12);
  // Per example a vector or a sequence of vectors; many rows split the kernel gradient into blocks.
  const int64_t t = many_rows ? r.pick(30, 60) : r.pick(0, 3);
  auto with = [&](int64_t last) { return t ? Shape{t, last} : Shape{last}; };
  const bool relu = r.coin();
  Builder g(fmt::format("{} [{} x {}, {}] -> {}{}", model_op_name(op), b, t, in, out, relu ? " relu" : ""), b);
  switch (op) {
    case ModelOp::Dense: {
      int x = g.input(with(in)), k = g.param({in, out}), bias = g.param({out});
      g.node(op, {x, k, bias}, {g.value(with(out))},
             DenseAttrs{out, relu ? std::optional(Activation::Relu) : std::nullopt});
      break;
    }
    case ModelOp::DenseBackwardInput: {
      int dy = g.input(with(out)), k = g.param({in, out});
      g.node(op, {dy, k}, {g.value(with(in))}, DenseAttrs{out, std::nullopt});
      break;
    }
    case ModelOp::DenseBackwardKernel: {
      int x = g.input(with(in)), dy = g.input(with(out));
      g.node(op, {x, dy}, {g.value({in, out}, false)}, DenseAttrs{out, std::nullopt});
      break;
    }
    default: {  // bias_backward
      int dy = g.input(with(out));
      g.node(op, {dy}, {g.value({out}, false)});
      break;
    }
  }
  return g.done(r.rng);
}

inline Case pool_case(ModelOp op, Random& r) {
  const int64_t b = r.pick(1, 3), c = r.pick(1, 4), kh = r.pick(1, 3), kw = r.pick(1, 3), sh = r.pick(1, 3),
                sw = r.pick(1, 3);
  const bool same = r.coin();
  const int64_t h = r.pick(kh, 9), w = r.pick(kw, 9);
  const int64_t oh = conv_out(same, h, kh, sh), ow = conv_out(same, w, kw, sw);
  const Pool2dAttrs attrs{{kh, kw}, {sh, sw}, same ? Padding::Same : Padding::Valid};
  Builder g(fmt::format("{} [{}, {}, {}, {}] size {}x{} strides {}x{} {}", model_op_name(op), b, h, w, c, kh, kw, sh,
                        sw, same ? "same" : "valid"),
            b);
  const Shape xs = {h, w, c}, ys = {oh, ow, c};
  switch (op) {
    case ModelOp::MaxPool2d:
    case ModelOp::AvgPool2d: g.node(op, {g.input(xs, Dist::Coarse)}, {g.value(ys)}, attrs); break;
    case ModelOp::MaxPool2dBackward: {
      int x = g.input(xs, Dist::Coarse), dy = g.input(ys);
      g.node(op, {x, dy}, {g.value(xs)}, attrs);
      break;
    }
    default: g.node(op, {g.input(ys)}, {g.value(xs)}, attrs); break;  // avg_pool2d_backward
  }
  return g.done(r.rng);
}

inline Case global_pool_case(ModelOp op, Random& r) {
  const int64_t b = r.pick(1, 3), h = r.pick(1, 6), w = r.pick(1, 6), c = r.pick(1, 5);
  Builder g(fmt::format("{} [{}, {}, {}, {}]", model_op_name(op), b, h, w, c), b);
  const Shape xs = {h, w, c}, ys = {c};
  switch (op) {
    case ModelOp::GlobalAvgPool:
    case ModelOp::GlobalMaxPool: g.node(op, {g.input(xs, Dist::Coarse)}, {g.value(ys)}); break;
    case ModelOp::GlobalAvgPoolBackward: g.node(op, {g.input(ys)}, {g.value(xs)}); break;
    default: {
      int x = g.input(xs, Dist::Coarse), dy = g.input(ys);
      g.node(op, {x, dy}, {g.value(xs)});
      break;
    }
  }
  return g.done(r.rng);
}

inline Case upsample_case(ModelOp op, Random& r) {
  const int64_t b = r.pick(1, 2), h = r.pick(1, 6), w = r.pick(1, 6), c = r.pick(1, 3), sh = r.pick(1, 4),
                sw = r.pick(1, 4);
  const Interpolation method = r.coin() ? Interpolation::Bilinear : Interpolation::Nearest;
  Builder g(fmt::format("{} [{}, {}, {}, {}] size {}x{} {}", model_op_name(op), b, h, w, c, sh, sw, enum_text(method)),
            b);
  const Upsample2dAttrs attrs{{sh, sw}, method};
  const Shape xs = {h, w, c}, ys = {h * sh, w * sw, c};
  if (op == ModelOp::Upsample2d) g.node(op, {g.input(xs)}, {g.value(ys)}, attrs);
  else g.node(op, {g.input(ys)}, {g.value(xs)}, attrs);
  return g.done(r.rng);
}

inline Shape random_shape(Random& r, int64_t rank) {
  Shape s;
  for (int64_t i = 0; i < rank; ++i) s.push_back(r.pick(1, 5));
  return s;
}

inline Case activation_case(ModelOp op, Random& r) {
  const int64_t b = r.pick(1, 3);
  const Shape s = random_shape(r, r.pick(1, 3));
  Builder g(fmt::format("{} [{}, {}]", model_op_name(op), b, shape_to_string(s)), b);
  ModelAttrs attrs;
  if (op == ModelOp::LeakyRelu || op == ModelOp::LeakyReluBackward) attrs = LeakyReluAttrs{r.real(0, 0.5)};
  if (op == ModelOp::Softmax || op == ModelOp::SoftmaxBackward)
    attrs = SoftmaxAttrs{r.pick(0, static_cast<int64_t>(s.size()) - 1)};
  if (op == ModelOp::DropoutBackward) attrs = DropoutAttrs{0.5, 0, Flag{}};
  const bool backward = op == ModelOp::LeakyReluBackward || op == ModelOp::GeluBackward ||
                        op == ModelOp::SoftmaxBackward || op == ModelOp::DropoutBackward;
  if (backward) {
    int x = g.input(s, Dist::Wide), dy = g.input(s);
    g.node(op, {x, dy}, {g.value(s)}, attrs);
  } else {
    g.node(op, {g.input(s, Dist::Wide)}, {g.value(s)}, attrs);
  }
  return g.done(r.rng);
}

inline Case norm_case(ModelOp op, Random& r, bool many_rows) {
  const int64_t b = many_rows ? 3 : r.pick(1, 3), c = r.pick(1, 6);
  // Per example [c], [t, c] or [h, w, c]; many rows: several of batch_norm's 256-row statistics blocks.
  Shape xs;
  if (many_rows) xs = {10, 10, c};
  else if (r.coin()) xs = {c};
  else xs = {r.pick(1, 4), r.pick(1, 4), c};
  const bool inference = op == ModelOp::BatchNorm && !many_rows && r.coin();
  Builder g(fmt::format("{} [{}, {}]{}", model_op_name(op), b, shape_to_string(xs), inference ? " inference" : ""), b);
  const double epsilon = r.coin() ? 1e-3 : 1e-5;
  const bool batch = op == ModelOp::BatchNorm || op == ModelOp::BatchNormBackward;
  const ModelAttrs attrs =
      batch ? ModelAttrs(BatchNormAttrs{epsilon, 0.99, Flag{inference}}) : ModelAttrs(LayerNormAttrs{epsilon});
  const Shape row_shape(xs.begin(), xs.end() - 1);  // layer_norm's statistics: one per row
  switch (op) {
    case ModelOp::BatchNorm: {
      int x = g.input(xs, many_rows ? Dist::Offset : Dist::Uniform);
      int mm = g.input({c}, Dist::Uniform, false), mv = g.input({c}, Dist::Positive, false);
      int gamma = g.param({c}), beta = g.param({c});
      g.node(op, {x, gamma, beta, mm, mv}, {g.value(xs), g.value({c}, false), g.value({c}, false)}, attrs);
      break;
    }
    case ModelOp::BatchNormBackward: {
      int x = g.input(xs), dy = g.input(xs), mean = g.input({c}, Dist::Uniform, false),
          var = g.input({c}, Dist::Positive, false), gamma = g.param({c});
      g.node(op, {x, dy, gamma, mean, var}, {g.value(xs), g.value({c}, false), g.value({c}, false)}, attrs);
      break;
    }
    case ModelOp::LayerNorm: {
      int x = g.input(xs, Dist::Wide), gamma = g.param({c}), beta = g.param({c});
      g.node(op, {x, gamma, beta}, {g.value(xs), g.value(row_shape), g.value(row_shape)}, attrs);
      break;
    }
    default: {  // layer_norm_backward
      int x = g.input(xs), dy = g.input(xs), mean = g.input(row_shape), var = g.input(row_shape, Dist::Positive),
          gamma = g.param({c});
      g.node(op, {x, dy, gamma, mean, var}, {g.value(xs), g.value({c}, false), g.value({c}, false)}, attrs);
      break;
    }
  }
  return g.done(r.rng);
}

inline Case dropout_case(Random& r) {
  const int64_t b = r.pick(1, 4);
  const Shape s = random_shape(r, r.pick(1, 3));  // often not a multiple of 4 values per example
  const bool inference = r.pick(0, 3) == 0;
  const double rate = r.real(0.05, 0.7);
  Builder g(fmt::format("dropout [{}, {}] rate {:.3f}{}", b, shape_to_string(s), rate, inference ? " inference" : ""),
            b);
  g.node(ModelOp::Dropout, {g.input(s)}, {g.value(s), g.value(s)}, DropoutAttrs{rate, r.pick(0, 5), Flag{inference}});
  return g.done(r.rng);
}

// A loss (or its gradient) of kind `kind` with random from_logits / sparse / targets.
inline Case loss_case(ModelOp op, LossKind kind, Random& r) {
  const int64_t b = r.pick(1, 4);
  const bool ce = kind == LossKind::CrossEntropy, bce = kind == LossKind::BinaryCrossEntropy;
  const bool from_logits = (ce || bce) && r.coin(), sparse = ce && r.coin();
  const bool scaled = op == ModelOp::LossBackward && r.coin();  // mixed_fp16's loss scale
  const int64_t classes = r.pick(1, 6);
  // Per example [classes] or [h, w, classes] (cross_entropy over the last axis at every position).
  Shape ps = r.coin() ? Shape{classes} : Shape{r.pick(1, 3), r.pick(1, 3), classes};
  Dist pd = from_logits ? Dist::Wide : (ce ? Dist::Simplex : (bce ? Dist::Probability : Dist::Uniform));
  if (ce && !from_logits && sparse) pd = Dist::Probability;
  Shape ts = ps;
  Dist td = bce ? Dist::Probability : Dist::Uniform;
  if (ce) {
    if (sparse) ts.pop_back();
    td = sparse ? Dist::Labels : (r.coin() ? Dist::OneHot : Dist::Simplex);
  }
  const double delta = r.real(0.3, 1.5);
  Builder g(fmt::format("{} {} pred [{}, {}]{}{}{}", model_op_name(op), loss_kind_name(kind), b, shape_to_string(ps),
                        from_logits ? " from logits" : "", sparse ? " sparse" : "", scaled ? " loss-scaled" : ""),
            b);
  LossAttrs attrs{kind, from_logits, std::nullopt, std::nullopt, std::nullopt};
  if (ce) attrs.sparse = sparse;
  if (kind == LossKind::Huber) attrs.delta = delta;
  if (scaled) attrs.loss_scale = LossScaling::Dynamic;
  int p = g.input(ps, pd), t = g.target(ts, td, classes);
  if (op == ModelOp::Loss) g.node(op, {p, t}, {g.value({}, false)}, attrs);
  else g.node(op, {p, t}, {g.value(ps)}, attrs);
  if (scaled)  // the reference scales the loss gradient when the step has a loss-scaled optimizer
    g.node(ModelOp::OptimizerStep, {}, {},
           OptimizerAttrs{.kind = OptimizerKind::Sgd, .loss_scale = LossScaling::Dynamic});
  return g.done(r.rng);
}

// embedding and its gradient: ids of rank 0 to 2 per example (repeated and, with a table larger than
// the batch's ids, rows no id names), or many positions (the backward pass's sort over more ids).
inline Case embedding_case(ModelOp op, Random& r, bool many_positions) {
  const int64_t b = r.pick(1, 3), input_dim = r.pick(1, 12), output_dim = r.pick(1, 6);
  const Shape ids_shape = many_positions ? Shape{r.pick(40, 80)} : random_shape(r, r.pick(0, 2));
  Shape ys = ids_shape;
  ys.push_back(output_dim);
  Builder g(fmt::format("{} ids [{}, {}] table [{}, {}]", model_op_name(op), b, shape_to_string(ids_shape), input_dim,
                        output_dim),
            b);
  const EmbeddingAttrs attrs{input_dim, output_dim};
  const int ids = g.ids(ids_shape, input_dim);
  if (op == ModelOp::Embedding) g.node(op, {ids, g.param({input_dim, output_dim})}, {g.value(ys)}, attrs);
  else g.node(op, {ids, g.input(ys)}, {g.value({input_dim, output_dim}, false)}, attrs);
  return g.done(r.rng);
}

// Every kind's random cases; a kind without cases fails (the coverage test reads this).
inline std::vector<Case> cases_for(ModelOp op, Random& r) {
  std::vector<Case> cases;
  auto repeat = [&](int n, auto make) {
    for (int i = 0; i < n; ++i) cases.push_back(make());
  };
  switch (op) {
    case ModelOp::Expr:
    case ModelOp::OptimizerStep: break;  // not node kernels
    case ModelOp::Conv2d:
    case ModelOp::Conv2dBackwardInput:
    case ModelOp::Conv2dBackwardKernel:
    case ModelOp::Conv2dTranspose:
    case ModelOp::Conv2dTransposeBackwardInput:
    case ModelOp::Conv2dTransposeBackwardKernel: repeat(12, [&] { return conv_case(op, r); }); break;
    case ModelOp::Dense:
    case ModelOp::DenseBackwardInput:
    case ModelOp::DenseBackwardKernel:
    case ModelOp::BiasBackward:
      repeat(6, [&] { return dense_case(op, r, false); });
      repeat(3, [&] { return dense_case(op, r, true); });
      break;
    case ModelOp::MaxPool2d:
    case ModelOp::MaxPool2dBackward:
    case ModelOp::AvgPool2d:
    case ModelOp::AvgPool2dBackward: repeat(12, [&] { return pool_case(op, r); }); break;
    case ModelOp::GlobalAvgPool:
    case ModelOp::GlobalAvgPoolBackward:
    case ModelOp::GlobalMaxPool:
    case ModelOp::GlobalMaxPoolBackward: repeat(6, [&] { return global_pool_case(op, r); }); break;
    case ModelOp::Upsample2d:
    case ModelOp::Upsample2dBackward: repeat(12, [&] { return upsample_case(op, r); }); break;
    case ModelOp::LeakyRelu:
    case ModelOp::LeakyReluBackward:
    case ModelOp::Gelu:
    case ModelOp::GeluBackward:
    case ModelOp::Softmax:
    case ModelOp::SoftmaxBackward:
    case ModelOp::DropoutBackward: repeat(6, [&] { return activation_case(op, r); }); break;
    case ModelOp::BatchNorm:
    case ModelOp::BatchNormBackward:
    case ModelOp::LayerNorm:
    case ModelOp::LayerNormBackward:
      repeat(6, [&] { return norm_case(op, r, false); });
      repeat(2, [&] { return norm_case(op, r, true); });
      break;
    case ModelOp::Dropout: repeat(8, [&] { return dropout_case(r); }); break;
    case ModelOp::Embedding:
    case ModelOp::EmbeddingBackward:
      repeat(8, [&] { return embedding_case(op, r, false); });
      repeat(2, [&] { return embedding_case(op, r, true); });
      break;
    case ModelOp::Loss:
    case ModelOp::LossBackward:
      for (LossKind kind : all_loss_kinds()) repeat(6, [&] { return loss_case(op, kind, r); });
      break;
    case ModelOp::MovingAverage:
      repeat(3, [&] {
        const int64_t c = r.pick(1, 8);
        Builder g(fmt::format("moving_average [{}]", c), 1);
        int state = g.state({c}), stat = g.input({c}, Dist::Uniform, false);
        g.node(op, {state, stat}, {}, MovingAverageAttrs{r.real(0.5, 0.999)});
        return g.done(r.rng);
      });
      break;
    case ModelOp::Round:
      for (Float16 dtype : {Float16::BF16, Float16::F16})
        repeat(2, [&] {
          const int64_t b = r.pick(1, 3);
          const Shape s = {r.pick(16, 64)};
          Builder g(fmt::format("round to {} [{}, {}]", enum_text(dtype), b, s[0]), b);
          g.node(op, {g.input(s, Dist::Magnitudes)}, {g.value(s)}, RoundAttrs{dtype});
          return g.done(r.rng);
        });
      break;
  }
  return cases;
}

// The values fed to a case: `d` drawn per element (per class vector for OneHot and Simplex).
inline Tensor draw(Dist d, const Shape& shape, int64_t classes, std::mt19937_64& rng) {
  Tensor t = Tensor::empty(DType::F32, shape);
  float* p = t.data<float>();
  const int64_t n = t.num_elements();
  std::uniform_real_distribution<double> u(0, 1);
  for (int64_t i = 0; i < n; ++i) {
    const double x = u(rng);
    switch (d) {
      case Dist::Uniform: p[i] = static_cast<float>(2 * x - 1); break;
      case Dist::Wide: p[i] = static_cast<float>(8 * x - 4); break;
      case Dist::Coarse: p[i] = static_cast<float>(std::floor(x * 5) / 2 - 1); break;
      case Dist::Positive: p[i] = static_cast<float>(0.1 + 1.9 * x); break;
      case Dist::Offset: p[i] = static_cast<float>(4 + 2 * x); break;
      case Dist::Probability: p[i] = x < 0.05 ? 0.0f : x > 0.95 ? 1.0f : static_cast<float>(x); break;
      case Dist::Labels:
        p[i] = static_cast<float>(std::min<int64_t>(static_cast<int64_t>(x * classes), classes - 1));
        break;
      case Dist::Magnitudes: {
        const double m = std::ldexp(1 + x, static_cast<int>(rng() % 51) - 30);
        p[i] = static_cast<float>(rng() % 2 ? m : -m);
        break;
      }
      case Dist::OneHot:
      case Dist::Simplex: p[i] = static_cast<float>(x); break;
    }
  }
  if (d == Dist::OneHot || d == Dist::Simplex) {
    const int64_t last = shape.empty() ? 1 : shape.back();
    for (int64_t v = 0; v < n / last; ++v) {
      float* q = p + v * last;
      if (d == Dist::OneHot) {
        const int64_t hot = static_cast<int64_t>(rng() % static_cast<uint64_t>(last));
        for (int64_t c = 0; c < last; ++c) q[c] = c == hot ? 1.0f : 0.0f;
      } else {
        double sum = 0;
        for (int64_t c = 0; c < last; ++c) sum += q[c] + 0.01;
        for (int64_t c = 0; c < last; ++c) q[c] = static_cast<float>((q[c] + 0.01) / sum);
      }
    }
  }
  return t;
}

// A value's bytes as the kernels read them, in a float buffer (the buffers the tests hand the kernels
// are float vectors): f32 as it is, another dtype (embedding's i64 ids) converted and its bytes copied.
inline std::vector<float> value_bytes(const Tensor& t, DType dtype) {
  const Tensor x = t.dtype() == dtype ? t : cast_tensor(t, dtype);
  std::vector<float> out((x.byte_size() + sizeof(float) - 1) / sizeof(float));
  std::memcpy(out.data(), x.raw(), x.byte_size());
  return out;
}

// Every input of the case's node as host data: the fed values drawn from their distributions (in their
// values' dtypes), the parameters and states uniform in [-1, 1).
inline std::vector<std::vector<float>> node_inputs(const Case& c) {
  std::mt19937_64 rng(c.seed);
  std::map<int, std::vector<float>> fed;
  for (size_t k = 0; k < c.g.inputs.size(); ++k) {
    Tensor t = draw(c.dists[k], c.g.full_shape(c.g.inputs[k], c.rows), c.classes, rng);
    fed[c.g.inputs[k]] = value_bytes(t, c.g.values[c.g.inputs[k]].dtype);
  }
  if (c.g.target >= 0) {
    Tensor t = draw(c.target_dist, c.g.full_shape(c.g.target, c.rows), c.classes, rng);
    fed[c.g.target].assign(t.data<float>(), t.data<float>() + t.num_elements());
  }
  std::vector<std::vector<float>> out;
  for (int v : c.g.nodes.at(0).inputs) {
    auto it = fed.find(v);
    if (it != fed.end()) {
      out.push_back(it->second);
      continue;
    }
    std::vector<float> x(static_cast<size_t>(shape_num_elements(c.g.full_shape(v, c.rows))));
    for (float& e : x) e = static_cast<float>(std::uniform_real_distribution<double>(-1, 1)(rng));
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace pipec::step_cases
