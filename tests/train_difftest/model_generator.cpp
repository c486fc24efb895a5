#include "tests/train_difftest/model_generator.h"

#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "tests/difftest/gen_types.h"

namespace pipec::train_difftest {

namespace {

using difftest::Rng;
using difftest::shape_literal;

constexpr int64_t kMaxSide = 10;       // image height and width, everywhere in the net
constexpr int64_t kMaxChannels = 6;    // filters of a convolution
constexpr int64_t kMaxFeatures = 160;  // a flattened image

double log_uniform(Rng& r, double lo, double hi) { return std::exp(r.real(std::log(lo), std::log(hi))); }

// A float setting as a Pipe literal (never an integer literal: `2.0`, `1e-05`).
std::string num(double v) {
  std::string s = fmt::format("{:.4g}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// One integer for both spatial dimensions, or [height, width] when they differ.
std::string pair_text(int64_t h, int64_t w) { return h == w ? std::to_string(h) : fmt::format("[{}, {}]", h, w); }

// A size for both dimensions, drawn independently a quarter of the time.
std::pair<int64_t, int64_t> draw_pair(Rng& r, int64_t lo, int64_t hi) {
  int64_t h = r.range(lo, hi);
  return {h, r.chance(0.25) ? r.range(lo, hi) : h};
}

// TensorFlow's output size of a window (docs/language.md §7).
int64_t window_out(int64_t in, int64_t window, int64_t stride, bool same) {
  if (same) return (in + stride - 1) / stride;
  return in < window ? 0 : (in - window) / stride + 1;
}

bool spatial(const Shape& s) { return s.size() == 3; }

struct Layer {
  std::string text;
  Shape shape;
};

// The layers: each draw picks a kind uniformly among those that apply to the input's rank, and redraws
// when the kind's random sizes do not fit the input (a valid window larger than the image, an image
// that would grow past kMaxSide).
class LayerDraws {
 public:
  explicit LayerDraws(Rng& r) : r_(r) {}

  /// A random layer on `s`; with `keep`, one whose output has the input's shape.
  Layer any(const Shape& s, bool keep) {
    for (;;)
      if (std::optional<Layer> l = try_kind(s, keep)) return *l;
  }

  /// An element-wise activation (or none: "").
  std::string activation(const Shape& s) {
    static const std::vector<std::string> kinds = {"relu", "leaky_relu", "gelu", "tanh", "sigmoid", "softmax"};
    const std::string& k = r_.pick(kinds);
    if (k == "leaky_relu") return leaky_relu();
    if (k == "softmax") return softmax(s);
    return k;
  }

 private:
  std::string leaky_relu() {
    return r_.chance(0.5) ? "leaky_relu" : fmt::format("leaky_relu(alpha = {})", num(r_.real(0, 1)));
  }

  std::string softmax(const Shape& s) {
    if (r_.chance(0.5)) return "softmax";
    const int64_t rank = static_cast<int64_t>(s.size());
    return fmt::format("softmax(axis = {})", r_.range(-rank, rank - 1));
  }

  std::optional<Layer> try_kind(const Shape& s, bool keep) {
    enum Kind {
      Conv,
      ConvTranspose,
      MaxPool,
      AvgPool,
      Upsample,
      Dense,
      Relu,
      LeakyRelu,
      Gelu,
      Tanh,
      Sigmoid,
      Softmax,
      BatchNorm,
      LayerNorm,
      Dropout,
      Flatten,
      GlobalAvg,
      GlobalMax,
      Count
    };
    const Kind k = static_cast<Kind>(r_.range(0, Count - 1));
    const bool img = spatial(s);
    switch (k) {
      case Conv: return img ? conv(s, keep) : std::nullopt;
      case ConvTranspose: return img ? conv_transpose(s, keep) : std::nullopt;
      case MaxPool:
      case AvgPool: return img ? pool(s, keep, k == MaxPool ? "max_pool2d" : "avg_pool2d") : std::nullopt;
      case Upsample: return img && !keep ? upsample(s) : std::nullopt;
      case Dense: {
        Shape o = s;
        o.back() = keep ? s.back() : r_.range(1, img ? kMaxChannels : 12);
        return Layer{fmt::format("dense({})", o.back()), o};
      }
      case Relu: return Layer{"relu", s};
      case LeakyRelu: return Layer{leaky_relu(), s};
      case Gelu: return Layer{"gelu", s};
      case Tanh: return Layer{"tanh", s};
      case Sigmoid: return Layer{"sigmoid", s};
      case Softmax: return Layer{softmax(s), s};
      case BatchNorm: {
        std::vector<std::string> args;
        if (r_.chance(0.5)) args.push_back("momentum = " + num(r_.real(0, 1)));
        if (r_.chance(0.5)) args.push_back("epsilon = " + num(log_uniform(r_, 1e-5, 0.1)));
        return Layer{args.empty() ? "batch_norm" : fmt::format("batch_norm({})", fmt::join(args, ", ")), s};
      }
      case LayerNorm:
        return Layer{
            r_.chance(0.5) ? "layer_norm" : fmt::format("layer_norm(epsilon = {})", num(log_uniform(r_, 1e-5, 0.1))),
            s};
      case Dropout: return Layer{fmt::format("dropout({})", num(r_.real(0, 0.6))), s};
      case Flatten: {
        if (keep || !img || s[0] * s[1] * s[2] > kMaxFeatures) return std::nullopt;
        return Layer{"flatten", {s[0] * s[1] * s[2]}};
      }
      case GlobalAvg:
      case GlobalMax:
        if (keep || !img) return std::nullopt;
        return Layer{k == GlobalAvg ? "global_avg_pool" : "global_max_pool", {s[2]}};
      case Count: break;
    }
    return std::nullopt;
  }

  std::optional<Layer> conv(const Shape& s, bool keep) {
    const int64_t filters = keep ? s[2] : r_.range(1, kMaxChannels);
    auto [kh, kw] = draw_pair(r_, 1, 3);
    auto [sh, sw] = keep ? std::pair<int64_t, int64_t>{1, 1} : draw_pair(r_, 1, 2);
    std::pair<int64_t, int64_t> dil{1, 1};
    if (sh == 1 && sw == 1 && r_.chance(0.25)) dil = draw_pair(r_, 1, 2);
    const bool same = keep || r_.chance(0.5);
    const int64_t oh = window_out(s[0], (kh - 1) * dil.first + 1, sh, same);
    const int64_t ow = window_out(s[1], (kw - 1) * dil.second + 1, sw, same);
    if (oh < 1 || ow < 1) return std::nullopt;
    std::string t = fmt::format("conv2d({}, {}", filters, pair_text(kh, kw));
    if (sh != 1 || sw != 1) t += ", strides = " + pair_text(sh, sw);
    if (same) t += ", padding = same";
    else if (r_.chance(0.3)) t += ", padding = valid";
    if (dil.first != 1 || dil.second != 1) t += ", dilation = " + pair_text(dil.first, dil.second);
    return Layer{t + ")", {oh, ow, filters}};
  }

  std::optional<Layer> conv_transpose(const Shape& s, bool keep) {
    const int64_t filters = keep ? s[2] : r_.range(1, kMaxChannels);
    auto [kh, kw] = draw_pair(r_, 1, 3);
    auto [sh, sw] = keep ? std::pair<int64_t, int64_t>{1, 1} : draw_pair(r_, 1, 2);
    const bool same = keep || r_.chance(0.5);
    const int64_t oh = same ? s[0] * sh : s[0] * sh + std::max<int64_t>(kh - sh, 0);
    const int64_t ow = same ? s[1] * sw : s[1] * sw + std::max<int64_t>(kw - sw, 0);
    if (oh > kMaxSide || ow > kMaxSide) return std::nullopt;
    std::string t = fmt::format("conv2d_transpose({}, {}", filters, pair_text(kh, kw));
    if (sh != 1 || sw != 1) t += ", strides = " + pair_text(sh, sw);
    if (same) t += ", padding = same";
    return Layer{t + ")", {oh, ow, filters}};
  }

  std::optional<Layer> pool(const Shape& s, bool keep, const char* name) {
    auto [kh, kw] = draw_pair(r_, 1, 3);
    // Strides: the size (the default), or drawn; 1 with same padding keeps the shape.
    std::optional<std::pair<int64_t, int64_t>> strides;
    if (keep) strides = std::pair<int64_t, int64_t>{1, 1};
    else if (r_.chance(0.5)) strides = draw_pair(r_, 1, 3);
    const auto [sh, sw] = strides.value_or(std::pair<int64_t, int64_t>{kh, kw});
    const bool same = keep || r_.chance(0.5);
    const int64_t oh = window_out(s[0], kh, sh, same), ow = window_out(s[1], kw, sw, same);
    if (oh < 1 || ow < 1) return std::nullopt;
    std::string t = fmt::format("{}({}", name, pair_text(kh, kw));
    if (strides) t += ", strides = " + pair_text(sh, sw);
    if (same) t += ", padding = same";
    return Layer{t + ")", {oh, ow, s[2]}};
  }

  std::optional<Layer> upsample(const Shape& s) {
    auto [fh, fw] = draw_pair(r_, 1, 3);
    if (s[0] * fh > kMaxSide || s[1] * fw > kMaxSide) return std::nullopt;
    std::vector<std::string> args;
    if (fh != 2 || fw != 2 || r_.chance(0.3)) args.push_back("size = " + pair_text(fh, fw));
    if (r_.chance(0.5)) args.push_back(r_.chance(0.5) ? "method = bilinear" : "method = nearest");
    return Layer{args.empty() ? "upsample2d" : fmt::format("upsample2d({})", fmt::join(args, ", ")),
                 {s[0] * fh, s[1] * fw, s[2]}};
  }

  Rng& r_;
};

std::string type_of(const Shape& s) { return "f32" + shape_literal(s); }

// The model body, statement by statement, with the names of its activations and their shapes.
class BodyWriter {
 public:
  BodyWriter(Rng& r, LayerDraws& layers) : r_(r), layers_(layers) {}

  struct Value {
    std::string name;
    Shape shape;
  };

  /// `name = from | layer | ...` with `n` layers (keeping `from`'s shape when `keep`).
  Value chain(const Value& from, int n, bool keep) {
    std::string text = from.name;
    Shape s = from.shape;
    for (int i = 0; i < n; ++i) {
      Layer l = layers_.any(s, keep);
      text += " | " + l.text;
      s = l.shape;
    }
    return assign(text, s);
  }

  Value assign(const std::string& text, const Shape& s) {
    Value v{fmt::format("v{}", next_++), s};
    lines_.push_back(fmt::format("  {} = {}", v.name, text));
    return v;
  }

  std::vector<std::string>& lines() { return lines_; }

 private:
  Rng& r_;
  LayerDraws& layers_;
  std::vector<std::string> lines_;
  int next_ = 0;
};

// An image [h, w, c] or a feature vector [n], per example.
Shape draw_input(Rng& r, bool image) {
  if (image) return {r.range(1, 8), r.range(1, 8), r.range(1, 4)};
  return {r.range(1, 12)};
}

// A vector from an image: flatten (when small enough) or a global pool.
std::string to_vector(Rng& r, const Shape& s, Shape& out) {
  const int64_t n = s[0] * s[1] * s[2];
  const int pick = static_cast<int>(r.range(n <= kMaxFeatures ? 0 : 1, 2));
  out = pick == 0 ? Shape{n} : Shape{s[2]};
  return pick == 0 ? "flatten" : pick == 1 ? "global_avg_pool" : "global_max_pool";
}

}  // namespace

const char* target_kind_name(TargetKind k) {
  switch (k) {
    case TargetKind::Values: return "values";
    case TargetKind::Unit: return "unit";
    case TargetKind::OneHot: return "one_hot";
    case TargetKind::Probabilities: return "probabilities";
    case TargetKind::Labels: return "labels";
  }
  return "?";
}

bool target_kind_from_name(const std::string& name, TargetKind& out) {
  for (TargetKind k :
       {TargetKind::Values, TargetKind::Unit, TargetKind::OneHot, TargetKind::Probabilities, TargetKind::Labels})
    if (name == target_kind_name(k)) {
      out = k;
      return true;
    }
  return false;
}

TrainCase generate_train_case(uint64_t seed) {
  Rng r(seed * 0x9E3779B97F4A7C15ull + 17);
  TrainCase c;
  c.settings.seed = seed;
  c.settings.threads = static_cast<int>(r.range(1, 2));
  c.settings.direct_conv = r.chance(0.5);
  c.settings.batch = r.range(1, 6);
  LayerDraws layers(r);
  BodyWriter body(r, layers);
  std::vector<std::string> blocks;  // model declarations used as layers

  // Inputs: one image, one vector, two of them joined by concat, or integer ids into an embedding.
  // 0, 1: image; 2: vector; 3: image + vector; 4: two images; 5: ids (+ a vector half of the time)
  const int input_kind = static_cast<int>(r.range(0, 5));
  std::vector<BodyWriter::Value> ins;
  std::optional<BodyWriter::Value> embedded;  // kind 5: the ids' embedding, where the net starts
  if (input_kind == 5) {
    // Ids of rank 0 (-> a vector [d]), 1 (-> [n, d], flattened) or 2 (-> an image [h, w, d]), drawn from a
    // table of 1 to 12 rows, so that they repeat and some rows are never read.
    static const std::vector<DType> id_types = {DType::I32, DType::I64, DType::U8};
    const int rank = static_cast<int>(r.range(0, 2));
    const Shape ids = rank == 0 ? Shape{} : rank == 1 ? Shape{r.range(1, 8)} : Shape{r.range(1, 6), r.range(1, 6)};
    const int64_t rows = r.range(1, 12), width = r.range(1, kMaxChannels);
    ins.push_back({"x", ids});
    DataField f{"x", r.pick(id_types), ids, 1};
    f.ids = rows;
    c.inputs.push_back(f);
    Shape s = ids;
    s.push_back(width);
    std::string text = fmt::format("x | embedding({}, {})", rows, width);
    if (rank == 1) {
      text += " | flatten";
      s = {ids[0] * width};
    }
    embedded = body.assign(text, s);
    if (r.chance(0.5)) ins.push_back({"y", draw_input(r, false)});
  } else if (input_kind <= 2) {
    ins.push_back({"x", draw_input(r, input_kind != 2)});
  } else if (input_kind == 3) {
    ins.push_back({"x", draw_input(r, true)});
    ins.push_back({"y", draw_input(r, false)});
  } else {
    Shape a = draw_input(r, true), b = a;
    b[2] = r.range(1, 4);
    ins.push_back({"x", a});
    ins.push_back({"y", b});
  }
  for (size_t i = c.inputs.size(); i < ins.size(); ++i)  // the float inputs (after the ids, if any)
    c.inputs.push_back({ins[i].name, DType::F32, ins[i].shape, log_uniform(r, 0.1, 3)});

  BodyWriter::Value cur = embedded ? body.chain(*embedded, static_cast<int>(r.range(0, 2)), false)
                                   : body.chain(ins[0], static_cast<int>(r.range(1, 3)), false);
  if (ins.size() == 2) {
    BodyWriter::Value other = body.chain(ins[1], static_cast<int>(r.range(0, 2)), false);
    // Joined along the last axis: two images of one size, or else two vectors.
    std::string a = cur.name, b = other.name;
    Shape sa = cur.shape, sb = other.shape;
    const bool images_of_one_size = spatial(sa) && spatial(sb) && sa[0] == sb[0] && sa[1] == sb[1];
    if (!images_of_one_size) {
      if (spatial(sa)) a = fmt::format("{}({})", to_vector(r, cur.shape, sa), a);
      if (spatial(sb)) b = fmt::format("{}({})", to_vector(r, other.shape, sb), b);
    }
    Shape joined = sa;
    joined.back() += sb.back();
    cur = body.assign(
        r.chance(0.5) ? fmt::format("concat([{}, {}])", a, b) : fmt::format("concat([{}, {}], axis = -1)", a, b),
        joined);
  }
  // More statements: chains, a branch merged back by add or concat, a block.
  const int statements = static_cast<int>(r.range(0, 3));
  for (int i = 0; i < statements; ++i) {
    const int what = static_cast<int>(r.range(0, 3));
    if (what == 0) {
      cur = body.chain(cur, static_cast<int>(r.range(1, 3)), false);
    } else if (what == 1) {  // a residual branch
      BodyWriter::Value branch = body.chain(cur, static_cast<int>(r.range(1, 3)), true);
      cur = body.assign(r.chance(0.5) ? fmt::format("{} | add({})", cur.name, branch.name)
                                      : fmt::format("add({}, {})", branch.name, cur.name),
                        cur.shape);
    } else if (what == 2) {  // two branches joined along the last axis
      Layer l = layers.any(cur.shape, false);
      // Only a layer that changes at most the last axis gives a branch to join.
      if (l.shape.size() != cur.shape.size() ||
          (spatial(l.shape) && (l.shape[0] != cur.shape[0] || l.shape[1] != cur.shape[1])))
        continue;
      BodyWriter::Value a = body.chain(cur, static_cast<int>(r.range(1, 2)), true);
      BodyWriter::Value b = body.assign(cur.name + " | " + l.text, l.shape);
      Shape joined = a.shape;
      joined.back() += b.shape.back();
      cur = body.assign(fmt::format("concat([{}, {}])", a.name, b.name), joined);
    } else {  // a block: a model of its own used as a layer, once or `times` in a row
      const std::string name = fmt::format("block{}", blocks.size());
      LayerDraws inner_layers(r);
      BodyWriter inner(r, inner_layers);
      BodyWriter::Value bx{"x", cur.shape};
      BodyWriter::Value f = inner.chain(bx, static_cast<int>(r.range(1, 3)), true);
      std::string decl = fmt::format("model {}(x: {}) -> {} {{\n", name, type_of(cur.shape), type_of(cur.shape));
      for (const std::string& l : inner.lines()) decl += l + "\n";
      decl += r.chance(0.5) ? "  x | add(" + f.name + ")\n}\n" : "  " + f.name + "\n}\n";
      blocks.push_back(decl);
      const int64_t times = r.range(1, 2);
      cur = body.assign(times == 1 ? fmt::format("{} | {}", cur.name, name)
                                   : fmt::format("{} | {}(times = {})", cur.name, name, times),
                        cur.shape);
    }
  }

  // The loss, its target and the head of the net that fits them.
  static const std::vector<std::string> losses = {"mse", "mae", "huber", "binary_cross_entropy", "cross_entropy"};
  const std::string loss = r.pick(losses);
  const bool ce = loss == "cross_entropy";
  const int64_t k = ce ? r.range(2, 5) : r.range(1, 4);
  std::string head;
  Shape out;
  if (spatial(cur.shape) && r.chance(0.25)) {  // an output per pixel
    head = r.chance(0.5) ? fmt::format("conv2d({}, 1)", k) : fmt::format("dense({})", k);
    out = {cur.shape[0], cur.shape[1], k};
  } else {
    Shape v = cur.shape;
    if (spatial(v)) head = to_vector(r, cur.shape, v) + " | ";
    head += fmt::format("dense({})", k);
    out = {k};
  }
  // The last activation: the one the loss is taken from the logits behind most of the time.
  std::string last;
  if (ce) last = r.chance(0.75) ? "softmax" : r.chance(0.5) ? "sigmoid" : "";
  else if (loss == "binary_cross_entropy") last = r.chance(0.75) ? "sigmoid" : r.chance(0.5) ? "softmax" : "";
  else last = r.chance(0.5) ? layers.activation(out) : "";
  if (!last.empty()) head += " | " + last;

  c.target.name = "target";
  c.target.shape = out;
  if (loss == "binary_cross_entropy") {
    c.target_kind = TargetKind::Unit;
  } else if (ce) {
    c.target_kind =
        static_cast<TargetKind>(r.range(static_cast<int>(TargetKind::OneHot), static_cast<int>(TargetKind::Labels)));
    if (c.target_kind == TargetKind::Labels) {
      c.target.dtype = DType::I64;
      c.target.shape.pop_back();
      c.classes = k;
    }
  }
  auto field_type = [](const DataField& f) {
    std::string t(dtype_name(f.dtype));
    if (!f.shape.empty()) t += shape_literal(f.shape);
    return t;
  };

  // The optimizer: every setting drawn, eps log-uniform over its whole range.
  static const std::vector<std::string> optimizers = {"adam", "adamw", "sgd"};
  const std::string opt = r.pick(optimizers);
  const bool sgd = opt == "sgd";
  const double rate = sgd ? log_uniform(r, 1e-3, 0.3) : log_uniform(r, 1e-4, 3e-2);
  std::string lr;
  switch (r.range(0, 3)) {
    case 0: lr = num(rate); break;
    case 1: {
      std::vector<std::string> a = {num(rate), std::to_string(r.range(1, 30))};
      if (r.chance(0.5)) a.push_back("alpha = " + num(r.real(0, 1)));
      if (r.chance(0.5)) {
        a.push_back("warmup_target = " + num(rate * r.real(0.5, 3)));
        a.push_back("warmup_steps = " + std::to_string(r.range(0, 10)));
      }
      lr = fmt::format("cosine_decay({})", fmt::join(a, ", "));
      break;
    }
    case 2:
      lr = fmt::format("linear_warmup({}, {}{})", num(rate), r.range(1, 20),
                       r.chance(0.5) ? ", initial = " + num(rate * r.real(0, 1)) : "");
      break;
    default: lr = fmt::format("exponential_decay({}, {}, {})", num(rate), r.range(1, 20), num(r.real(0.2, 1.2))); break;
  }
  std::vector<std::string> args = {"lr = " + lr};
  if (sgd) {
    if (r.chance(0.5)) args.push_back("momentum = " + num(r.real(0, 0.99)));
  } else {
    if (r.chance(0.5)) args.push_back("beta1 = " + num(r.real(0, 0.99)));
    if (r.chance(0.5)) args.push_back("beta2 = " + num(1 - log_uniform(r, 1e-4, 0.1)));
    args.push_back("eps = " + num(log_uniform(r, 1e-8, 1e-2)));
    if (opt == "adamw" ? r.chance(0.5) : r.chance(0.3))
      args.push_back("weight_decay = " + num(log_uniform(r, 1e-4, 0.1)));
  }
  if (r.chance(0.3)) args.push_back("global_clipnorm = " + num(log_uniform(r, 1e-3, 10)));
  static const std::vector<std::string> precisions = {"fp32", "mixed_bf16", "mixed_fp16"};
  const std::string precision = r.pick(precisions);

  // The spec: one npy file per field, zipped and batched.
  std::string spec;
  std::vector<const DataField*> fields;
  for (const DataField& f : c.inputs) fields.push_back(&f);
  fields.push_back(&c.target);
  std::vector<std::string> sources;
  for (const DataField* f : fields) {
    spec += fmt::format("source {0}_file = npy(\"data/{0}.npy\") {{ {0}: {1} }}\n", f->name, field_type(*f));
    sources.push_back(f->name + "_file");
  }
  spec += fmt::format("pipeline data = zip({}) | batch({}, drop_remainder = true)\n", fmt::join(sources, ", "),
                      c.settings.batch);
  for (const std::string& b : blocks) spec += b;
  std::vector<std::string> params, names;
  for (const DataField& f : c.inputs) {
    params.push_back(f.name + ": " + field_type(f));
    names.push_back(f.name);
  }
  spec += fmt::format("model net({}) -> {} {{\n", fmt::join(params, ", "), type_of(out));
  for (const std::string& l : body.lines()) spec += l + "\n";
  spec += fmt::format("  {} | {}\n}}\n", cur.name, head);
  spec += fmt::format(
      "train t = {{\n  data = data,\n  model = net({}),\n  loss = {}(target),\n  optimizer = {}({}),\n"
      "  precision = {},\n  steps = {}\n}}\n",
      fmt::join(names, ", "), loss, opt, fmt::join(args, ", "), precision, c.settings.steps);
  c.spec = spec;
  // Drawn last, so that adding it left every earlier draw (and so each seed's model) as it was.
  c.settings.emulated_bf16 = precision == "mixed_bf16" && r.chance(0.5);
  return c;
}

}  // namespace pipec::train_difftest
