// Image kernels: read_file, the decoders and the tf.image-like ops. Their values have data-dependent
// shapes (a decoded image's size is in its header), so they are KernelKind::PerRow: the interpreter
// calls them once per element with element tensors, and the pixel work happens in runtime/image.
//
// Attributes: decoders take `channels` (0 as stored), `dtype` (u16 for 16-bit PNG), `max_pixels`, and
// `path` (true when the operand is a file path rather than the file's bytes: lowering fuses
// decode(read_file(p)), so errors name the file). A cropping decode (crop pushdown) also carries
// `crop` (random | central, or crop_or_pad for PNG) and that crop's attributes, and `index` when a
// repeat runs a JPEG one again (decode_from_index below); a PNG decode may carry `one_hot` (the
// colours of a fused one_hot_colors, png_one_hot_fusion). convert_normalize and its random twin carry
// `flip` (convert_normalize_fusion). Random ops carry `op_id` and maybe `seed`;
// their windows and flips are drawn as runtime/image/crop_window.h documents.
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <unordered_map>

#include <fmt/format.h>

#include "runtime/core/philox.h"
#include "runtime/image/convert_normalize.h"
#include "runtime/image/crop_window.h"
#include "runtime/image/distance_transform.h"
#include "runtime/image/encoders.h"
#include "runtime/image/jpeg_decoder.h"
#include "runtime/image/jpeg_index_cache.h"
#include "runtime/image/png_decoder.h"
#include "runtime/image/png_window_decode.h"
#include "runtime/image/sniff.h"
#include "runtime/image/transforms.h"
#include "runtime/ops/colors_csv.h"
#include "runtime/ops/kernel.h"

