// Model layers: the type rules that compiler/sema/layers.def's rows name, and the builtins registered
// from those rows. Shapes are per example (no batch dimension), channels last, as in the model's
// declared inputs: conv2d takes [height, width, channels]. Output sizes follow TensorFlow/Keras, so a
// model written here has the shapes its Keras twin has.
#include <fmt/format.h>

#include "compiler/sema/builtin_rules.h"

namespace pipec {

namespace {

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

// ---- the type rules layers.def names ----

Type conv2d_shape(CallContext& ctx) { return spatial(ctx, Window::Conv); }
Type conv2d_transpose_shape(CallContext& ctx) { return spatial(ctx, Window::ConvTranspose); }
Type pool2d_shape(CallContext& ctx) { return spatial(ctx, Window::Pool); }

Type upsample2d_shape(CallContext& ctx) {
  auto t = float_input(ctx, 3, "[height, width, channels]");
  auto size = pair_arg(ctx, "size", 2);
  if (!t || !size) return Type::error();
  auto up = [](int64_t d, int64_t s) { return d < 0 ? kUnknownDim : d * s; };
  return Type::tensor(t->dtype, {up(t->shape[0], size->first), up(t->shape[1], size->second), t->shape[2]});
}

// [height, width, channels] -> [channels].
Type global_pool_shape(CallContext& ctx) {
  auto t = float_input(ctx, 3, "[height, width, channels]");
  if (!t) return Type::error();
  return Type::tensor(t->dtype, {t->shape[2]});
}

Type dense_shape(CallContext& ctx) {
  auto t = float_input(ctx, -1, "[..., features]", 1);
  auto units = ctx.const_int("units", 1);
  if (!t || !units) return Type::error();
  Type r = *t;
  r.shape.back() = *units;
  return r;
}

Type flatten_shape(CallContext& ctx) {
  auto t = float_input(ctx, -1, "tensor");
  if (!t) return Type::error();
  return Type::tensor(t->dtype, {t->num_elements()});
}

// Element-wise: any float tensor, the shape unchanged.
Type same_shape(CallContext& ctx) {
  auto t = float_input(ctx, -1, "tensor");
  if (!t) return Type::error();
  return *t;
}

// Over the last (feature) dimension (the normalizations), the shape unchanged.
Type features_shape(CallContext& ctx) {
  auto t = float_input(ctx, -1, "[..., features]", 1);
  if (!t) return Type::error();
  return *t;
}

// Along `axis` (softmax), the shape unchanged.
Type axis_shape(CallContext& ctx) {
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
Type embedding_shape(CallContext& ctx) {
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

// add: two float activations of one shape.
Type add_shape(CallContext& ctx) {
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
}

// ---- the arguments' own checks ----

enum class RangeEnd { Closed, Open };
struct NumberRange {
  std::string name;
  double lo, hi;
  RangeEnd end;
};

// Each IN_RANGE argument, when given, is a constant number in its range.
bool numbers_in_range(CallContext& ctx, const std::vector<NumberRange>& ranges) {
  bool ok = true;
  for (const NumberRange& r : ranges) {
    if (!ctx.has(r.name)) continue;
    auto v = ctx.const_number(r.name);
    if (!v) {
      ok = false;
      continue;
    }
    const bool open = r.end == RangeEnd::Open;
    if (*v < r.lo || *v > r.hi || (open && *v == r.hi)) {
      ctx.error(DiagKind::invalid_argument_value, ctx.arg(r.name).range,
                fmt::format("`{}` of {} must be in [{:g}, {:g}{}, not {}", r.name, ctx.builtin.name, r.lo, r.hi,
                            open ? ")" : "]", *v));
      ok = false;
    }
  }
  return ok;
}

// A layer builtin from its row: x first, then the row's arguments; the type rule checks the arguments'
// ranges after the shape rule, so that a call with both kinds of mistakes hears of both.
Builtin layer(std::string name, std::vector<ParamSpec> params, std::vector<NumberRange> ranges, std::string doc,
              Type (*shape_rule)(CallContext&)) {
  params.insert(params.begin(), req("x"));
  TypeRule rule = [ranges = std::move(ranges), shape_rule](CallContext& ctx) {
    Type t = shape_rule(ctx);
    if (!numbers_in_range(ctx, ranges)) return Type::error();
    return t;
  };
  return Builtin{std::move(name), BuiltinKind::Layer, std::move(params), std::move(doc), std::move(rule)};
}

}  // namespace

void register_layer_builtins(std::vector<Builtin>& out) {
  // An argument's ParamSpec, and its range when it has one.
  struct Arg {
    ParamSpec spec;
    std::optional<NumberRange> range;
  };
  auto add = [&](const char* name, std::vector<Arg> args, const char* doc, Type (*shape_rule)(CallContext&)) {
    std::vector<ParamSpec> params;
    std::vector<NumberRange> ranges;
    for (Arg& a : args) {
      params.push_back(std::move(a.spec));
      if (a.range) ranges.push_back(std::move(*a.range));
    }
    out.push_back(layer(name, std::move(params), std::move(ranges), doc, shape_rule));
  };
#define PIPEC_LIST(...) __VA_ARGS__
#define REQ(name) \
  Arg { req(#name), std::nullopt }
#define OPT(name, default_text) \
  Arg { opt(#name, default_text), std::nullopt }
#define CHOICE(name, default_text, ...) \
  Arg { opt(#name, default_text, {__VA_ARGS__}), std::nullopt }
#define IN_RANGE(name, default_text, lo, hi, end)                                                 \
  Arg {                                                                                           \
    std::string_view(default_text).empty() ? req(#name) : opt(#name, default_text), NumberRange { \
#name, lo, hi, RangeEnd::end                                                                \
    }                                                                                             \
  }
#define LAYER(builtin, shape_rule, parts_rule, arguments, doc) add(#builtin, {PIPEC_LIST arguments}, doc, shape_rule);
#include "compiler/sema/layers.def"
#undef LAYER
#undef IN_RANGE
#undef CHOICE
#undef OPT
#undef REQ
#undef PIPEC_LIST
  // concat in a model is the op of the same name (registered earlier), seen as a layer.
  for (const Builtin& b : out)
    if (b.kind == BuiltinKind::Op && b.name == "concat") {
      Builtin c = b;
      c.kind = BuiltinKind::Layer;
      out.push_back(c);
      break;
    }
}

}  // namespace pipec
