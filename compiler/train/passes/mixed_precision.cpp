// mixed_precision: a train block's `precision = mixed_bf16 | mixed_fp16` made explicit in the step graph,
// as `round` nodes at the points where a GPU casts to the 16-bit compute type, so that every executor
// runs the same rounding (the CPU ones compute in f32 between the casts: Debian's oneDNN 2.6 has no bf16
// or f16 primitives on CPUs without AVX-512).
//
// The casts follow Keras' mixed-precision policies (and PyTorch's autocast):
//   - model inputs are cast to the compute type (every layer casts its floating inputs);
//   - a parameter is cast where a layer reads it (conv2d, conv2d_transpose, dense kernels and biases);
//     batch_norm and layer_norm compute in f32 with f32 gamma and beta, as Keras' normalization layers
//     do, so theirs stay f32; the f32 parameters themselves are the master weights the optimizer updates;
//   - every forward layer's output (the activation) is stored in the compute type; batch statistics,
//     dropout masks and the loss (computed in f32 from the rounded prediction) are not;
//   - every gradient the backward pass makes is stored in the compute type: activation gradients, and
//     the gradients of the parameters that were cast (the gradient of the cast is a cast, then to f32).
// A layer computes from rounded operands with f32 accumulation and its output is rounded once, as a
// cuDNN or cuBLASLt call with 16-bit tensors and an f32 compute type does.
//
// mixed_fp16 also scales the loss, as Keras' LossScaleOptimizer: the loss gradient is multiplied by the
// loss scale before the backward pass (so small gradients survive f16), and the optimizer step unscales
// the gradients, or skips the step and halves the scale when one is not finite
// (runtime/train/math/loss_scale.h). The loss_backward and optimizer_step nodes carry `loss_scale = dynamic`.
//
// Unlike the other passes this one changes what the step computes, so it runs at every -O level.
#include <optional>
#include <set>

#include "compiler/train/passes/step_passes.h"

namespace pipec {

namespace {

// Kinds that compute in f32 from f32 parameters under a mixed policy.
bool keeps_f32_params(ModelOp op) {
  return op == ModelOp::BatchNorm || op == ModelOp::BatchNormBackward || op == ModelOp::LayerNorm ||
         op == ModelOp::LayerNormBackward;
}

std::optional<Float16> compute_dtype(Precision precision) {
  switch (precision) {
    case Precision::Fp32: return std::nullopt;
    case Precision::MixedBf16: return Float16::BF16;
    case Precision::MixedFp16: return Float16::F16;
  }
  return std::nullopt;
}

}  // namespace

int mixed_precision(ModelGraph& g) {
  const std::optional<Float16> dtype = compute_dtype(g.precision);
  if (!dtype) return 0;
  for (const GraphNode& n : g.nodes)
    if (n.op == ModelOp::Round) return 0;  // already applied

  int rewrites = 0;
  std::vector<GraphNode> out;
  auto round_node = [&](int from, int to, OpCategory phase, const GraphNode* of) {
    GraphNode r;
    r.op = ModelOp::Round;
    r.inputs = {from};
    r.outputs = {to};
    r.attrs = RoundAttrs{.dtype = *dtype};
    r.phase = phase;
    if (of) {
      r.layer = of->layer;
      r.loc = of->loc;
    }
    out.push_back(std::move(r));
    ++rewrites;
  };
  // A new value like `v` that a node computes in f32 before the round node writes `v` itself.
  auto unrounded_copy = [&](int v) {
    GraphValue c = g.values[v];
    c.name.clear();
    c.grad_of = -1;
    if (c.role != ValueRole::Gradient) c.role = ValueRole::Activation;
    return g.add_value(c);
  };

  // The inputs and parameters a layer reads through a cast, each cast once at the start of the step.
  std::vector<int> replacement(g.values.size(), -1);
  std::set<int> cast_params;
  for (int v : g.inputs)
    if (g.values[v].dtype == DType::F32) replacement[v] = -2;
  for (const GraphNode& n : g.nodes)
    if (!keeps_f32_params(n.op))
      for (int v : n.inputs)
        if (g.values[v].role == ValueRole::Param) cast_params.insert(v);
  for (int p : cast_params) replacement[p] = -2;
  std::vector<int> cast_order = g.inputs;
  cast_order.insert(cast_order.end(), g.params.begin(), g.params.end());
  for (int v : cast_order) {
    if (replacement[v] != -2) continue;
    replacement[v] = unrounded_copy(v);
    round_node(v, replacement[v], OpCategory::Forward, nullptr);
  }

  std::vector<int> new_index(g.nodes.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    GraphNode& n = g.nodes[i];
    for (int& v : n.inputs) {
      const bool param = g.values[v].role == ValueRole::Param;
      if (replacement[v] >= 0 && !(param && keeps_f32_params(n.op))) v = replacement[v];
    }
    if (*dtype == Float16::F16) {
      if (n.op == ModelOp::LossBackward) n.attrs_as<LossAttrs>().loss_scale = LossScaling::Dynamic;
      if (n.op == ModelOp::OptimizerStep) n.attrs_as<OptimizerAttrs>().loss_scale = LossScaling::Dynamic;
    }
    // Which outputs are stored in the compute type.
    std::vector<size_t> rounded;
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const GraphValue& v = g.values[n.outputs[k]];
      if (v.dtype != DType::F32) continue;
      if (n.phase == OpCategory::Forward && (n.op == ModelOp::Expr || k == 0)) rounded.push_back(k);
      if (n.phase == OpCategory::Backward && (v.grad_of < 0 || cast_params.count(v.grad_of))) rounded.push_back(k);
    }
    std::vector<std::pair<int, int>> casts;  // (computed in f32, rounded: the value the graph reads)
    for (size_t k : rounded) {
      const int v = n.outputs[k];
      n.outputs[k] = unrounded_copy(v);
      casts.emplace_back(n.outputs[k], v);
    }
    const OpCategory phase = n.phase;
    GraphNode copy = n;
    new_index[i] = static_cast<int>(out.size());
    out.push_back(std::move(n));
    for (const auto& c : casts) round_node(c.first, c.second, phase, &copy);
  }
  remap_forward_links(out, new_index);
  g.nodes = std::move(out);
  return rewrites;
}

}  // namespace pipec
