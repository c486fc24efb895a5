// Image ops: reading and decoding files, and the crops, flips, resizes and colour ops of seeds 001,
// 003 and 004.
//
// An image is [height, width, channels], channels last, as TensorFlow's tf.image ops take them. Ops that
// make sense on a whole batch also take [n, height, width, channels] (what a map after batch(n) sees), and
// every op that takes `images` also takes a record of images, treating each field alike: `random_crop({a,
// b}, 256, 256)` cuts the same window out of both, `random_flip_left_right` flips both or neither.
#include <algorithm>

#include <fmt/format.h>

#include "compiler/sema/builtin_rules.h"

namespace pipec {

namespace {

Builtin image_op(std::string name, std::vector<ParamSpec> params, std::string doc, TypeRule rule) {
  return Builtin{std::move(name), BuiltinKind::Op, std::move(params), std::move(doc), std::move(rule)};
}

// The spatial and channel dimensions of an image or a batch of images (the last three dimensions).
int64_t img_h(const Type& t) { return t.shape[t.shape.size() - 3]; }
int64_t img_w(const Type& t) { return t.shape[t.shape.size() - 2]; }
int64_t img_c(const Type& t) { return t.shape.back(); }

// `t` with its last three dimensions replaced, batch dimensions kept.
Type with_hwc(const Type& t, DType dtype, int64_t h, int64_t w, int64_t c) {
  std::vector<int64_t> shape(t.shape.begin(), t.shape.end() - 3);
  shape.insert(shape.end(), {h, w, c});
  return Type::tensor(dtype, std::move(shape));
}

// How an op treats its `images` argument.
struct ImageArgs {
  bool allow_batch = true;  // [n, h, w, c] is accepted as well as [h, w, c]
  bool same_size = false;   // the fields of a record must agree in height and width (paired crops)
};

// Checks that `t` is an image (or a batch of them when allowed); `what` names it in the message.
bool image_arg(CallContext& ctx, const Type& t, SourceRange r, const ImageArgs& how, const std::string& what) {
  bool rank_ok = t.rank() == 3 || (how.allow_batch && t.rank() == 4);
  if (!t.is_tensor() || !rank_ok || t.dtype == DType::Bytes) {
    std::string expected = how.allow_batch
                               ? "images [height, width, channels] (or batches [n, height, width, channels])"
                               : "images [height, width, channels]";
    auto& diag =
        ctx.error(DiagKind::shape_mismatch, r,
                  fmt::format("{} takes {}, but {} is {}", ctx.builtin.name, expected, what, type_to_string(t)));
    if (t.is_tensor() && t.dtype == DType::Bytes) diag.help = "decode it first, e.g. decode_png(read_file(path))";
    return false;
  }
  return true;
}

// Applies `per_image` to the `images` argument: a tensor, or every field of a record alike (the fields
// keep their names), so one call treats paired images the same way.
Type each_image(CallContext& ctx, const ImageArgs& how,
                const std::function<std::optional<Type>(const Type&)>& per_image) {
  const BoundArg& a = ctx.arg("images");
  if (a.type.is_error()) return a.type;
  if (a.type.kind == TypeKind::Record) {
    const auto& fields = *a.type.fields;
    for (const Field& f : fields)
      if (!image_arg(ctx, *f.type, a.range, how, fmt::format("field `{}`", f.name))) return Type::error();
    if (how.same_size) {
      // A paired window needs equally sized images; unknown sizes are checked when the data is read.
      for (size_t i = 1; i < fields.size(); ++i) {
        const Type& x = *fields[0].type;
        const Type& y = *fields[i].type;
        bool differ = (img_h(x) >= 0 && img_h(y) >= 0 && img_h(x) != img_h(y)) ||
                      (img_w(x) >= 0 && img_w(y) >= 0 && img_w(x) != img_w(y));
        if (differ) {
          ctx.error(
              DiagKind::shape_mismatch, a.range,
              fmt::format("{}: fields `{}` and `{}` differ in size ({} and {}), so they cannot share one window",
                          ctx.builtin.name, fields[0].name, fields[i].name, type_to_string(x), type_to_string(y)));
          return Type::error();
        }
      }
    }
    std::vector<Field> out;
    for (const Field& f : fields) {
      auto r = per_image(*f.type);
      if (!r) return Type::error();
      out.push_back(Field{f.name, std::make_shared<const Type>(*r)});
    }
    return Type::record(std::move(out));
  }
  if (!image_arg(ctx, a.type, a.range, how, "this")) return Type::error();
  auto r = per_image(a.type);
  return r ? *r : Type::error();
}

// The optional `seed` of a random op: a constant integer.
bool check_seed(CallContext& ctx) { return !ctx.has("seed") || ctx.const_int("seed", 0).has_value(); }

Type rule_read_file(CallContext& ctx) {
  auto t = ctx.tensor("path");
  if (!t) return Type::error();
  if (t->dtype != DType::Bytes || t->rank() != 0) {
    ctx.error(DiagKind::type_mismatch, ctx.arg("path").range,
              fmt::format("read_file takes one path (bytes), not {}", type_to_string(*t)));
    return Type::error();
  }
  return Type::tensor(DType::Bytes);
}

// decode_jpeg / decode_png / decode_image. `channels` follows TensorFlow: 0 keeps what the file stores
// (so the channel dimension is unknown until run time), 1 is grey, 3 RGB, 4 RGBA (not for JPEG).
Type rule_decode(CallContext& ctx) {
  auto t = ctx.tensor("contents");
  if (!t) return Type::error();
  if (t->dtype != DType::Bytes || t->rank() != 0) {
    auto& diag =
        ctx.error(DiagKind::type_mismatch, ctx.arg("contents").range,
                  fmt::format("{} decodes one encoded image (bytes), not {}", ctx.builtin.name, type_to_string(*t)));
    if (t->dtype == DType::U8 && t->rank() == 1)
      diag.help = "declare the feature as plain `bytes` (any length); `bytes[N]` is read as u8[N]";
    return Type::error();
  }
  bool jpeg = ctx.builtin.name == "decode_jpeg";
  int64_t channels = 3;
  if (ctx.has("channels")) {
    auto c = ctx.const_int("channels", 0);
    if (!c) return Type::error();
    bool ok = *c == 0 || *c == 1 || *c == 3 || (*c == 4 && !jpeg);
    if (!ok) {
      ctx.error(DiagKind::invalid_argument_value, ctx.arg("channels").range,
                jpeg ? "channels must be 0 (as stored), 1 (grey) or 3 (RGB)"
                     : "channels must be 0 (as stored), 1 (grey), 3 (RGB) or 4 (RGBA)");
      return Type::error();
    }
    channels = *c == 0 ? kUnknownDim : *c;
  }
  if (ctx.has("max_pixels") && !ctx.const_int("max_pixels", 1)) return Type::error();
  DType dt = ctx.has("dtype") && ctx.arg("dtype").option == "u16" ? DType::U16 : DType::U8;
  return Type::tensor(dt, {kUnknownDim, kUnknownDim, channels});
}

// height and width arguments of crops and resizes: constant integers of at least 1.
bool size_args(CallContext& ctx, int64_t& h, int64_t& w) {
  auto hh = ctx.const_int("height", 1);
  auto ww = ctx.const_int("width", 1);
  if (!hh || !ww) return false;
  h = *hh;
  w = *ww;
  return true;
}

Type rule_random_crop(CallContext& ctx) {
  int64_t h = 0, w = 0;
  if (!size_args(ctx, h, w) || !check_seed(ctx)) return Type::error();
  return each_image(ctx, {.allow_batch = false, .same_size = true}, [&](const Type& t) -> std::optional<Type> {
    if ((img_h(t) >= 0 && img_h(t) < h) || (img_w(t) >= 0 && img_w(t) < w)) {
      auto& diag = ctx.error(DiagKind::shape_mismatch, ctx.range,
                             fmt::format("a {}x{} crop does not fit {}", h, w, type_to_string(t)));
      diag.help = "crop_or_pad(...) pads images that are too small";
      return std::nullopt;
    }
    return with_hwc(t, t.dtype, h, w, img_c(t));
  });
}

Type rule_crop_or_pad(CallContext& ctx) {
  int64_t h = 0, w = 0;
  if (!size_args(ctx, h, w)) return Type::error();
  return each_image(ctx, {},
                    [&](const Type& t) -> std::optional<Type> { return with_hwc(t, t.dtype, h, w, img_c(t)); });
}

Type rule_resize(CallContext& ctx) {
  int64_t h = 0, w = 0;
  if (!size_args(ctx, h, w)) return Type::error();
  bool nearest = ctx.arg("method").option == "nearest";
  return each_image(ctx, {}, [&](const Type& t) -> std::optional<Type> {
    return with_hwc(t, nearest ? t.dtype : DType::F32, h, w, img_c(t));
  });
}

Type rule_same_image(CallContext& ctx) {
  if (!check_seed(ctx)) return Type::error();
  return each_image(ctx, {}, [](const Type& t) -> std::optional<Type> { return t; });
}

Type rule_central_crop(CallContext& ctx) {
  auto f = ctx.const_number("fraction");
  if (!f) return Type::error();
  if (!(*f > 0 && *f <= 1)) {
    ctx.error(DiagKind::invalid_argument_value, ctx.arg("fraction").range, "fraction must be in (0, 1]");
    return Type::error();
  }
  return each_image(ctx, {}, [&](const Type& t) -> std::optional<Type> {
    // tf.image.central_crop: the window starts at int((d - d * fraction) / 2) on both sides.
    auto crop = [&](int64_t d) -> int64_t {
      if (d < 0) return kUnknownDim;
      auto start = static_cast<int64_t>((static_cast<double>(d) - static_cast<double>(d) * *f) / 2);
      return d - 2 * start;
    };
    return with_hwc(t, t.dtype, crop(img_h(t)), crop(img_w(t)), img_c(t));
  });
}

Type rule_convert_image_dtype(CallContext& ctx) {
  const BoundArg& d = ctx.arg("dtype");
  auto to = parse_dtype(d.option);
  if (!to) {
    if (!d.type.is_error())
      ctx.error(DiagKind::type_mismatch, d.range,
                "convert_image_dtype's `dtype` is a pixel type word: f32, f64, f16, bf16, u8 or u16");
    return Type::error();
  }
  return each_image(ctx, {}, [&](const Type& t) -> std::optional<Type> {
    if (t.dtype == DType::Bool || (!is_float(t.dtype) && !is_integer(t.dtype))) {
      ctx.error(DiagKind::type_mismatch, ctx.arg("images").range,
                fmt::format("convert_image_dtype converts integer or float pixels, not {}", type_to_string(t)));
      return std::nullopt;
    }
    return Type::tensor(*to, t.shape);
  });
}

Type rule_normalize(CallContext& ctx) {
  auto m = numeric_arg(ctx, "mean");
  auto s = numeric_arg(ctx, "std");
  if (!m || !s) return Type::error();
  // A constant std of zero would divide by zero on every pixel.
  if (const auto& v = ctx.arg("std").value) {
    bool zero = v->kind == Value::List
                    ? std::any_of(v->items.begin(), v->items.end(), [](const Value& x) { return x.as_double() == 0; })
                    : v->as_double() == 0;
    if (zero) {
      ctx.error(DiagKind::invalid_argument_value, ctx.arg("std").range, "normalize: std must not be zero");
      return Type::error();
    }
  }
  return each_image(ctx, {}, [&](const Type& t) -> std::optional<Type> {
    for (const Type* p : {&*m, &*s}) {
      if (p->rank() > 1 || (p->rank() == 1 && img_c(t) >= 0 && p->shape[0] >= 0 && p->shape[0] != img_c(t))) {
        ctx.error(DiagKind::shape_mismatch, ctx.range,
                  fmt::format("normalize: mean and std need one value or one per channel ({}), not {}", img_c(t),
                              type_to_string(*p)));
        return std::nullopt;
      }
    }
    return Type::tensor(DType::F32, t.shape);
  });
}

Type rule_rgb_to_grayscale(CallContext& ctx) {
  return each_image(ctx, {}, [&](const Type& t) -> std::optional<Type> {
    if (img_c(t) >= 0 && img_c(t) != 3) {
      ctx.error(DiagKind::shape_mismatch, ctx.arg("images").range,
                fmt::format("rgb_to_grayscale takes RGB images (3 channels), not {}", type_to_string(t)));
      return std::nullopt;
    }
    return with_hwc(t, t.dtype, img_h(t), img_w(t), 1);
  });
}

Type rule_distance_transform(CallContext& ctx) {
  return each_image(ctx, {}, [&](const Type& t) -> std::optional<Type> { return Type::tensor(DType::F32, t.shape); });
}

Type rule_one_hot_colors(CallContext& ctx) {
  auto t = ctx.tensor("label");
  if (!t) return Type::error();
  if ((t->rank() != 3 && t->rank() != 4) || (img_c(*t) >= 0 && img_c(*t) != 3) || t->dtype != DType::U8) {
    ctx.error(DiagKind::shape_mismatch, ctx.arg("label").range,
              fmt::format("one_hot_colors takes an RGB label image u8[h, w, 3] (or a batch of them), not {}",
                          type_to_string(*t)));
    return Type::error();
  }
  // The colours: a CSV file (read when the pipeline starts) or a constant [classes, 3] list.
  const BoundArg& colors = ctx.arg("colors");
  if (colors.type.is_error()) return Type::error();
  int64_t classes = kUnknownDim;
  if (colors.type.is_tensor() && colors.type.dtype == DType::Bytes) {
    if (!ctx.const_string("colors")) return Type::error();
  } else if (colors.type.is_tensor() && is_integer(colors.type.dtype) && colors.type.rank() == 2 &&
             colors.type.shape[1] == 3) {
    if (!colors.value) {
      ctx.error(DiagKind::not_constant, colors.range, "one_hot_colors: the colour list must be known at compile time");
      return Type::error();
    }
    for (const Value& row : colors.value->items)
      for (const Value& c : row.items)
        if (c.i < 0 || c.i > 255) {
          ctx.error(DiagKind::invalid_argument_value, colors.range,
                    fmt::format("one_hot_colors: colour value {} is not in 0..255", c.i));
          return Type::error();
        }
    classes = colors.type.shape[0];
  } else {
    ctx.error(
        DiagKind::type_mismatch, colors.range,
        fmt::format("one_hot_colors' `colors` is a CSV path (\"class_dict.csv\") or a list of [r, g, b] rows, not {}",
                    type_to_string(colors.type)));
    return Type::error();
  }
  if (ctx.has("classes")) {
    auto c = ctx.const_int("classes", 1);
    if (!c) return Type::error();
    if (classes >= 0 && *c != classes) {
      ctx.error(DiagKind::invalid_argument_value, ctx.arg("classes").range,
                fmt::format("classes = {} but the colour list has {} rows", *c, classes));
      return Type::error();
    }
    classes = *c;
  }
  return with_hwc(*t, DType::F32, img_h(*t), img_w(*t), classes);
}

// encode_png / encode_jpeg: one image [h, w, c] -> its file's bytes.
Type rule_encode(CallContext& ctx) {
  auto t = ctx.tensor("image");
  if (!t) return Type::error();
  const bool jpeg = ctx.builtin.name == "encode_jpeg";
  const int64_t c = t->rank() == 3 ? t->shape[2] : 0;
  const bool channels_ok = c < 0 || (jpeg ? (c == 1 || c == 3) : (c >= 1 && c <= 4));
  const bool dtype_ok = t->dtype == DType::U8 || (!jpeg && t->dtype == DType::U16);
  if (t->rank() != 3 || !channels_ok || !dtype_ok) {
    auto& diag = ctx.error(DiagKind::type_mismatch, ctx.arg("image").range,
                           fmt::format("{} takes one image {} [height, width, {}], not {}", ctx.builtin.name,
                                       jpeg ? "u8" : "u8 or u16", jpeg ? "1 or 3" : "1 to 4", type_to_string(*t)));
    if (is_float(t->dtype)) diag.help = "convert it first, e.g. convert_image_dtype(x, u8)";
    return Type::error();
  }
  if (jpeg && ctx.has("quality")) {
    auto q = ctx.const_int("quality", 1);
    if (!q) return Type::error();
    if (*q > 100) {
      ctx.error(DiagKind::invalid_argument_value, ctx.arg("quality").range, "quality must be 1 to 100");
      return Type::error();
    }
  }
  return Type::tensor(DType::Bytes);
}

}  // namespace

void register_image_builtins(std::vector<Builtin>& out) {
  out.push_back(image_op("read_file", {req("path")},
                         "Reads the whole file at `path` into one byte string (bytes -> bytes), e.g. an image file "
                         "named by files(...) or by a csv column, to hand to decode_jpeg or decode_png.",
                         rule_read_file));
  out.push_back(image_op("decode_jpeg", {req("contents"), opt("channels", "3"), opt("max_pixels", "2^28")},
                         "Decodes a JPEG with libjpeg-turbo into u8[height, width, channels]. channels: 1 grey, 3 RGB, "
                         "0 as stored (the channel dimension is then unknown). An image of more than max_pixels "
                         "pixels is refused before it is decoded.",
                         rule_decode));
  out.push_back(
      image_op("decode_png",
               {req("contents"), opt("channels", "3"), opt("dtype", "u8", {"u8", "u16"}), opt("max_pixels", "2^28")},
               "Decodes a PNG (any bit depth, palette, grey, alpha) into [height, width, channels]. channels: "
               "1 grey, 3 RGB, 4 RGBA, 0 as stored (unknown channel dimension); dtype u16 keeps 16-bit samples. "
               "An image of more than max_pixels pixels is refused before it is decoded.",
               rule_decode));
  out.push_back(image_op("decode_image", {req("contents"), opt("channels", "3"), opt("max_pixels", "2^28")},
                         "Decodes a JPEG or PNG, recognised by its first bytes, into u8[height, width, channels]. "
                         "channels: 1, 3, 4, or 0 as stored. An image of more than max_pixels pixels is refused.",
                         rule_decode));
  out.push_back(image_op("encode_png", {req("image")},
                         "Encodes an image u8 or u16 [height, width, 1..4] as a PNG file's bytes (write them with "
                         "write(files(...))).",
                         rule_encode));
  out.push_back(image_op("encode_jpeg", {req("image"), opt("quality", "95")},
                         "Encodes an image u8 [height, width, 1 or 3] as a baseline JPEG file's bytes at `quality` "
                         "(1..100; RGB uses 4:2:0 chroma subsampling).",
                         rule_encode));
  out.push_back(image_op("random_crop", {req("images"), req("height"), req("width"), opt("seed", "run seed")},
                         "Crops a random height x width window out of an image; given a record of images (paired "
                         "data such as {blurred, sharp}), cuts the same window out of every field.",
                         rule_random_crop));
  out.push_back(image_op("crop_or_pad", {req("images"), req("height"), req("width")},
                         "Centre-crops or zero-pads each image to height x width (tf.image.resize_with_crop_or_pad).",
                         rule_crop_or_pad));
  out.push_back(image_op(
      "resize", {req("images"), req("height"), req("width"), opt("method", "bilinear", {"bilinear", "nearest"})},
      "Resizes to height x width with half-pixel centres. bilinear gives f32 (pixel values keep their "
      "range); nearest keeps the dtype, so use it for label images.",
      rule_resize));
  out.push_back(image_op("flip_left_right", {req("images")},
                         "Mirrors images horizontally (every image field of a record).", rule_same_image));
  out.push_back(image_op("flip_up_down", {req("images")}, "Mirrors images vertically (every image field of a record).",
                         rule_same_image));
  out.push_back(image_op("random_flip_left_right", {req("images"), opt("seed", "run seed")},
                         "Mirrors horizontally with probability 1/2: one choice for all image fields of a record, an "
                         "independent one for each image of a batch.",
                         rule_same_image));
  out.push_back(image_op("random_flip_up_down", {req("images"), opt("seed", "run seed")},
                         "Mirrors vertically with probability 1/2: one choice for all image fields of a record, an "
                         "independent one for each image of a batch.",
                         rule_same_image));
  out.push_back(
      image_op("central_crop", {req("images"), req("fraction")},
               "Keeps the central `fraction` (0 < fraction <= 1) of height and width (tf.image.central_crop).",
               rule_central_crop));
  out.push_back(image_op("convert_image_dtype",
                         {req("images"), opt("dtype", "", {"f32", "f64", "f16", "bf16", "u8", "u16"})},
                         "Converts pixels between integer and float ranges as TensorFlow does: integers are scaled to "
                         "[0, 1] floats (u8 255 -> 1.0) and back; integer to integer rescales (u8 <-> u16).",
                         rule_convert_image_dtype));
  out.back().params[1].required = true;
  out.push_back(image_op("normalize", {req("images"), req("mean"), req("std")},
                         "(x - mean) / std per channel, as f32; mean and std are one value or one per channel.",
                         rule_normalize));
  out.push_back(image_op("rgb_to_grayscale", {req("images")},
                         "Luma of RGB images, 0.2989 R + 0.5870 G + 0.1140 B: [..., 3] -> [..., 1], same dtype.",
                         rule_rgb_to_grayscale));
  out.push_back(image_op("distance_transform", {req("images")},
                         "Exact Euclidean distance, in pixels, from every pixel to the nearest non-zero pixel of its "
                         "channel (0 on non-zero pixels; +inf when the channel is all zero), as f32: a distance map "
                         "from a mask or a click map (scipy's distance_transform_edt of mask == 0).",
                         rule_distance_transform));
  out.push_back(
      image_op("one_hot_colors", {req("label"), req("colors"), opt("classes", "from the colours")},
               "Turns an RGB label image into one channel per class colour: u8[h, w, 3] -> f32[h, w, classes], "
               "1.0 where the pixel has that class's colour. colors is a CSV of `name,r,g,b` rows with a header "
               "(CamVid's class_dict.csv), read when the pipeline starts, or a constant list of [r, g, b] rows.",
               rule_one_hot_colors));
}

}  // namespace pipec