namespace pipec {

namespace {

std::string resolve(const KernelArgs& a, std::string_view p) {
  std::string path(p);
  if (path.empty() || path[0] == '/' || !a.spec_dir || a.spec_dir->empty()) return path;
  return *a.spec_dir + "/" + path;
}

// One read into a string of the file's size (no stream buffering: images are read whole, once).
std::string read_whole_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw OpError(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  std::string data;
  if (std::fseek(f, 0, SEEK_END) == 0) {
    long size = std::ftell(f);
    if (size > 0) data.resize(static_cast<size_t>(size));
    std::rewind(f);
  }
  data.resize(data.empty() ? 0 : std::fread(data.data(), 1, data.size(), f));
  // Files that do not report a size (pipes), or grew meanwhile, are read on in blocks.
  char block[65536];
  for (size_t n; (n = std::fread(block, 1, sizeof(block), f)) > 0;) data.append(block, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) throw OpError(fmt::format("cannot read {}", path));
  return data;
}

std::string_view scalar_bytes(const Tensor& t, const char* what) {
  if (t.dtype() != DType::Bytes || t.num_elements() != 1)
    throw OpError(fmt::format("{} must be one byte string", what));
  return t.str(0);
}

Tensor read_file_kernel(const KernelArgs& a) {
  std::string data = read_whole_file(resolve(a, scalar_bytes(a.in.at(0), "the path")));
  return Tensor::from_strings({std::move(data)}, {});
}

RandomStream stream_of(const KernelArgs& a) {
  uint64_t seed = find_attr(a.instr, "seed") ? static_cast<uint64_t>(attr_int(a.instr, "seed", 0)) : a.seed;
  return RandomStream(seed, static_cast<uint64_t>(attr_int(a.instr, "op_id", 0)), static_cast<uint64_t>(a.first_index),
                      static_cast<uint64_t>(a.epoch));
}

double attr_number(const Instr& in, const std::string& name) {
  const Value* v = find_attr(in, name);
  if (!v || !v->is_number()) throw OpError(fmt::format("missing numeric attribute `{}`", name));
  return v->as_double();
}

// The window a cropping decode cuts, picked once the header gives the size.
WindowFn pushed_window(const KernelArgs& a) {
  const Value* crop = find_attr(a.instr, "crop");
  if (!crop) return {};
  if (crop->s == "random") {
    const int64_t ch = attr_int(a.instr, "height", 0), cw = attr_int(a.instr, "width", 0);
    RandomStream st = stream_of(a);
    return [st, ch, cw](int64_t h, int64_t w, CropWindow& win, std::string& err) mutable {
      if (ch > h || cw > w) {
        err = fmt::format("random_crop: a {}x{} crop does not fit the {}x{} image", ch, cw, h, w);
        return false;
      }
      win = random_crop_window(h, w, ch, cw, st);
      return true;
    };
  }
  if (crop->s == "crop_or_pad") {
    const int64_t th = attr_int(a.instr, "height", 0), tw = attr_int(a.instr, "width", 0);
    return [th, tw](int64_t h, int64_t w, CropWindow& win, std::string&) {
      win = crop_or_pad_window(h, w, th, tw);
      return true;
    };
  }
  if (crop->s == "central") {
    const double f = attr_number(a.instr, "fraction");
    return [f](int64_t h, int64_t w, CropWindow& win, std::string&) {
      win = central_crop_window(h, w, f);
      return true;
    };
  }
  throw OpError(fmt::format("unknown pushed-down crop `{}`", crop->s));
}

// A cropping decode under a repeat (`index = true`, the repeated_jpeg_index pass): the first time a
// file is seen it is indexed (JpegWindowIndex), later its windows are cut from the index, and the file
// is not even read again. Returns nothing when the file is not indexed (no room left, indexing off,
// a file libjpeg complains about): the ordinary decode then runs on `data`, which this reads when it
// has to. When the index finds damage where the window lies, the window it asked for is kept in `o`,
// so the ordinary decode gives that window and draws no other.
std::optional<Tensor> decode_from_index(const std::string& path, std::string_view& data, std::string& owned,
                                        bool& have_data, DecodeOptions& o) {
  JpegIndexCache& cache = JpegIndexCache::process();
  if (cache.budget() <= 0) return std::nullopt;
  const std::string key = path.empty() ? jpeg_bytes_key(data) : jpeg_file_key(path);
  if (key.empty()) return std::nullopt;
  JpegIndexCache::Lookup found = cache.find(key);
  if (!found.known) {
    if (!have_data) {
      owned = read_whole_file(path);
      data = owned;
      have_data = true;
    }
    if (!cache.has_room(data.size())) return std::nullopt;
    found.index = JpegWindowIndex::build(data, o.max_pixels);
    cache.remember(key, found.index);
  }
  if (!found.index) return std::nullopt;
  CropWindow asked;
  if (std::optional<Tensor> img = decode_jpeg_window(*found.index, o, &asked)) return img;
  o.window = [asked](int64_t, int64_t, CropWindow& out, std::string&) {
    out = asked;
    return true;
  };
  return std::nullopt;
}

std::shared_ptr<const Colors> colors_of(const KernelArgs& a, const Value& v);

// What a PNG decode makes of its window: crop_or_pad's padding and a fused one_hot_colors
// (png_one_hot_fusion), written into the interpreter's row of the batch when it offers one.
PngWindowOutput png_output(const KernelArgs& a, std::optional<ColorClasses>& classes) {
  PngWindowOutput out;
  const Value* crop = find_attr(a.instr, "crop");
  if (crop && crop->s == "crop_or_pad") {
    out.pad_height = attr_int(a.instr, "height", 0);
    out.pad_width = attr_int(a.instr, "width", 0);
    if (out.pad_height < 1 || out.pad_width < 1) throw OpError("crop_or_pad needs a height and a width of at least 1");
  }
  if (const Value* colors = find_attr(a.instr, "one_hot")) {
    classes.emplace(*colors_of(a, *colors));
    out.one_hot = &*classes;
  }
  out.into = a.into;
  return out;
}

Tensor decode(const KernelArgs& a, ImageFormat want) {
  const Value* from_path = find_attr(a.instr, "path");
  std::string path, owned;
  std::string_view data;
  bool have_data = true;
  if (from_path && from_path->b) {
    path = resolve(a, scalar_bytes(a.in.at(0), "the path"));
    have_data = false;
  } else {
    data = scalar_bytes(a.in.at(0), "the encoded image");
  }
  DecodeOptions o;
  o.channels = static_cast<int>(attr_int(a.instr, "channels", 3));
  const Value* dt = find_attr(a.instr, "dtype");
  o.u16 = a.out_dtype() == DType::U16 || (dt && dt->s == "u16");
  o.max_pixels = attr_int(a.instr, "max_pixels", kDefaultMaxPixels);
  o.window = pushed_window(a);
  const Value* indexed = find_attr(a.instr, "index");
  const std::string where = path.empty() ? std::string() : path + ": ";
  ImageFormat got = ImageFormat::Unknown;
  try {
    if (want == ImageFormat::Jpeg && o.window && indexed && indexed->b)
      if (std::optional<Tensor> img = decode_from_index(path, data, owned, have_data, o)) return std::move(*img);
    if (!have_data) {
      owned = read_whole_file(path);
      data = owned;
    }
    got = sniff_image_format(data);
    if (want == ImageFormat::Unknown) {
      if (got == ImageFormat::Unknown) throw ImageError("neither a JPEG nor a PNG (unrecognised first bytes)");
      want = got;
    }
    if (want == ImageFormat::Png) {
      std::optional<ColorClasses> classes;
      return decode_png_window(data, o, png_output(a, classes));
    }
    return decode_jpeg_image(data, o);
  } catch (const ImageError& e) {
    std::string kind = image_format_name(want);
    if (got != want && got != ImageFormat::Unknown)
      throw OpError(
          fmt::format("{}not a {} file (it looks like a {}): {}", where, kind, image_format_name(got), e.what()));
    throw OpError(fmt::format("{}bad {}: {}", where, kind, e.what()));
  }
}

Tensor decode_jpeg_kernel(const KernelArgs& a) { return decode(a, ImageFormat::Jpeg); }
Tensor decode_png_kernel(const KernelArgs& a) { return decode(a, ImageFormat::Png); }
Tensor decode_image_kernel(const KernelArgs& a) { return decode(a, ImageFormat::Unknown); }

// Pixel ops report ImageError; the interpreter expects OpError.
template <class F>
Tensor guarded(F&& f) {
  try {
    return f();
  } catch (const ImageError& e) {
    throw OpError(e.what());
  }
}

int64_t img_dim(const Tensor& t, int from_end) {
  if (t.rank() < 3) throw OpError(fmt::format("expected an image [h, w, c], got shape {}", shape_to_string(t.shape())));
  return t.shape()[static_cast<size_t>(t.rank() - from_end)];
}

Tensor random_crop_kernel(const KernelArgs& a) {
  return guarded([&] {
    const Tensor& x = a.in.at(0);
    RandomStream st = stream_of(a);
    CropWindow win = random_crop_window(img_dim(x, 3), img_dim(x, 2), attr_int(a.instr, "height", 0),
                                        attr_int(a.instr, "width", 0), st);
    return crop_image(x, win);
  });
}

Tensor central_crop_kernel(const KernelArgs& a) {
  return guarded([&] {
    const Tensor& x = a.in.at(0);
    return crop_image(x, central_crop_window(img_dim(x, 3), img_dim(x, 2), attr_number(a.instr, "fraction")));
  });
}

Tensor crop_or_pad_kernel(const KernelArgs& a) {
  return guarded(
      [&] { return crop_or_pad_image(a.in.at(0), attr_int(a.instr, "height", 0), attr_int(a.instr, "width", 0)); });
}

Tensor resize_kernel(const KernelArgs& a) {
  const Value* m = find_attr(a.instr, "method");
  const bool nearest = m && m->s == "nearest";
  return guarded(
      [&] { return resize_image(a.in.at(0), attr_int(a.instr, "height", 0), attr_int(a.instr, "width", 0), nearest); });
}

std::vector<bool> flips(const KernelArgs& a, const Tensor& x, bool random) {
  const int64_t n = x.rank() == 4 ? x.shape()[0] : 1;
  std::vector<bool> f(static_cast<size_t>(n), true);
  if (random) {
    RandomStream st = stream_of(a);
    for (int64_t i = 0; i < n; ++i) f[static_cast<size_t>(i)] = st.uniform_float() < 0.5f;
  }
  return f;
}

template <bool kHorizontal, bool kRandom>
Tensor flip_kernel(const KernelArgs& a) {
  return guarded([&] {
    const Tensor& x = a.in.at(0);
    return flip_image(x, kHorizontal, flips(a, x, kRandom));
  });
}

Tensor convert_kernel(const KernelArgs& a) {
  return guarded([&] { return convert_image_dtype(a.in.at(0), a.out_dtype()); });
}

std::vector<float> floats_of(const Tensor& t) {
  Tensor f = cast_tensor(t, DType::F32);
  return std::vector<float>(f.data<float>(), f.data<float>() + f.num_elements());
}

Tensor normalize_kernel(const KernelArgs& a) {
  return guarded([&] { return normalize_image(a.in.at(0), floats_of(a.in.at(1)), floats_of(a.in.at(2))); });
}

// The fused flip, convert and normalize (convert_normalize_fusion): the flips drawn as the random flip
// it replaces draws them (same op_id, seed and stream), mean and std read as normalize reads them.
template <bool kRandom>
Tensor convert_normalize_kernel(const KernelArgs& a) {
  return guarded([&] {
    const Tensor& x = a.in.at(0);
    if (a.in.size() == 2) throw OpError("expected the image alone, or the image, mean and std");
    ConvertNormalizeOptions o;
    if (const Value* flip = find_attr(a.instr, "flip")) {
      if (flip->s != "left_right" && flip->s != "up_down") throw OpError(fmt::format("unknown flip `{}`", flip->s));
      o.horizontal = flip->s == "left_right";
      if (x.rank() == 3 || x.rank() == 4) o.flip = flips(a, x, kRandom);
    }
    std::vector<float> mean, sd;
    if (a.in.size() == 3) {
      mean = floats_of(a.in[1]);
      sd = floats_of(a.in[2]);
      o.mean = &mean;
      o.std = &sd;
    }
    o.into = a.into;
    return convert_normalize_image(x, o);
  });
}

Tensor rgb_to_grayscale_kernel(const KernelArgs& a) {
  return guarded([&] { return rgb_to_grayscale_image(a.in.at(0)); });
}

Tensor distance_transform_kernel(const KernelArgs& a) {
  return guarded([&] { return distance_transform_image(a.in.at(0)); });
}

}  // namespace

// class_dict.csv: a header line, then `name,r,g,b` rows. Read once per process and path.
std::shared_ptr<const Colors> read_colors_csv(const std::string& path) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::shared_ptr<const Colors>> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(path); it != cache.end()) return it->second;
  std::istringstream in(read_whole_file(path));
  auto colors = std::make_shared<Colors>();
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line_no == 1 || line.empty()) continue;  // the header
    std::vector<std::string> cells;
    std::stringstream ls(line);
    for (std::string cell; std::getline(ls, cell, ',');) cells.push_back(cell);
    if (cells.size() != 4)
      throw OpError(fmt::format("{}:{}: expected `name,r,g,b`, got {} cells", path, line_no, cells.size()));
    std::array<uint8_t, 3> c{};
    for (int k = 0; k < 3; ++k) {
      char* end = nullptr;
      long v = std::strtol(cells[static_cast<size_t>(k + 1)].c_str(), &end, 10);
      if (end == cells[static_cast<size_t>(k + 1)].c_str() || *end != 0 || v < 0 || v > 255)
        throw OpError(fmt::format("{}:{}: colour value `{}` is not an integer in 0..255", path, line_no,
                                  cells[static_cast<size_t>(k + 1)]));
      c[static_cast<size_t>(k)] = static_cast<uint8_t>(v);
    }
    colors->push_back(c);
  }
  if (colors->empty()) throw OpError(fmt::format("{}: no colours (expected a header, then `name,r,g,b` rows)", path));
  cache[path] = colors;
  return colors;
}

