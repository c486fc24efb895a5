// Model layers. Shapes are per example (no batch dimension), channels last, as in the model's
// declared inputs: conv2d takes [height, width, channels]. Output sizes follow TensorFlow/Keras, so a
// model written here has the shapes its Keras twin has.
#include <fmt/format.h>

#include "compiler/sema/builtin_rules.h"

namespace pipec {

namespace {

Builtin layer(std::string name, std::vector<ParamSpec> params, std::string doc, TypeRule rule) {
  params.insert(params.begin(), req("x"));
  return Builtin{std::move(name), BuiltinKind::Layer, std::move(params), std::move(doc), std::move(rule)};
}

std::optional<Type> float_input(CallContext& ctx, int64_t rank, const char* shape_text, int64_t min_rank = 0) {
  auto t = ctx.tensor("x");
  if (!t) return std::nullopt;
  if (!is_float(t->dtype) || (rank >= 0 && t->rank() != rank) || t->rank() < min_rank) {
    ctx.error(DiagKind::layer_shape_mismatch, ctx.arg("x").range,
              fmt::format("{} takes a float {} input, not {}", ctx.builtin.name, shape_text, type_to_string(*t)));
    return std::nullopt;
  }
  return t;
}

// A window size, stride or dilation: one integer for both spatial dimensions, or [height, width].
std::optional<std::pair<int64_t, int64_t>> pair_arg(CallContext& ctx, std::string_view name, int64_t fallback) {
  const BoundArg& a = ctx.arg(name);
  if (!a.present) return std::make_pair(fallback, fallback);
  if (a.type.is_error()) return std::nullopt;
  if (a.type.is_tensor() && a.type.rank() == 1) {
    auto v = ctx.const_int_list(name);
    if (!v) return std::nullopt;
    if (v->size() != 2 || (*v)[0] < 1 || (*v)[1] < 1) {
      ctx.error(DiagKind::invalid_argument_value, a.range,
                fmt::format("`{}` of {} is one positive integer or [height, width], not {} values", name,
                            ctx.builtin.name, v->size()));
      return std::nullopt;
    }
    return std::make_pair((*v)[0], (*v)[1]);
  }
  auto v = ctx.const_int(name, 1);
  if (!v) return std::nullopt;
  return std::make_pair(*v, *v);
}

// Output size of a window op along one dimension, TensorFlow's rule: `same` pads so that the output is
// ceil(in / stride); `valid` uses only full windows, ceil((in - window + 1) / stride). `window` is the
// dilated kernel size, (k - 1) * dilation + 1.
int64_t window_out(int64_t in, int64_t window, int64_t stride, bool same) {
  if (in < 0) return kUnknownDim;
  if (same) return (in + stride - 1) / stride;
  if (in < window) return 0;
  return (in - window) / stride + 1;
}

// Output size of a transposed convolution along one dimension (Keras' deconv_output_length without
// output_padding): `same` gives in * stride, `valid` in * stride + max(k - stride, 0).
int64_t transpose_out(int64_t in, int64_t k, int64_t stride, bool same) {
  if (in < 0) return kUnknownDim;
  return same ? in * stride : in * stride + std::max<int64_t>(k - stride, 0);
}

enum class Window { Conv, Pool, ConvTranspose };

Type spatial(CallContext& ctx, Window kind) {
  auto t = float_input(ctx, 3, "[height, width, channels]");
  bool has_filters = kind != Window::Pool;
  auto filters = has_filters ? ctx.const_int("filters", 1) : std::optional<int64_t>(0);
  auto kernel = pair_arg(ctx, has_filters ? "kernel" : "size", 1);
  if (!kernel) return Type::error();
  // Pools step by their own size unless told otherwise.
  auto strides = pair_arg(ctx, "strides", 1);
  if (kind == Window::Pool && !ctx.has("strides")) strides = kernel;
  auto dilation_arg = kind == Window::Conv ? pair_arg(ctx, "dilation", 1) : std::pair<int64_t, int64_t>{1, 1};
  if (!t || !filters || !strides || !dilation_arg) return Type::error();
  // A plain pair from here on (GCC cannot see that the optional is engaged and warns).
  const std::pair<int64_t, int64_t> dilation = *dilation_arg;
  if ((strides->first > 1 || strides->second > 1) && (dilation.first > 1 || dilation.second > 1)) {
    ctx.error(DiagKind::invalid_argument_value, ctx.arg("dilation").range,
              "conv2d cannot combine strides > 1 with dilation > 1 (TensorFlow refuses it too)");
    return Type::error();
  }
  bool same = ctx.arg("padding").option == "same";
  int64_t h, w;
  if (kind == Window::ConvTranspose) {
    h = transpose_out(t->shape[0], kernel->first, strides->first, same);
    w = transpose_out(t->shape[1], kernel->second, strides->second, same);
  } else {
    int64_t wh = (kernel->first - 1) * dilation.first + 1;
    int64_t ww = (kernel->second - 1) * dilation.second + 1;
    h = window_out(t->shape[0], wh, strides->first, same);
    w = window_out(t->shape[1], ww, strides->second, same);
    if (h == 0 || w == 0) {
      auto& diag = ctx.error(
          DiagKind::layer_shape_mismatch, ctx.range,
          fmt::format("a {}x{} window does not fit a {} input with valid padding", wh, ww, type_to_string(*t)));
      diag.help = "use padding = same, or a smaller window";
      return Type::error();
    }
  }
  return Type::tensor(t->dtype, {h, w, has_filters ? *filters : t->shape[2]});
}

Type same_shape(CallContext& ctx) {
  auto t = float_input(ctx, -1, "tensor");
  if (!t) return Type::error();
  return *t;
}

// A constant float argument in [lo, hi) (hi excluded when `open_hi`), when given.
bool number_in(CallContext& ctx, std::string_view name, double lo, double hi, bool open_hi, const char* range_text) {
  if (!ctx.has(name)) return true;
  auto v = ctx.const_number(name);
  if (!v) return false;
  if (*v < lo || *v > hi || (open_hi && *v == hi)) {
    ctx.error(DiagKind::invalid_argument_value, ctx.arg(name).range,
              fmt::format("`{}` of {} must be in {}, not {}", name, ctx.builtin.name, range_text, *v));
    return false;
  }
  return true;
}

// Normalization over the last (feature) dimension, shape unchanged.
Type rule_norm(CallContext& ctx) {
  auto t = float_input(ctx, -1, "[..., features]", 1);
  bool ok = number_in(ctx, "epsilon", 0, 1, false, "[0, 1]");
  if (ctx.builtin.name == "batch_norm") ok = number_in(ctx, "momentum", 0, 1, false, "[0, 1]") && ok;
  if (!t || !ok) return Type::error();
  return *t;
}

Type rule_axis_activation(CallContext& ctx) {
  auto t = float_input(ctx, -1, "[..., features]", 1);
  if (!t) return Type::error();
  if (ctx.has("axis")) {
    auto a = ctx.const_int("axis");
    if (!a || !normalize_axis(ctx, "axis", *a, t->rank())) return Type::error();
  }
  return *t;
}

// embedding: integer ids of any shape -> f32 [..., output_dim]. Keras casts float ids to int32, dropping
// any fraction; pipec asks for an integer type, so that a float activation (a layer's output, a
// normalized feature) is never read as ids by mistake.
Type rule_embedding(CallContext& ctx) {
  auto t = ctx.tensor("x");
  auto input_dim = ctx.const_int("input_dim", 1);
  auto output_dim = ctx.const_int("output_dim", 1);
  if (!t) return Type::error();
  if (!is_integer(t->dtype)) {
    auto& diag = ctx.error(DiagKind::layer_shape_mismatch, ctx.arg("x").range,
                           fmt::format("embedding takes integer ids, not {}", type_to_string(*t)));
    diag.help = is_float(t->dtype)
                    ? "ids come from a model input of an integer type (`tokens: i32[16]`); a float value is no id"
                    : "ids come from a model input of an integer type (`tokens: i32[16]`)";
    return Type::error();
  }
  if (!input_dim || !output_dim) return Type::error();
  auto shape = t->shape;
  shape.push_back(*output_dim);
  return Type::tensor(DType::F32, shape);
}

}  // namespace

void register_layer_builtins(std::vector<Builtin>& out) {
  out.push_back(
      layer("conv2d",
            {req("filters"), req("kernel"), opt("strides", "1"), opt("padding", "valid", {"valid", "same"}),
             opt("dilation", "1")},
            "2-D convolution (with bias) over [height, width, channels] -> [h', w', filters]. kernel, strides "
            "and dilation are one integer or [height, width]; padding same gives ceil(in / stride), valid "
            "ceil((in - window + 1) / stride), as in TensorFlow.",
            [](CallContext& ctx) { return spatial(ctx, Window::Conv); }));
  out.push_back(
      layer("conv2d_transpose",
            {req("filters"), req("kernel"), opt("strides", "1"), opt("padding", "valid", {"valid", "same"})},
            "Transposed 2-D convolution (learned upsampling): [h, w, c] -> [h * stride, w * stride, filters] with "
            "padding same, [h * stride + max(kernel - stride, 0), ...] with valid, as in Keras.",
            [](CallContext& ctx) { return spatial(ctx, Window::ConvTranspose); }));
  out.push_back(layer("max_pool2d", {req("size"), opt("strides", "size"), opt("padding", "valid", {"valid", "same"})},
                      "Maximum over windows of [height, width, channels]; size and strides are one integer or "
                      "[height, width], output sizes as conv2d's.",
                      [](CallContext& ctx) { return spatial(ctx, Window::Pool); }));
  out.push_back(layer("avg_pool2d", {req("size"), opt("strides", "size"), opt("padding", "valid", {"valid", "same"})},
                      "Average over windows of [height, width, channels] (padding excluded from the average); output "
                      "sizes as conv2d's.",
                      [](CallContext& ctx) { return spatial(ctx, Window::Pool); }));
  out.push_back(
      layer("upsample2d", {opt("size", "2"), opt("method", "nearest", {"nearest", "bilinear"})},
            "Repeats rows and columns `size` times ([height, width] or one integer): [h, w, c] -> "
            "[h * size, w * size, c] (Keras' UpSampling2D).",
            [](CallContext& ctx) -> Type {
              auto t = float_input(ctx, 3, "[height, width, channels]");
              auto size = pair_arg(ctx, "size", 2);
              if (!t || !size) return Type::error();
              auto up = [](int64_t d, int64_t s) { return d < 0 ? kUnknownDim : d * s; };
              return Type::tensor(t->dtype, {up(t->shape[0], size->first), up(t->shape[1], size->second), t->shape[2]});
            }));
  out.push_back(layer("global_avg_pool", {}, "Averages [height, width, channels] over space: -> [channels].",
                      [](CallContext& ctx) -> Type {
                        auto t = float_input(ctx, 3, "[height, width, channels]");
                        if (!t) return Type::error();
                        return Type::tensor(t->dtype, {t->shape[2]});
                      }));
  out.push_back(layer("global_max_pool", {}, "Maximum of [height, width, channels] over space: -> [channels].",
                      [](CallContext& ctx) -> Type {
                        auto t = float_input(ctx, 3, "[height, width, channels]");
                        if (!t) return Type::error();
                        return Type::tensor(t->dtype, {t->shape[2]});
                      }));
  out.push_back(layer("dense", {req("units")},
                      "Fully connected layer (with bias) on the last dimension: [..., n] -> [..., units].",
                      [](CallContext& ctx) -> Type {
                        auto t = float_input(ctx, -1, "[..., features]", 1);
                        auto units = ctx.const_int("units", 1);
                        if (!t || !units) return Type::error();
                        Type r = *t;
                        r.shape.back() = *units;
                        return r;
                      }));
  out.push_back(layer("flatten", {}, "Flattens the input to one dimension: [d1, d2, ...] -> [d1 * d2 * ...].",
                      [](CallContext& ctx) -> Type {
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
  out.push_back(layer("relu", {}, "max(x, 0), element-wise; the shape is unchanged.", same_shape));
  out.push_back(layer("leaky_relu", {opt("alpha", "0.2")},
                      "x where x > 0, alpha * x elsewhere (Keras' LeakyReLU); the shape is unchanged.",
                      [](CallContext& ctx) -> Type {
                        if (!number_in(ctx, "alpha", 0, 1, false, "[0, 1]")) return Type::error();
                        return same_shape(ctx);
                      }));
  out.push_back(
      layer("tanh", {}, "Hyperbolic tangent, element-wise, into (-1, 1); the shape is unchanged.", same_shape));
  out.push_back(
      layer("sigmoid", {}, "1 / (1 + exp(-x)), element-wise, into (0, 1); the shape is unchanged.", same_shape));
  out.push_back(layer(
      "gelu", {}, "Gaussian error linear unit, x * Phi(x) (exact, not the tanh approximation); the shape is unchanged.",
      same_shape));
  out.push_back(layer("softmax", {opt("axis", "-1")},
                      "exp(x) / sum(exp(x)) along axis (the last by default): per-pixel class probabilities for "
                      "[h, w, classes]; the shape is unchanged.",
                      rule_axis_activation));
  out.push_back(layer("batch_norm", {opt("momentum", "0.99"), opt("epsilon", "1e-3")},
                      "Batch normalization over the last (channel) dimension: batch statistics while training, moving "
                      "averages (updated with momentum) at inference; the shape is unchanged.",
                      rule_norm));
  out.push_back(layer("layer_norm", {opt("epsilon", "1e-3")},
                      "Layer normalization over the last dimension of each example; the shape is unchanged.",
                      rule_norm));
  out.push_back(layer("dropout", {req("rate")},
                      "Zeroes a `rate` fraction of activations while training (0 <= rate < 1) and "
                      "scales the rest by 1 / (1 - rate); the shape is unchanged.",
                      [](CallContext& ctx) -> Type {
                        if (!number_in(ctx, "rate", 0, 1, true, "[0, 1)")) return Type::error();
                        return same_shape(ctx);
                      }));
  out.push_back(layer("embedding", {req("input_dim"), req("output_dim")},
                      "Looks each integer id of x (any shape) up in a learned table [input_dim, output_dim]: [...] -> "
                      "[..., output_dim] (Keras' Embedding). Ids must be in [0, input_dim); x must have an integer "
                      "type (declare the model input so: `tokens: i32[16]`).",
                      rule_embedding));
  out.push_back(
      layer("add", {req("y")},
            "Element-wise sum of two equally shaped activations, for residual connections: x | add(y), or add(x, y).",
            [](CallContext& ctx) -> Type {
              auto a = float_input(ctx, -1, "tensor");
              auto b = ctx.tensor("y");
              if (!a || !b) return Type::error();
              if (a->shape != b->shape || !is_float(b->dtype)) {
                ctx.error(DiagKind::layer_shape_mismatch, ctx.range,
                          fmt::format("add needs two float activations of one shape, not {} and {}", type_to_string(*a),
                                      type_to_string(*b)));
                return Type::error();
              }
              return *a;
            }));
}

}  // namespace pipec
