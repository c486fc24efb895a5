// Image ops: decoders and the crops, flips and colour ops of seeds 003 and 004.
#include <fmt/format.h>

#include "compiler/sema/builtin_rules.h"

namespace pipec {

namespace {

Builtin image_op(std::string name, std::vector<ParamSpec> params, std::string doc, TypeRule rule) {
  return Builtin{std::move(name), BuiltinKind::Op, std::move(params), std::move(doc), std::move(rule)};
}

// An image is [height, width, channels]; ops that take records apply to each image field alike.
std::optional<Type> image_arg(CallContext& ctx, const Type& t, SourceRange r) {
  if (!t.is_tensor() || t.rank() != 3 || t.dtype == DType::Bytes) {
    ctx.error(DiagKind::shape_mismatch, r,
              fmt::format("{} takes images [height, width, channels], not {}", ctx.builtin.name, type_to_string(t)));
    return std::nullopt;
  }
  return t;
}

// Applies `per_image` to a tensor or to every field of a record, so one call treats paired images alike.
Type each_image(CallContext& ctx, const std::function<std::optional<Type>(const Type&)>& per_image) {
  const BoundArg& a = ctx.arg("images");
  if (a.type.is_error()) return a.type;
  if (a.type.kind == TypeKind::Record) {
    std::vector<Field> out;
    for (const Field& f : *a.type.fields) {
      auto img = image_arg(ctx, *f.type, a.range);
      if (!img) return Type::error();
      auto r = per_image(*img);
      if (!r) return Type::error();
      out.push_back(Field{f.name, std::make_shared<const Type>(*r)});
    }
    // Paired crops need equally sized images.
    for (size_t i = 1; i < a.type.fields->size(); ++i) {
      const Type& x = *(*a.type.fields)[0].type;
      const Type& y = *(*a.type.fields)[i].type;
      for (int d = 0; d < 2; ++d)
        if (x.shape[d] >= 0 && y.shape[d] >= 0 && x.shape[d] != y.shape[d]) {
          ctx.error(DiagKind::shape_mismatch, a.range,
                    fmt::format("{}: fields `{}` and `{}` differ in size ({} and {})", ctx.builtin.name, (*a.type.fields)[0].name,
                                (*a.type.fields)[i].name, type_to_string(x), type_to_string(y)));
          return Type::error();
        }
    }
    return Type::record(std::move(out));
  }
  auto img = image_arg(ctx, a.type, a.range);
  if (!img) return Type::error();
  auto r = per_image(*img);
  return r ? *r : Type::error();
}

Type rule_decode(CallContext& ctx) {
  auto t = ctx.tensor("contents");
  if (!t) return Type::error();
  if (t->dtype != DType::Bytes || t->rank() != 0) {
    ctx.error(DiagKind::type_mismatch, ctx.arg("contents").range,
              fmt::format("{} decodes one encoded image (bytes), not {}", ctx.builtin.name, type_to_string(*t)));
    return Type::error();
  }
  int64_t channels = 3;
  if (ctx.has("channels")) {
    auto c = ctx.const_int("channels", 1);
    if (!c) return Type::error();
    if (*c > 4 || *c == 2) {
      ctx.error(DiagKind::invalid_argument_value, ctx.arg("channels").range, "channels must be 1 (grey), 3 (RGB) or 4 (RGBA)");
      return Type::error();
    }
    channels = *c;
  }
  DType dt = ctx.has("dtype") && ctx.arg("dtype").option == "u16" ? DType::U16 : DType::U8;
  return Type::tensor(dt, {kUnknownDim, kUnknownDim, channels});
}

}  // namespace

void register_image_builtins(std::vector<Builtin>& out) {
  out.push_back(image_op("decode_jpeg", {req("contents"), opt("channels", "3")},
                         "Decodes a JPEG with libjpeg-turbo into u8[height, width, channels].", rule_decode));
  out.push_back(image_op("decode_png", {req("contents"), opt("channels", "3"), opt("dtype", "u8", {"u8", "u16"})},
                         "Decodes a PNG (any bit depth, palette, grey, alpha) into [height, width, channels].", rule_decode));
  out.push_back(image_op("decode_image", {req("contents"), opt("channels", "3")},
                         "Decodes a JPEG or PNG, recognised by its first bytes.", rule_decode));
  out.push_back(image_op("random_crop", {req("images"), req("height"), req("width"), opt("seed", "run seed")},
                         "Crops the same random height x width window out of an image, or out of every image field of a "
                         "record (paired crops).",
                         [](CallContext& ctx) -> Type {
                           auto h = ctx.const_int("height", 1);
                           auto w = ctx.const_int("width", 1);
                           if (!h || !w) return Type::error();
                           return each_image(ctx, [&](const Type& t) -> std::optional<Type> {
                             if ((t.shape[0] >= 0 && t.shape[0] < *h) || (t.shape[1] >= 0 && t.shape[1] < *w)) {
                               ctx.error(DiagKind::shape_mismatch, ctx.range,
                                         fmt::format("a {}x{} crop does not fit {}", *h, *w, type_to_string(t)));
                               return std::nullopt;
                             }
                             return Type::tensor(t.dtype, {*h, *w, t.shape[2]});
                           });
                         }));
  out.push_back(image_op("crop_or_pad", {req("images"), req("height"), req("width")},
                         "Centre-crops or zero-pads to height x width (tf.image.resize_with_crop_or_pad).",
                         [](CallContext& ctx) -> Type {
                           auto h = ctx.const_int("height", 1);
                           auto w = ctx.const_int("width", 1);
                           if (!h || !w) return Type::error();
                           return each_image(ctx, [&](const Type& t) -> std::optional<Type> {
                             return Type::tensor(t.dtype, {*h, *w, t.shape[2]});
                           });
                         }));
  out.push_back(image_op("resize", {req("images"), req("height"), req("width"), opt("method", "bilinear", {"bilinear", "nearest"})},
                         "Resizes to height x width with half-pixel centres; bilinear gives f32, nearest keeps the dtype.",
                         [](CallContext& ctx) -> Type {
                           auto h = ctx.const_int("height", 1);
                           auto w = ctx.const_int("width", 1);
                           if (!h || !w) return Type::error();
                           bool nearest = ctx.arg("method").option == "nearest";
                           return each_image(ctx, [&](const Type& t) -> std::optional<Type> {
                             return Type::tensor(nearest ? t.dtype : DType::F32, {*h, *w, t.shape[2]});
                           });
                         }));
  for (const char* name : {"flip_left_right", "flip_up_down", "random_flip_left_right", "random_flip_up_down"}) {
    bool random = std::string(name).rfind("random_", 0) == 0;
    std::vector<ParamSpec> params = {req("images")};
    if (random) params.push_back(opt("seed", "run seed"));
    out.push_back(image_op(name, params,
                           random ? "Flips with probability 1/2 (the same choice for every image field of a record)."
                                  : "Mirrors the image (every image field of a record).",
                           [](CallContext& ctx) -> Type {
                             return each_image(ctx, [](const Type& t) -> std::optional<Type> { return t; });
                           }));
  }
  out.push_back(image_op("central_crop", {req("images"), req("fraction")},
                         "Keeps the central `fraction` of height and width.", [](CallContext& ctx) -> Type {
                           auto f = ctx.const_number("fraction");
                           if (!f) return Type::error();
                           if (*f <= 0 || *f > 1) {
                             ctx.error(DiagKind::invalid_argument_value, ctx.arg("fraction").range, "fraction must be in (0, 1]");
                             return Type::error();
                           }
                           return each_image(ctx, [&](const Type& t) -> std::optional<Type> {
                             auto crop = [&](int64_t d) -> int64_t {
                               if (d < 0) return kUnknownDim;
                               int64_t start = static_cast<int64_t>((d - d * *f) / 2);
                               return d - 2 * start;
                             };
                             return Type::tensor(t.dtype, {crop(t.shape[0]), crop(t.shape[1]), t.shape[2]});
                           });
                         }));
  out.push_back(image_op("convert_image_dtype", {req("images"), req("dtype")},
                         "Converts pixel values between integer and float ranges (u8 0..255 <-> f32 0..1), as TensorFlow does.",
                         [](CallContext& ctx) -> Type {
                           DType to = parse_dtype(ctx.arg("dtype").option).value_or(DType::F32);
                           return each_image(ctx, [&](const Type& t) -> std::optional<Type> { return Type::tensor(to, t.shape); });
                         }));
  out.back().params[1].options = {"f32", "f64", "f16", "bf16", "u8", "u16"};
  out.push_back(image_op("normalize", {req("images"), req("mean"), req("std")},
                         "(x - mean) / std per channel, as f32.", [](CallContext& ctx) -> Type {
                           auto m = numeric_arg(ctx, "mean");
                           auto s = numeric_arg(ctx, "std");
                           if (!m || !s) return Type::error();
                           return each_image(ctx, [&](const Type& t) -> std::optional<Type> {
                             for (const Type* p : {&*m, &*s}) {
                               if (p->rank() > 1 || (p->rank() == 1 && t.shape[2] >= 0 && p->shape[0] != t.shape[2])) {
                                 ctx.error(DiagKind::shape_mismatch, ctx.range,
                                           fmt::format("normalize: mean and std need one value or one per channel ({})", t.shape[2]));
                                 return std::nullopt;
                               }
                             }
                             return Type::tensor(DType::F32, t.shape);
                           });
                         }));
  out.push_back(image_op("one_hot_colors", {req("label"), req("colors"), opt("classes", "from the CSV")},
                         "Turns an RGB label image into one channel per class colour listed in a CSV of `name,r,g,b` rows: "
                         "u8[h, w, 3] -> f32[h, w, classes].",
                         [](CallContext& ctx) -> Type {
                           auto t = ctx.tensor("label");
                           auto path = ctx.const_string("colors");
                           if (!t || !path) return Type::error();
                           if (t->rank() != 3 || (t->shape[2] >= 0 && t->shape[2] != 3) || t->dtype != DType::U8) {
                             ctx.error(DiagKind::shape_mismatch, ctx.arg("label").range,
                                       fmt::format("one_hot_colors takes an RGB label image u8[h, w, 3], not {}", type_to_string(*t)));
                             return Type::error();
                           }
                           int64_t classes = kUnknownDim;
                           if (ctx.has("classes")) {
                             auto c = ctx.const_int("classes", 1);
                             if (!c) return Type::error();
                             classes = *c;
                           }
                           return Type::tensor(DType::F32, {t->shape[0], t->shape[1], classes});
                         }));
}

}  // namespace pipec