namespace {

// one_hot_colors' colours (a CSV path, or the [r, g, b] rows compilation inlined), checked against the
// class count of the result type.
std::shared_ptr<const Colors> colors_of(const KernelArgs& a, const Value& v) {
  std::shared_ptr<const Colors> colors;
  if (v.kind == Value::String) {
    colors = read_colors_csv(resolve(a, v.s));
  } else {
    auto list = std::make_shared<Colors>();
    for (const Value& row : v.items) {
      if (row.items.size() != 3) throw OpError("colors must be [r, g, b] rows");
      list->push_back({static_cast<uint8_t>(row.items[0].i), static_cast<uint8_t>(row.items[1].i),
                       static_cast<uint8_t>(row.items[2].i)});
    }
    colors = list;
  }
  const int64_t classes = a.instr.type.shape.empty() ? -1 : a.instr.type.shape.back();
  if (classes >= 0 && classes != static_cast<int64_t>(colors->size()))
    throw OpError(fmt::format("classes = {} but {} lists {} colours", classes,
                              v.kind == Value::String ? v.s : "the list", colors->size()));
  return colors;
}

Tensor one_hot_colors_kernel(const KernelArgs& a) {
  const Value* v = find_attr(a.instr, "colors");
  if (!v) throw OpError("missing attribute `colors`");
  std::shared_ptr<const Colors> colors = colors_of(a, *v);
  return guarded([&] { return one_hot_colors_image(a.in.at(0), *colors); });
}

Tensor encode_png_kernel(const KernelArgs& a) {
  return guarded([&] { return Tensor::from_strings({encode_png_image(a.in.at(0))}, {}); });
}

Tensor encode_jpeg_kernel(const KernelArgs& a) {
  const int quality = static_cast<int>(attr_int(a.instr, "quality", 95));
  return guarded([&] { return Tensor::from_strings({encode_jpeg_image(a.in.at(0), quality)}, {}); });
}

}  // namespace

