#include "compiler/train/layer_parts.h"

#include <stdexcept>
#include <utility>

namespace pipec {

namespace {

// ---- the parts rules layers.def names ----

// Nothing besides x in f32 (pools, activations, element-wise layers).
LayerParts no_parts(const GraphNode&, const Shape&) { return {}; }

// Keras' kernel layouts: conv2d [kh, kw, in, out], conv2d_transpose [kh, kw, out, in]; the fans of
// glorot_uniform are taken from the shape as written, with the receptive field kh * kw.
LayerParts kernel_and_bias(Pair k, int64_t filters, int64_t channels, bool transpose) {
  const Shape kernel = transpose ? Shape{k[0], k[1], filters, channels} : Shape{k[0], k[1], channels, filters};
  const int64_t field = k[0] * k[1];
  LayerParts p;
  p.weights = {{"kernel", kernel, Init::GlorotUniform, field * kernel[2], field * kernel[3]},
               {"bias", {filters}, Init::Zeros}};
  return p;
}

LayerParts conv_parts(const GraphNode& n, const Shape& x) {
  const Conv2dAttrs& a = n.attrs_as<Conv2dAttrs>();
  return kernel_and_bias(a.kernel, a.filters, x.back(), false);
}

LayerParts conv_transpose_parts(const GraphNode& n, const Shape& x) {
  const Conv2dTransposeAttrs& a = n.attrs_as<Conv2dTransposeAttrs>();
  return kernel_and_bias(a.kernel, a.filters, x.back(), true);
}

LayerParts dense_parts(const GraphNode& n, const Shape& x) {
  const int64_t units = n.attrs_as<DenseAttrs>().units, in = x.back();
  LayerParts p;
  p.weights = {{"kernel", {in, units}, Init::GlorotUniform, in, units}, {"bias", {units}, Init::Zeros}};
  return p;
}

// gamma and beta per channel; the batch statistics, one per channel for the whole batch.
LayerParts batch_norm_parts(const GraphNode&, const Shape& x) {
  const int64_t c = x.back();
  LayerParts p;
  p.weights = {{"gamma", {c}, Init::Ones},
               {"beta", {c}, Init::Zeros},
               {"moving_mean", {c}, Init::Zeros, 0, 0, true},
               {"moving_variance", {c}, Init::Ones, 0, 0, true}};
  p.outputs = {{{c}, false}, {{c}, false}};
  return p;
}

// gamma and beta per feature; the statistics, one per row of each example.
LayerParts layer_norm_parts(const GraphNode&, const Shape& x) {
  const int64_t c = x.back();
  const Shape rows(x.begin(), x.end() - 1);
  LayerParts p;
  p.weights = {{"gamma", {c}, Init::Ones}, {"beta", {c}, Init::Zeros}};
  p.outputs = {{rows}, {rows}};
  return p;
}

// The kept-and-scaled mask, which the backward pass multiplies by.
LayerParts dropout_parts(const GraphNode&, const Shape& x) {
  LayerParts p;
  p.outputs = {{x}};
  return p;
}

// Integer ids as i64 (every integer type's ids fit); Keras' `embeddings` [input_dim, output_dim],
// RandomUniform(-0.05, 0.05).
LayerParts embedding_parts(const GraphNode& n, const Shape&) {
  const EmbeddingAttrs& a = n.attrs_as<EmbeddingAttrs>();
  LayerParts p;
  p.input = DType::I64;
  p.weights = {{"embeddings", {a.input_dim, a.output_dim}, Init::Uniform}};
  return p;
}

}  // namespace

PartsRule layer_parts_rule(std::string_view builtin) {
  static const std::pair<std::string_view, PartsRule> rules[] = {
#define LAYER(builtin, shape_rule, parts_rule, arguments, doc) {#builtin, parts_rule},
#include "compiler/sema/layers.def"
#undef LAYER
  };
  for (const auto& [name, rule] : rules)
    if (name == builtin) return rule;
  return nullptr;
}

}  // namespace pipec
