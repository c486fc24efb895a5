// Dataset sources: where elements come from, and the element type their schema gives them.
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "compiler/sema/builtin_rules.h"

namespace pipec {

namespace {

Builtin source(std::string name, std::vector<ParamSpec> params, std::string doc, TypeRule rule) {
  return Builtin{std::move(name), BuiltinKind::Source, std::move(params), std::move(doc), std::move(rule)};
}

Field field(std::string name, Type t) { return Field{std::move(name), std::make_shared<const Type>(std::move(t))}; }

// The element a schema declares. `allowed` says which written dtypes the format can hold; `bytes[N]`
// means a byte string of exactly N bytes, read as u8[N].
std::optional<std::vector<Field>> schema_fields(CallContext& ctx, const std::vector<DType>& allowed, bool allow_dims,
                                                const char* format) {
  if (!ctx.decl || !ctx.decl->has_schema) {
    auto& diag = ctx.error(DiagKind::missing_schema, ctx.range,
                           fmt::format("{} needs a schema naming the fields it reads", ctx.builtin.name));
    diag.help = fmt::format("declare it as `source NAME = {}(...) {{ field: type ... }}`", ctx.builtin.name);
    return std::nullopt;
  }
  std::vector<Field> out;
  std::set<std::string> seen;
  bool ok = true;
  for (const SchemaField& sf : ctx.decl->schema) {
    if (!seen.insert(sf.name).second) {
      ctx.error(DiagKind::duplicate_definition, sf.name_range, fmt::format("field `{}` is declared twice", sf.name));
      ok = false;
      continue;
    }
    Type t = ctx.checker.resolve_type(sf.type);
    if (t.is_error()) {
      ok = false;
      continue;
    }
    bool dtype_ok = std::find(allowed.begin(), allowed.end(), t.dtype) != allowed.end();
    if (!dtype_ok || (!allow_dims && t.rank() > 0 && t.dtype != DType::Bytes) || t.rank() > 1 + (allow_dims ? 8 : 0)) {
      std::string names;
      for (size_t i = 0; i < allowed.size(); ++i)
        names += std::string(i ? ", " : "") + std::string(dtype_name(allowed[i]));
      ctx.error(DiagKind::invalid_feature_type, sf.type.range,
                fmt::format("{} fields can be {}{}, not {}", format, names,
                            allow_dims ? " (with dimensions)" : " scalars", type_to_string(t)));
      ok = false;
      continue;
    }
    if (t.dtype == DType::Bytes && t.rank() > 0) {
      if (t.rank() != 1 || t.shape[0] < 0) {
        ctx.error(
            DiagKind::invalid_feature_type, sf.type.range,
            "a bytes field is one byte string: `bytes` (any length) or `bytes[N]` (exactly N bytes, read as u8[N])");
        ok = false;
        continue;
      }
      t = Type::tensor(DType::U8, t.shape);
    }
    if (sf.default_value) {
      Type dt = ctx.checker.check(*sf.default_value);
      if (dt.is_error()) {
        ok = false;
      } else if (!sf.default_value->constant) {
        ctx.error(DiagKind::not_constant, sf.default_value->range, "a default value must be a constant");
        ok = false;
      } else {
        bool kind_ok = dt.is_tensor() &&
                       ((dt.dtype == DType::Bytes) == (t.dtype == DType::Bytes || t.dtype == DType::U8)) &&
                       !(is_float(dt.dtype) && is_integer(t.dtype));
        bool shape_ok = dt.rank() == 0 || dt.shape == t.shape;
        if (!kind_ok || !shape_ok) {
          ctx.error(DiagKind::type_mismatch, sf.default_value->range,
                    fmt::format("the default of `{}` is {}, which does not fit {}", sf.name, type_to_string(dt),
                                type_to_string(t)));
          ok = false;
        }
      }
    }
    out.push_back(field(sf.name, t));
  }
  if (!ok) return std::nullopt;
  if (out.empty()) {
    ctx.error(DiagKind::missing_schema, ctx.range, "the schema declares no fields");
    return std::nullopt;
  }
  return out;
}

Type rule_tfrecord(CallContext& ctx) {
  auto path = ctx.const_string("files");
  if (ctx.has("shuffle_files")) ctx.const_bool("shuffle_files");
  if (ctx.has("seed")) ctx.const_int("seed", 0);
  if (ctx.has("parallel_reads") && ctx.arg("parallel_reads").option.empty()) ctx.const_int("parallel_reads", 1);
  auto fields = schema_fields(ctx, {DType::I64, DType::F32, DType::Bytes}, true, "tf.Example");
  if (!path || !fields) return Type::error();
  ElementInfo e;
  e.fields = std::move(*fields);
  return dataset_of(std::move(e));
}

Type rule_files(CallContext& ctx) {
  auto path = ctx.const_string("pattern");
  if (ctx.has("shuffle")) ctx.const_bool("shuffle");
  if (ctx.has("seed")) ctx.const_int("seed", 0);
  if (!path) return Type::error();
  ElementInfo e;
  e.fields.push_back(field("path", Type::tensor(DType::Bytes)));
  return dataset_of(std::move(e));
}

Type rule_range(CallContext& ctx) {
  auto a = ctx.const_int("start_or_stop");
  std::optional<int64_t> b = ctx.has("stop") ? ctx.const_int("stop") : std::optional<int64_t>(0);
  std::optional<int64_t> step = ctx.has("step") ? ctx.const_int("step") : std::optional<int64_t>(1);
  if (!a || !b || !step) return Type::error();
  if (*step == 0) {
    ctx.error(DiagKind::invalid_argument_value, ctx.arg("step").range, "range's step cannot be zero");
    return Type::error();
  }
  ElementInfo e;
  e.fields.push_back(field("value", Type::tensor(DType::I64)));
  return dataset_of(std::move(e));
}

Type rule_csv(CallContext& ctx) {
  auto path = ctx.const_string("path");
  if (ctx.has("header")) ctx.const_bool("header");
  if (ctx.has("delimiter")) {
    auto d = ctx.const_string("delimiter");
    if (d && d->size() != 1)
      ctx.error(DiagKind::invalid_argument_value, ctx.arg("delimiter").range, "the delimiter must be one character");
  }
  auto fields = schema_fields(ctx, {DType::I32, DType::I64, DType::F32, DType::F64, DType::Bytes}, false, "csv");
  if (!path || !fields) return Type::error();
  ElementInfo e;
  e.fields = std::move(*fields);
  return dataset_of(std::move(e));
}

Type rule_npy(CallContext& ctx) {
  auto path = ctx.const_string("path");
  auto fields = schema_fields(ctx,
                              {DType::Bool, DType::U8, DType::I8, DType::U16, DType::I16, DType::U32, DType::I32,
                               DType::U64, DType::I64, DType::F16, DType::F32, DType::F64},
                              true, "npy");
  if (!path || !fields) return Type::error();
  if (fields->size() != 1) {
    ctx.error(DiagKind::invalid_feature_type, ctx.decl->schema[1].range,
              "an npy file holds one array: declare exactly one field (the type of one row)");
    return Type::error();
  }
  ElementInfo e;
  e.fields = std::move(*fields);
  return dataset_of(std::move(e));
}

Type rule_zip(CallContext& ctx) {
  const BoundArg& all = ctx.arg("datasets");
  if (all.rest.size() < 2) {
    ctx.error(DiagKind::missing_argument, ctx.range, "zip needs at least two datasets");
    return Type::error();
  }
  ElementInfo out;
  out.infinite = true;
  std::set<std::string> names;
  for (size_t i = 0; i < all.rest.size(); ++i) {
    const BoundArg& a = all.rest[i];
    if (a.type.is_error()) return Type::error();
    if (a.type.kind != TypeKind::Dataset) {
      ctx.error(DiagKind::not_a_dataset, a.range, fmt::format("zip takes datasets, not {}", type_to_string(a.type)));
      return Type::error();
    }
    const ElementInfo& e = *a.type.element;
    if (i == 0) out.batch_rank = e.batch_rank;
    else if (e.batch_rank != out.batch_rank) {
      ctx.error(DiagKind::shape_mismatch, a.range, "zip: the datasets are batched differently");
      return Type::error();
    }
    out.infinite = out.infinite && e.infinite;
    for (const Field& f : e.fields) {
      if (!names.insert(f.name).second) {
        ctx.error(DiagKind::duplicate_definition, a.range,
                  fmt::format("zip: field `{}` comes from more than one dataset; rename it with a map first", f.name));
        return Type::error();
      }
      out.fields.push_back(f);
    }
  }
  return dataset_of(std::move(out));
}

// The element of several datasets that yield one stream (concatenate, choose_from): every dataset must
// have the same fields (in any order; the first's order is kept), with the same dtypes and ranks, and be
// batched alike. A dimension the datasets disagree on becomes `?`, as tf.data gives the most specific
// shape compatible with both. Reports against the first dataset that does not agree, naming both types.
std::optional<ElementInfo> agreeing_element(CallContext& ctx, const std::vector<BoundArg>& items) {
  const std::string& who = ctx.builtin.name;
  std::optional<ElementInfo> out;
  for (const BoundArg& a : items) {
    if (a.type.is_error()) return std::nullopt;
    if (a.type.kind != TypeKind::Dataset) {
      ctx.error(DiagKind::not_a_dataset, a.range,
                fmt::format("{} takes datasets, not {}", who, type_to_string(a.type)));
      return std::nullopt;
    }
    const ElementInfo& e = *a.type.element;
    if (!out) {
      out = e;
      continue;
    }
    auto differ = [&](const std::string& why) {
      auto& d = ctx.error(DiagKind::type_mismatch, a.range,
                          fmt::format("{}: the datasets' elements differ ({}): {} and {}", who, why,
                                      element_to_string(*out), element_to_string(e)));
      d.help =
          "their elements must agree: the same field names, dtypes and ranks, batched alike (dimensions that "
          "differ become `?`); make them agree with a map first";
      return std::nullopt;
    };
    if (e.batch_rank != out->batch_rank) return differ("batched differently");
    if (e.fields.size() != out->fields.size()) return differ("different fields");
    for (Field& f : out->fields) {
      const Field* g = nullptr;
      for (const Field& h : e.fields)
        if (h.name == f.name) g = &h;
      if (!g) return differ(fmt::format("this one has no field `{}`", f.name));
      if (g->type->dtype != f.type->dtype || g->type->rank() != f.type->rank())
        return differ(
            fmt::format("field `{}` is {} and {}", f.name, type_to_string(*f.type), type_to_string(*g->type)));
      if (g->type->shape != f.type->shape) {
        Type merged = *f.type;
        for (size_t k = 0; k < merged.shape.size(); ++k)
          if (merged.shape[k] != g->type->shape[k]) merged.shape[k] = kUnknownDim;
        f.type = std::make_shared<const Type>(std::move(merged));
      }
    }
  }
  return out;
}

// concatenate(a, b, ...): tf.data's a.concatenate(b): every element of a, then every element of b.
Type rule_concatenate(CallContext& ctx) {
  const BoundArg& all = ctx.arg("datasets");
  if (all.rest.size() < 2) {
    ctx.error(DiagKind::missing_argument, ctx.range, "concatenate needs at least two datasets");
    return Type::error();
  }
  std::optional<ElementInfo> out = agreeing_element(ctx, all.rest);
  if (!out) return Type::error();
  out->infinite = false;
  out->on_gpu = false;
  for (size_t i = 0; i < all.rest.size(); ++i) {
    const ElementInfo& e = *all.rest[i].type.element;
    out->on_gpu = out->on_gpu || e.on_gpu;
    if (e.infinite && i + 1 < all.rest.size())
      ctx.error(DiagKind::unreachable_stage, all.rest[i + 1].range,
                "concatenate: the dataset before this one never ends, so this one is never read");
    out->infinite = out->infinite || e.infinite;
  }
  return dataset_of(std::move(*out));
}

// choose_from([a, b, ...], index): tf.data's choose_from_datasets: element i comes from the dataset the
// index pipeline's element i names.
Type rule_choose_from(CallContext& ctx) {
  const BoundArg& list = ctx.arg("datasets");
  if (!list.present || list.type.is_error()) return Type::error();
  if (list.rest.empty()) {
    ctx.error(DiagKind::missing_argument, list.range, "choose_from needs a list of at least one dataset");
    return Type::error();
  }
  std::optional<ElementInfo> out = agreeing_element(ctx, list.rest);
  const ElementInfo* index = ctx.dataset("index");
  if (ctx.has("stop_on_empty") && !ctx.const_bool("stop_on_empty")) return Type::error();
  if (!out || !index) return Type::error();
  if (index->batch_rank != 0 || index->fields.size() != 1 || index->fields[0].type->dtype != DType::I64 ||
      index->fields[0].type->rank() != 0) {
    auto& d = ctx.error(DiagKind::type_mismatch, ctx.arg("index").range,
                        fmt::format("choose_from's index pipeline must yield one i64 scalar per element, not {}",
                                    element_to_string(*index)));
    d.help = "e.g. `range(4) | map(r => { i: r.value % 2 })`";
    return Type::error();
  }
  // It ends when the index pipeline ends (or an input it picks does); infinite only if none can.
  bool all_infinite = index->infinite;
  for (const BoundArg& a : list.rest) all_infinite = all_infinite && a.type.element->infinite;
  out->infinite = all_infinite;
  return dataset_of(std::move(*out));
}

// text_lines(files, compression): tf.data's TextLineDataset: {line: bytes} per line.
Type rule_text_lines(CallContext& ctx) {
  auto files = ctx.const_string("files");
  if (!files) return Type::error();
  ElementInfo e;
  e.fields.push_back(field("line", Type::tensor(DType::Bytes)));
  return dataset_of(std::move(e));
}

// fixed_length_records(files, record_bytes, header_bytes, footer_bytes, compression): tf.data's
// FixedLengthRecordDataset: {record: u8[record_bytes]} (tf.data's string record, decode_raw'd to uint8).
Type rule_fixed_length_records(CallContext& ctx) {
  auto files = ctx.const_string("files");
  auto record = ctx.const_int("record_bytes", 1);
  bool ok = files && record;
  for (const char* name : {"header_bytes", "footer_bytes"})
    if (ctx.has(name)) ok = ctx.const_int(name, 0).has_value() && ok;
  if (!ok) return Type::error();
  ElementInfo e;
  e.fields.push_back(field("record", Type::tensor(DType::U8, {*record})));
  return dataset_of(std::move(e));
}

// sample_from's weights: a constant list of one finite number >= 0 per dataset, not all 0; nullopt (and
// a diagnostic) otherwise.
std::optional<std::vector<double>> sample_weights(CallContext& ctx, size_t datasets) {
  const BoundArg& a = ctx.arg("weights");
  if (a.type.is_error()) return std::nullopt;
  if (!a.type.is_tensor() || a.type.rank() != 1 || a.type.dtype == DType::Bytes || a.type.dtype == DType::Bool) {
    ctx.error(
        DiagKind::type_mismatch, a.range,
        fmt::format("sample_from's weights are a list of numbers, one per dataset, not {}", type_to_string(a.type)));
    return std::nullopt;
  }
  if (!a.value || a.value->kind != Value::List) {
    ctx.error(DiagKind::not_constant, a.range, "sample_from's weights must be known at compile time");
    return std::nullopt;
  }
  std::vector<double> w;
  for (const Value& v : a.value->items) w.push_back(v.as_double());
  if (w.size() != datasets) {
    ctx.error(DiagKind::invalid_argument_value, a.range,
              fmt::format("sample_from has {} dataset{} but {} weight{}: give one weight per dataset", datasets,
                          datasets == 1 ? "" : "s", w.size(), w.size() == 1 ? "" : "s"));
    return std::nullopt;
  }
  bool any = false;
  for (size_t k = 0; k < w.size(); ++k) {
    if (!std::isfinite(w[k]) || w[k] < 0) {
      ctx.error(DiagKind::invalid_argument_value, a.range,
                fmt::format("sample_from's weight {} is {}: a weight must be a finite number >= 0", k, w[k]));
      return std::nullopt;
    }
    // Weights are f32, as tf.data makes Python floats: one beyond its range would be infinite.
    if (!std::isfinite(static_cast<float>(w[k]))) {
      ctx.error(
          DiagKind::invalid_argument_value, a.range,
          fmt::format("sample_from's weight {} is {}, beyond f32's range (weights are f32, as in tf.data)", k, w[k]));
      return std::nullopt;
    }
    any = any || static_cast<float>(w[k]) > 0;
  }
  if (!any) {
    auto& d = ctx.error(DiagKind::invalid_argument_value, a.range,
                        "every weight of sample_from is 0, so no dataset would ever be chosen");
    d.help = "a dataset of weight 0 is never read; give at least one a weight > 0";
    return std::nullopt;
  }
  return w;
}

// sample_from([a, b, ...], weights, seed, stop_on_empty): tf.data's sample_from_datasets: each element
// comes from a dataset drawn at random with probability weight / sum of weights.
Type rule_sample_from(CallContext& ctx) {
  const BoundArg& list = ctx.arg("datasets");
  if (!list.present || list.type.is_error()) return Type::error();
  if (list.rest.empty()) {
    ctx.error(DiagKind::missing_argument, list.range, "sample_from needs a list of at least one dataset");
    return Type::error();
  }
  std::optional<ElementInfo> out = agreeing_element(ctx, list.rest);
  bool ok = true;
  std::vector<double> weights(list.rest.size(), 1.0);
  if (ctx.has("weights")) {
    auto w = sample_weights(ctx, list.rest.size());
    if (w) weights = *w;
    ok = ok && w.has_value();
  }
  if (ctx.has("seed")) ok = ctx.const_int("seed").has_value() && ok;
  bool stop = false;
  if (ctx.has("stop_on_empty")) {
    auto s = ctx.const_bool("stop_on_empty");
    ok = ok && s.has_value();
    stop = s.value_or(false);
  }
  if (!out || !ok) return Type::error();
  // Every dataset of weight > 0 is chosen again and again: the output ends at the first that ends
  // (stop_on_empty) or when all have; a dataset of weight 0 is never read.
  bool any_infinite = false, all_infinite = true;
  for (size_t k = 0; k < list.rest.size(); ++k) {
    if (!(static_cast<float>(weights[k]) > 0)) continue;
    const bool inf = list.rest[k].type.element->infinite;
    any_infinite = any_infinite || inf;
    all_infinite = all_infinite && inf;
  }
  out->infinite = stop ? all_infinite : any_infinite;
  return dataset_of(std::move(*out));
}

}  // namespace

void register_source_builtins(std::vector<Builtin>& out) {
  out.push_back(
      source("tfrecord",
             {req("files"), opt("compression", "none", {"none", "gzip", "zlib"}), opt("shuffle_files", "false"),
              opt("seed", "run seed"), opt("parallel_reads", "auto", {"auto"})},
             "Reads tf.train.Example records from TFRecord files (a glob); the schema names the features used.",
             rule_tfrecord));
  out.push_back(source("files", {req("pattern"), opt("shuffle", "false"), opt("seed", "run seed")},
                       "One element {path} per file matching the glob, in sorted order unless shuffled.", rule_files));
  out.push_back(source("list_files", {req("pattern"), opt("shuffle", "false"), opt("seed", "run seed")},
                       "Same as files(pattern): one element {path} per matching file.", rule_files));
  out.push_back(source("range", {req("start_or_stop"), opt("stop", ""), opt("step", "1")},
                       "The integers range(stop) or range(start, stop, step) as elements {value: i64}.", rule_range));
  out.push_back(source("csv", {req("path"), opt("header", "true"), opt("delimiter", "\",\"")},
                       "Rows of a CSV file; the schema names and types the columns used.", rule_csv));
  out.push_back(
      source("npy", {req("path")}, "The rows of a NumPy .npy array; the schema gives the type of one row.", rule_npy));
  out.push_back(source("text_lines", {req("files"), opt("compression", "none", {"none", "gzip", "zlib"})},
                       "One element {line} per line of the files the pattern matches, without its \"\\n\" (or "
                       "\"\\r\\n\") (tf.data's TextLineDataset).",
                       rule_text_lines));
  out.push_back(source("fixed_length_records",
                       {req("files"), req("record_bytes"), opt("header_bytes", "0"), opt("footer_bytes", "0"),
                        opt("compression", "none", {"none", "gzip", "zlib"})},
                       "One element {record: u8[record_bytes]} per record between each file's header and footer "
                       "(tf.data's FixedLengthRecordDataset, its records decode_raw'd to u8).",
                       rule_fixed_length_records));
  out.push_back(
      source("zip", {rest("datasets")}, "Pairs up elements of several datasets, merging their fields.", rule_zip));
  out.push_back(source("concatenate", {rest("datasets")},
                       "Every element of the first dataset, then every element of the next (tf.data's concatenate).",
                       rule_concatenate));
  out.push_back(source("choose_from", {dataset_list("datasets"), req("index"), opt("stop_on_empty", "true")},
                       "Element i comes from the dataset that element i of the index pipeline names "
                       "(tf.data's choose_from_datasets).",
                       rule_choose_from));
  out.push_back(source(
      "sample_from",
      {dataset_list("datasets"), opt("weights", "equal"), opt("seed", "run seed"), opt("stop_on_empty", "false")},
      "Each element comes from a dataset drawn at random with probability weight / sum of weights "
      "(tf.data's sample_from_datasets; the same draws as TensorFlow for the same seed).",
      rule_sample_from));
}

}  // namespace pipec
