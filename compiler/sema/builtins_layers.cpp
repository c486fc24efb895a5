// Model layers. Shapes are per example (no batch dimension), channels last, as in the model's
// declared inputs: conv2d takes [height, width, channels].
#include <fmt/format.h>

#include "compiler/sema/builtin_rules.h"

namespace pipec {

namespace {

Builtin layer(std::string name, std::vector<ParamSpec> params, std::string doc, TypeRule rule) {
  params.insert(params.begin(), req("x"));
  return Builtin{std::move(name), BuiltinKind::Layer, std::move(params), std::move(doc), std::move(rule)};
}

std::optional<Type> float_input(CallContext& ctx, int64_t rank, const char* shape_text) {
  auto t = ctx.tensor("x");
  if (!t) return std::nullopt;
  if (!is_float(t->dtype) || (rank >= 0 && t->rank() != rank)) {
    ctx.error(DiagKind::layer_shape_mismatch, ctx.arg("x").range,
              fmt::format("{} takes a float {} input, not {}", ctx.builtin.name, shape_text, type_to_string(*t)));
    return std::nullopt;
  }
  return t;
}

// Output size of a window op along one dimension (TensorFlow's rule for same/valid padding).
int64_t window_out(int64_t in, int64_t k, int64_t stride, bool same) {
  if (in < 0) return kUnknownDim;
  return same ? (in + stride - 1) / stride : (in - k) / stride + 1;
}

Type spatial(CallContext& ctx, bool has_filters) {
  auto t = float_input(ctx, 3, "[height, width, channels]");
  auto filters = has_filters ? ctx.const_int("filters", 1) : std::optional<int64_t>(0);
  auto kernel = ctx.const_int(has_filters ? "kernel" : "size", 1);
  auto strides = ctx.has("strides") ? ctx.const_int("strides", 1) : std::optional<int64_t>(has_filters ? 1 : kernel.value_or(1));
  if (!t || !filters || !kernel || !strides) return Type::error();
  bool same = ctx.arg("padding").option == "same";
  int64_t h = window_out(t->shape[0], *kernel, *strides, same);
  int64_t w = window_out(t->shape[1], *kernel, *strides, same);
  if ((h != kUnknownDim && h <= 0) || (w != kUnknownDim && w <= 0)) {
    ctx.error(DiagKind::layer_shape_mismatch, ctx.range,
              fmt::format("a {}x{} window does not fit a {} input with valid padding", *kernel, *kernel, type_to_string(*t)));
    return Type::error();
  }
  return Type::tensor(t->dtype, {h, w, has_filters ? *filters : t->shape[2]});
}

Type same_shape(CallContext& ctx) {
  auto t = float_input(ctx, -1, "tensor");
  if (!t) return Type::error();
  return *t;
}

}  // namespace

void register_layer_builtins(std::vector<Builtin>& out) {
  out.push_back(layer("conv2d", {req("filters"), req("kernel"), opt("strides", "1"), opt("padding", "valid", {"valid", "same"})},
                      "2-D convolution over [height, width, channels] with `filters` output channels and a square kernel.",
                      [](CallContext& ctx) { return spatial(ctx, true); }));
  out.push_back(layer("max_pool2d", {req("size"), opt("strides", "size"), opt("padding", "valid", {"valid", "same"})},
                      "Maximum over square windows of [height, width, channels].", [](CallContext& ctx) { return spatial(ctx, false); }));
  out.push_back(layer("avg_pool2d", {req("size"), opt("strides", "size"), opt("padding", "valid", {"valid", "same"})},
                      "Average over square windows of [height, width, channels].", [](CallContext& ctx) { return spatial(ctx, false); }));
  out.push_back(layer("global_avg_pool", {}, "Averages [height, width, channels] over space: -> [channels].",
                      [](CallContext& ctx) -> Type {
                        auto t = float_input(ctx, 3, "[height, width, channels]");
                        if (!t) return Type::error();
                        return Type::tensor(t->dtype, {t->shape[2]});
                      }));
  out.push_back(layer("dense", {req("units")}, "Fully connected layer on the last dimension: [..., n] -> [..., units].",
                      [](CallContext& ctx) -> Type {
                        auto t = float_input(ctx, -1, "[..., features]");
                        auto units = ctx.const_int("units", 1);
                        if (!t || !units) return Type::error();
                        if (t->rank() == 0) {
                          ctx.error(DiagKind::layer_shape_mismatch, ctx.arg("x").range, "dense needs an input with a feature dimension");
                          return Type::error();
                        }
                        Type r = *t;
                        r.shape.back() = *units;
                        return r;
                      }));
  out.push_back(layer("flatten", {}, "Flattens the input to one dimension.", [](CallContext& ctx) -> Type {
    auto t = float_input(ctx, -1, "tensor");
    if (!t) return Type::error();
    return Type::tensor(t->dtype, {t->num_elements()});
  }));
  // concat in a model is the op of the same name (registered earlier), seen as a layer.
  for (const Builtin& b : out)
    if (b.kind == BuiltinKind::Op && b.name == "concat") {
      Builtin c = b;
      c.kind = BuiltinKind::Layer;
      out.push_back(c);
      break;
    }
  for (const char* name : {"relu", "tanh", "sigmoid", "gelu", "softmax", "batch_norm", "layer_norm"})
    out.push_back(layer(name, {}, std::string(name) + " activation/normalization; the shape is unchanged.", same_shape));
  out.push_back(layer("dropout", {req("rate")}, "Zeroes a `rate` fraction of activations while training.",
                      [](CallContext& ctx) -> Type {
                        auto rate = ctx.const_number("rate");
                        if (rate && (*rate < 0 || *rate >= 1))
                          ctx.error(DiagKind::invalid_argument_value, ctx.arg("rate").range, "dropout rate must be in [0, 1)");
                        return same_shape(ctx);
                      }));
  out.push_back(layer("add", {req("y")}, "Element-wise sum of two equally shaped activations (residual connections).",
                      [](CallContext& ctx) -> Type {
                        auto a = float_input(ctx, -1, "tensor");
                        auto b = ctx.tensor("y");
                        if (!a || !b) return Type::error();
                        if (a->shape != b->shape) {
                          ctx.error(DiagKind::layer_shape_mismatch, ctx.range,
                                    fmt::format("add needs equal shapes, not {} and {}", type_to_string(*a), type_to_string(*b)));
                          return Type::error();
                        }
                        return *a;
                      }));
}

}  // namespace pipec