void register_image_ops(KernelTable& t) {
  t.set(OpKind::ReadFile, read_file_kernel);
  t.set(OpKind::DecodeJpeg, decode_jpeg_kernel);
  t.set(OpKind::DecodePng, decode_png_kernel);
  t.set(OpKind::DecodeImage, decode_image_kernel);
  t.set(OpKind::RandomCrop, random_crop_kernel);
  t.set(OpKind::CentralCrop, central_crop_kernel);
  t.set(OpKind::CropOrPad, crop_or_pad_kernel);
  t.set(OpKind::Resize, resize_kernel);
  t.set(OpKind::FlipLeftRight, flip_kernel<true, false>);
  t.set(OpKind::FlipUpDown, flip_kernel<false, false>);
  t.set(OpKind::RandomFlipLeftRight, flip_kernel<true, true>);
  t.set(OpKind::RandomFlipUpDown, flip_kernel<false, true>);
  t.set(OpKind::ConvertImageDtype, convert_kernel);
  t.set(OpKind::Normalize, normalize_kernel);
  t.set(OpKind::RgbToGrayscale, rgb_to_grayscale_kernel);
  t.set(OpKind::DistanceTransform, distance_transform_kernel);
  t.set(OpKind::OneHotColors, one_hot_colors_kernel);
  t.set(OpKind::ConvertNormalize, convert_normalize_kernel<false>);
  t.set(OpKind::RandomFlipConvertNormalize, convert_normalize_kernel<true>);
  t.set(OpKind::EncodePng, encode_png_kernel);
  t.set(OpKind::EncodeJpeg, encode_jpeg_kernel);
}

}  // namespace pipec
