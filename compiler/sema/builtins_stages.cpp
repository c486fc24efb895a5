// Dataset stages (what follows `|` in a pipeline) and sinks, with tf.data's semantics for the
// element type: batch adds a leading dimension, unbatch removes it, map replaces the fields.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>

#include "compiler/sema/builtin_rules.h"

namespace pipec {

namespace {

// How far from 1 a distribution's chances may add up (lists written with 6 digits, 1/3 as 0.333333).
constexpr double kDistributionTolerance = 1e-5;

Builtin stage(std::string name, std::vector<ParamSpec> params, std::string doc, TypeRule rule,
              BuiltinKind kind = BuiltinKind::Stage) {
  params.insert(params.begin(), req("input"));
  return Builtin{std::move(name), kind, std::move(params), std::move(doc), std::move(rule)};
}

Type element_record(const ElementInfo& e) { return Type::record(e.fields); }

// After a map on batched data, the batch dimensions survive only if every field still leads with them.
int surviving_batch_rank(const ElementInfo& in, const std::vector<Field>& fields) {
  if (in.batch_rank == 0 || in.fields.empty()) return 0;
  const Type& ref = *in.fields[0].type;
  for (const Field& f : fields) {
    if (!f.type->is_tensor() || f.type->rank() < in.batch_rank) return 0;
    for (int d = 0; d < in.batch_rank; ++d)
      if (f.type->shape[d] != ref.shape[d]) return 0;
  }
  return in.batch_rank;
}

Type rule_map(CallContext& ctx) {
  const ElementInfo* in = ctx.dataset("input");
  if (!in) return Type::error();
  if (ctx.has("parallel") && ctx.arg("parallel").option.empty()) ctx.const_int("parallel", 1);
  if (ctx.has("deterministic")) ctx.const_bool("deterministic");
  Type body = ctx.lambda("fn", {element_record(*in)});
  if (body.is_error()) return body;
  if (body.kind != TypeKind::Record) {
    auto* lambda = ctx.arg("fn").expr->as<LambdaExpr>();
    auto& diag = ctx.error(DiagKind::record_expected, lambda->body->range,
                           fmt::format("map must produce a record of fields, not {}", type_to_string(body)));
    diag.help = "wrap the result in a record, e.g. `{ x: ... }`";
    return Type::error();
  }
  ElementInfo out = *in;
  out.fields = *body.fields;
  out.batch_rank = surviving_batch_rank(*in, out.fields);
  return dataset_of(std::move(out));
}

Type rule_filter(CallContext& ctx) {
  const ElementInfo* in = ctx.dataset("input");
  if (!in) return Type::error();
  Type body = ctx.lambda("predicate", {element_record(*in)});
  if (body.is_error()) return body;
  if (!body.is_scalar() || body.dtype != DType::Bool) {
    auto* lambda = ctx.arg("predicate").expr->as<LambdaExpr>();
    ctx.error(DiagKind::bool_expected, lambda->body->range,
              fmt::format("a filter predicate must give one bool per element, not {}", type_to_string(body)));
    return Type::error();
  }
  ElementInfo out = *in;
  return dataset_of(std::move(out));
}

// The optional `drop_remainder` argument: false when absent; nullopt (the error said) when not a
// constant bool.
std::optional<bool> drop_remainder(CallContext& ctx) {
  if (!ctx.has("drop_remainder")) return false;
  return ctx.const_bool("drop_remainder");
}

// batch, padded_batch and window: every element gains a leading dimension of `size`, or `?` when the
// last one may be shorter.
Type batch_like(CallContext& ctx, bool padded) {
  const ElementInfo* in = ctx.dataset("input");
  auto size = ctx.const_int("size", 1);
  const std::optional<bool> drop_arg = drop_remainder(ctx);
  if (!drop_arg) return Type::error();
  const bool drop = *drop_arg;
  if (!in || !size) return Type::error();
  if (padded && ctx.has("padding_value")) {
    auto pv = ctx.tensor("padding_value");
    if (!pv) return Type::error();
  }
  ElementInfo out = *in;
  // Every batch is full when the remainder is dropped or the input never ends.
  int64_t bdim = (drop || in->infinite) ? *size : kUnknownDim;
  for (Field& f : out.fields) {
    const Type& t = *f.type;
    if (!padded) {
      for (int64_t d = in->batch_rank; d < t.rank(); ++d) {
        if (t.shape[d] < 0) {
          auto& diag = ctx.error(DiagKind::ragged_batch, ctx.range,
                                 fmt::format("field `{}` is {}: its length varies, so its elements cannot be stacked",
                                             f.name, type_to_string(t)));
          diag.help = ctx.builtin.name == "window"
                          ? "a window stacks its elements as batch does: give the field one length first"
                          : "use padded_batch(n) to pad each batch to its longest element";
          return Type::error();
        }
      }
    }
    Type nt = t;
    nt.shape.insert(nt.shape.begin(), bdim);
    f.type = std::make_shared<const Type>(nt);
  }
  out.batch_rank += 1;
  return dataset_of(std::move(out));
}

// window(size, shift = size, stride = 1, drop_remainder = false): tf.data's window with each window
// batched (`.flat_map(lambda w: w.batch(size))`): window i stacks the elements i * shift + k * stride
// (k < size). Its type is batch's: every window is full when the remainder is dropped or the input
// never ends.
Type rule_window(CallContext& ctx) {
  const std::optional<int64_t> shift = ctx.has("shift") ? ctx.const_int("shift", 1) : std::optional<int64_t>(1);
  const std::optional<int64_t> stride = ctx.has("stride") ? ctx.const_int("stride", 1) : std::optional<int64_t>(1);
  Type out = batch_like(ctx, false);
  if (!shift || !stride) return Type::error();
  return out;
}

// The integer scalar a per-element function gives (bucket_by_length's length, group_by_window's key,
// rejection_resample's class);
// false (the error said) when it gives something else.
bool integer_per_element(CallContext& ctx, std::string_view param, const Type& body, std::string_view what) {
  if (body.is_error()) return false;
  if (body.is_scalar() && is_integer(body.dtype)) return true;
  auto* lambda = ctx.arg(param).expr->as<LambdaExpr>();
  auto& d = ctx.error(DiagKind::integer_expected, lambda->body->range,
                      fmt::format("{}'s {} function must give one integer per element, not {}", ctx.builtin.name, what,
                                  type_to_string(body)));
  d.help = ctx.builtin.name == "bucket_by_length"     ? "e.g. `length = r => size(r.tokens)`"
           : ctx.builtin.name == "rejection_resample" ? "e.g. `class_fn = r => r.label`"
                                                      : "e.g. `key = r => r.id % 4`";
  return false;
}

// bucket_by_length(length, boundaries, batch_sizes, padding_value = 0, pad_to_bucket_boundary = false,
// drop_remainder = false): tf.data's bucket_by_sequence_length (padded, padded_shapes None). Every
// element is a padded batch of one bucket's elements: fields lead with `?` (buckets batch by their own
// sizes, and the last batch of each may be short) unless every batch is one size; `?` dimensions stay
// `?` (padded to the batch's longest, or to the bucket's boundary - 1).
Type rule_bucket_by_length(CallContext& ctx) {
  const ElementInfo* in = ctx.dataset("input");
  const auto boundaries = ctx.const_int_list("boundaries");
  const auto sizes = ctx.const_int_list("batch_sizes");
  const std::optional<bool> drop = drop_remainder(ctx);
  const std::optional<bool> to_boundary =
      ctx.has("pad_to_bucket_boundary") ? ctx.const_bool("pad_to_bucket_boundary") : std::optional<bool>(false);
  if (ctx.has("padding_value") && !ctx.tensor("padding_value")) return Type::error();
  if (!in) return Type::error();
  const Type length = ctx.lambda("length", {element_record(*in)});
  if (!integer_per_element(ctx, "length", length, "length") || !boundaries || !sizes || !drop || !to_boundary)
    return Type::error();
  const SourceRange at_boundaries = ctx.arg("boundaries").range, at_sizes = ctx.arg("batch_sizes").range;
  for (size_t k = 0; k < boundaries->size(); ++k) {
    const int64_t b = (*boundaries)[k];
    if (b <= 0 || b > std::numeric_limits<int32_t>::max()) {
      ctx.error(DiagKind::invalid_argument_value, at_boundaries,
                fmt::format("bucket boundaries are lengths from 1 to {}, but boundary {} is {}",
                            std::numeric_limits<int32_t>::max(), k, b));
      return Type::error();
    }
    if (k > 0 && b <= (*boundaries)[k - 1]) {
      auto& d = ctx.error(DiagKind::invalid_argument_value, at_boundaries,
                          fmt::format("bucket boundaries must increase, but {} follows {}", b, (*boundaries)[k - 1]));
      d.help = "bucket k holds the lengths from boundary k - 1 up to (not including) boundary k";
      return Type::error();
    }
  }
  if (sizes->size() != boundaries->size() + 1) {
    auto& d = ctx.error(DiagKind::invalid_argument_value, at_sizes,
                        fmt::format("{} boundaries make {} buckets, so batch_sizes needs {} sizes, not {}",
                                    boundaries->size(), boundaries->size() + 1, boundaries->size() + 1, sizes->size()));
    d.help = "one batch size per bucket: the lengths below the first boundary, between each two, and from the last up";
    return Type::error();
  }
  for (size_t k = 0; k < sizes->size(); ++k)
    if ((*sizes)[k] < 1) {
      ctx.error(DiagKind::invalid_argument_value, at_sizes,
                fmt::format("batch sizes must be at least 1, but bucket {}'s is {}", k, (*sizes)[k]));
      return Type::error();
    }
  if (*to_boundary && boundaries->empty()) {
    auto& d = ctx.error(DiagKind::invalid_argument_value, ctx.arg("pad_to_bucket_boundary").range,
                        "pad_to_bucket_boundary pads each bucket to its boundary - 1, but there are no boundaries");
    d.help = "every length must be below the last boundary: give the boundaries, or pad to each batch's longest";
    return Type::error();
  }
  // Every batch is full only when short ones are dropped (or never made: the input never ends), and
  // every bucket's size is the same.
  const bool one_size = std::all_of(sizes->begin(), sizes->end(), [&](int64_t n) { return n == sizes->front(); });
  const int64_t bdim = one_size && (*drop || in->infinite) ? sizes->front() : kUnknownDim;
  ElementInfo out = *in;
  for (Field& f : out.fields) {
    Type t = *f.type;
    t.shape.insert(t.shape.begin(), bdim);
    f.type = std::make_shared<const Type>(std::move(t));
  }
  out.batch_rank += 1;
  return dataset_of(std::move(out));
}

// group_by_window(key, window_size, reduce): tf.data's group_by_window with a constant window size and
// a reduce function that batches each window: `w => w | batch(...)` or `w => w | padded_batch(...)`
// (or with the key first, `(k, w) => ...`). The body is checked as that stage on a finite dataset of
// the input's elements, so the element type is the batch's.
Type rule_group_by_window(CallContext& ctx) {
  const ElementInfo* in = ctx.dataset("input");
  const auto window = ctx.const_int("window_size", 1);
  if (!in) return Type::error();
  const Type key = ctx.lambda("key", {element_record(*in)});
  const bool key_ok = integer_per_element(ctx, "key", key, "key");
  const BoundArg& reduce = ctx.arg("reduce");
  const auto* lambda = reduce.expr && reduce.expr->kind == ExprKind::Lambda ? reduce.expr->as<LambdaExpr>() : nullptr;
  if (!lambda || (lambda->params.size() != 1 && lambda->params.size() != 2)) {
    auto& d = ctx.error(DiagKind::type_mismatch, reduce.range,
                        "group_by_window's reduce must be a function of the window (and the key before it)");
    d.help = "e.g. `reduce = w => w | batch(4)` or `reduce = (k, w) => w | padded_batch(4)`";
    return Type::error();
  }
  ElementInfo window_info = *in;  // a window: some of the input's elements, never infinitely many
  window_info.infinite = false;
  window_info.tfrecord_source = false;
  std::vector<Type> params;
  if (lambda->params.size() == 2) params.push_back(Type::tensor(DType::I64));
  params.push_back(dataset_of(window_info));
  const Type body = ctx.lambda("reduce", params);
  if (body.is_error() || !key_ok || !window) return Type::error();
  // Only the forms tf.data users write: the window, batched or padded and batched, once.
  const Expr& e = *lambda->body;
  const std::string& w = lambda->params.back();
  const auto* pipe = e.kind == ExprKind::Pipe ? e.as<PipeExpr>() : nullptr;
  const Expr* stage = pipe ? pipe->rhs.get() : nullptr;
  const Expr* callee = stage && stage->kind == ExprKind::Call ? stage->as<CallExpr>()->callee.get() : stage;
  const bool of_window = pipe && pipe->lhs->kind == ExprKind::Name && pipe->lhs->as<NameExpr>()->name == w;
  const bool batches = callee && callee->kind == ExprKind::Name &&
                       (callee->as<NameExpr>()->name == "batch" || callee->as<NameExpr>()->name == "padded_batch");
  if (!of_window || !batches) {
    auto& d = ctx.error(DiagKind::invalid_argument_value, e.range,
                        fmt::format("group_by_window's reduce may only batch the window: `{0} | batch(n, ...)` or "
                                    "`{0} | padded_batch(n, ...)`",
                                    w));
    d.help = "transform the elements before group_by_window, or its batches after it";
    return Type::error();
  }
  ElementInfo out = *body.element;
  out.infinite = in->infinite;
  return dataset_of(std::move(out));
}

// rejection_resample's target_dist or initial_dist: a constant list of finite numbers >= 0 that add up
// to 1 (tf.data's arithmetic assumes it: its chance of taking the original stream is min(target /
// initial)); nullopt (and a diagnostic) otherwise.
std::optional<std::vector<double>> class_distribution(CallContext& ctx, std::string_view param) {
  const BoundArg& a = ctx.arg(param);
  if (a.type.is_error()) return std::nullopt;
  if (!a.type.is_tensor() || a.type.rank() != 1 || a.type.dtype == DType::Bytes || a.type.dtype == DType::Bool) {
    ctx.error(DiagKind::type_mismatch, a.range,
              fmt::format("rejection_resample's {} is a list of numbers, one chance per class, not {}", param,
                          type_to_string(a.type)));
    return std::nullopt;
  }
  if (!a.value || a.value->kind != Value::List) {
    ctx.error(DiagKind::not_constant, a.range,
              fmt::format("rejection_resample's {} must be known at compile time", param));
    return std::nullopt;
  }
  std::vector<double> p;
  for (const Value& v : a.value->items) p.push_back(v.as_double());
  if (p.empty()) {
    ctx.error(DiagKind::invalid_argument_value, a.range,
              fmt::format("rejection_resample's {} is empty: it needs one chance per class", param));
    return std::nullopt;
  }
  double sum = 0;
  for (size_t k = 0; k < p.size(); ++k) {
    if (!std::isfinite(p[k]) || p[k] < 0 || p[k] > 1) {
      ctx.error(DiagKind::invalid_argument_value, a.range,
                fmt::format("rejection_resample's {} gives class {} the chance {}: a chance is a number in [0, 1]",
                            param, k, p[k]));
      return std::nullopt;
    }
    sum += p[k];
  }
  if (std::abs(sum - 1.0) > kDistributionTolerance) {
    auto& d =
        ctx.error(DiagKind::invalid_argument_value, a.range,
                  fmt::format("rejection_resample's {} adds up to {}, not 1: it is not a distribution", param, sum));
    d.help = "give each class its share, the shares adding up to 1 (within 1e-5)";
    return std::nullopt;
  }
  return p;
}

// rejection_resample(class_fn, target_dist, initial_dist = estimated, seed = run seed): tf.data's
// rejection_resample. The element is the input's, unchanged (tf.data's (class, element) without the
// class, which class_fn gives again when wanted).
Type rule_rejection_resample(CallContext& ctx) {
  const ElementInfo* in = ctx.dataset("input");
  if (!in) return Type::error();
  const Type klass = ctx.lambda("class_fn", {element_record(*in)});
  bool ok = integer_per_element(ctx, "class_fn", klass, "class");
  const auto target = class_distribution(ctx, "target_dist");
  ok = ok && target.has_value();
  if (ctx.has("initial_dist")) {
    const auto initial = class_distribution(ctx, "initial_dist");
    ok = ok && initial.has_value();
    if (initial && target && initial->size() != target->size()) {
      auto& d =
          ctx.error(DiagKind::invalid_argument_value, ctx.arg("initial_dist").range,
                    fmt::format("initial_dist has {} classes but target_dist has {}", initial->size(), target->size()));
      d.help = "both give one chance per class, in the same order";
      ok = false;
    }
  }
  if (ctx.has("seed")) ok = ctx.const_int("seed").has_value() && ok;
  if (!ok) return Type::error();
  return dataset_of(ElementInfo(*in));
}

// rebatch(size, drop_remainder = false): tf.data's rebatch, unbatch() | batch(size) in one stage: the
// leading (batch) dimension of every field becomes `size`, or `?` when the last batch may be shorter.
Type rule_rebatch(CallContext& ctx) {
  const ElementInfo* in = ctx.dataset("input");
  auto size = ctx.const_int("size", 1);
  const std::optional<bool> drop_arg = drop_remainder(ctx);
  if (!drop_arg) return Type::error();
  const bool drop = *drop_arg;
  if (!in || !size) return Type::error();
  if (in->batch_rank < 1) {
    auto& d = ctx.error(
        DiagKind::shape_mismatch, ctx.range,
        fmt::format("rebatch regroups the rows of batches, but its input is not batched: {}", element_to_string(*in)));
    d.help = "batch the elements with batch(n)";
    return Type::error();
  }
  ElementInfo out = *in;
  for (Field& f : out.fields) {
    Type t = *f.type;
    t.shape.at(0) = (drop || in->infinite) ? *size : kUnknownDim;
    f.type = std::make_shared<const Type>(std::move(t));
  }
  return dataset_of(std::move(out));
}

// scan(initial, fn): tf.data's scan(initial_state, scan_func). `initial` is a record of constants, the
// state before the first element; fn(state, element) returns one record whose fields named like the
// state's are the next state (of the state's dtypes and shapes) and which is the output element.
Type rule_scan(CallContext& ctx) {
  const ElementInfo* in = ctx.dataset("input");
  const BoundArg& init = ctx.arg("initial");
  if (!in || init.type.is_error()) return Type::error();
  if (init.type.kind != TypeKind::Record || !init.expr || init.expr->kind != ExprKind::Record) {
    auto& d =
        ctx.error(DiagKind::type_mismatch, init.range,
                  fmt::format("scan's initial state is a record of constants, not {}", type_to_string(init.type)));
    d.help = "e.g. `scan({ total: 0 }, (s, r) => { total: s.total + r.value, value: r.value })`";
    return Type::error();
  }
  bool ok = true;
  for (const RecordFieldSyntax& f : init.expr->as<RecordExpr>()->fields) {
    if (!f.value || !f.value->constant) {
      ctx.error(DiagKind::not_constant, f.value ? f.value->range : f.name_range,
                fmt::format("scan's initial `{}` must be known at compile time", f.name));
      ok = false;
    }
    for (const Field& g : in->fields)
      if (g.name == f.name) {
        auto& d = ctx.error(DiagKind::duplicate_definition, f.name_range,
                            fmt::format("scan: the state's field `{}` has the name of a field of the element", f.name));
        d.help = "the function reads both: name the state's fields apart from the element's";
        ok = false;
      }
  }
  if (!ok) return Type::error();
  Type body = ctx.lambda("fn", {init.type, element_record(*in)});
  if (body.is_error()) return body;
  const Expr& result = *ctx.arg("fn").expr->as<LambdaExpr>()->body;
  if (body.kind != TypeKind::Record) {
    auto& d = ctx.error(DiagKind::record_expected, result.range,
                        fmt::format("scan's function must return a record of fields, not {}", type_to_string(body)));
    d.help = "the next state's fields and the element's, e.g. `{ total: s.total + r.value, value: r.value }`";
    return Type::error();
  }
  for (const Field& f : *init.type.fields) {
    const Type* next = body.field(f.name);
    if (!next) {
      auto& d = ctx.error(
          DiagKind::type_mismatch, result.range,
          fmt::format("scan's function must return the next state, but its record has no field `{}`", f.name));
      d.help = "return the state's fields with the element's, e.g. `{ total: s.total + r.value, value: r.value }`";
      return Type::error();
    }
    if (next->dtype != f.type->dtype || next->shape != f.type->shape) {
      auto& d = ctx.error(DiagKind::type_mismatch, result.range,
                          fmt::format("scan's state `{}` is {}, but the function returns it as {}", f.name,
                                      type_to_string(*f.type), type_to_string(*next)));
      d.help = next->dtype != f.type->dtype
                   ? fmt::format("the state keeps its type: convert it, e.g. `{}(...)`", dtype_name(f.type->dtype))
                   : "the state keeps its shape from element to element";
      return Type::error();
    }
  }
  ElementInfo out = *in;
  out.fields = *body.fields;
  out.batch_rank = surviving_batch_rank(*in, out.fields);
  return dataset_of(std::move(out));
}

Type rule_unbatch(CallContext& ctx) {
  const ElementInfo* in = ctx.dataset("input");
  if (!in) return Type::error();
  ElementInfo out = *in;
  for (Field& f : out.fields) {
    const Type& t = *f.type;
    if (t.rank() == 0) {
      ctx.error(DiagKind::shape_mismatch, ctx.range,
                fmt::format("unbatch needs every field to have a leading dimension, but `{}` is {}", f.name,
                            type_to_string(t)));
      return Type::error();
    }
    Type nt = t;
    nt.shape.erase(nt.shape.begin());
    f.type = std::make_shared<const Type>(nt);
  }
  out.batch_rank = std::max(0, in->batch_rank - 1);
  return dataset_of(std::move(out));
}

Type rule_shuffle(CallContext& ctx) {
  const ElementInfo* in = ctx.dataset("input");
  auto buffer = ctx.const_int("buffer", 1);
  if (ctx.has("seed")) ctx.const_int("seed", 0);
  if (ctx.has("reshuffle_each_iteration")) ctx.const_bool("reshuffle_each_iteration");
  if (!in || !buffer) return Type::error();
  return dataset_of(*in);
}

Type rule_repeat(CallContext& ctx) {
  const ElementInfo* in = ctx.dataset("input");
  if (!in) return Type::error();
  ElementInfo out = *in;
  if (ctx.has("count")) {
    auto n = ctx.const_int("count", 1);
    if (!n) return Type::error();
  } else {
    out.infinite = true;
  }
  if (in->infinite)
    ctx.error(DiagKind::unreachable_stage, ctx.range,
              "the input already repeats forever, so this repeat never starts a second pass");
  return dataset_of(std::move(out));
}

Type rule_take(CallContext& ctx) {
  const ElementInfo* in = ctx.dataset("input");
  auto n = ctx.const_int("count", -1);
  if (!in || !n) return Type::error();
  ElementInfo out = *in;
  if (*n >= 0) out.infinite = false;
  return dataset_of(std::move(out));
}

Type rule_skip(CallContext& ctx) {
  const ElementInfo* in = ctx.dataset("input");
  auto n = ctx.const_int("count", 0);
  if (!in || !n) return Type::error();
  return dataset_of(*in);
}

Type rule_shard(CallContext& ctx) {
  const ElementInfo* in = ctx.dataset("input");
  auto n = ctx.const_int("num_shards", 1);
  auto i = ctx.const_int("index", 0);
  if (!in || !n || !i) return Type::error();
  if (*i >= *n) {
    ctx.error(DiagKind::invalid_argument_value, ctx.arg("index").range,
              fmt::format("shard index {} must be less than the number of shards ({})", *i, *n));
    return Type::error();
  }
  return dataset_of(*in);
}

Type rule_cache(CallContext& ctx) {
  const ElementInfo* in = ctx.dataset("input");
  if (!in) return Type::error();
  if (ctx.has("where") && ctx.arg("where").option.empty() && !ctx.const_string("where")) return Type::error();
  if (in->infinite)
    ctx.error(DiagKind::unreachable_stage, ctx.range,
              "cache after an infinite repeat() never finishes filling; put it before repeat()");
  return dataset_of(*in);
}

Type rule_prefetch(CallContext& ctx) {
  const ElementInfo* in = ctx.dataset("input");
  if (!in) return Type::error();
  if (ctx.has("size") && ctx.arg("size").option.empty() && !ctx.const_int("size", 1)) return Type::error();
  return dataset_of(*in);
}

// A name the grammar accepts as a record field: a letter or `_`, then letters, digits and `_`.
bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// enumerate(start = 0, field = "index"): tf.data's enumerate, whose (index, element) tuple becomes the
// element's record with the index as its first field. After a batch the index counts batches, as
// tf.data's does; that scalar field has no batch dimension, so the result is no longer batched.
Type rule_enumerate(CallContext& ctx) {
  const ElementInfo* in = ctx.dataset("input");
  std::optional<int64_t> start = ctx.has("start") ? ctx.const_int("start") : std::optional<int64_t>(0);
  std::optional<std::string> name = ctx.has("field") ? ctx.const_string("field") : std::optional<std::string>("index");
  if (!in || !start || !name) return Type::error();
  const SourceRange where = ctx.has("field") ? ctx.arg("field").range : ctx.range;
  if (!is_identifier(*name)) {
    ctx.error(DiagKind::invalid_argument_value, where,
              fmt::format("enumerate's field name `{}` is not a name a record field can have", *name));
    return Type::error();
  }
  for (const Field& f : in->fields)
    if (f.name == *name) {
      auto& d = ctx.error(DiagKind::duplicate_definition, where,
                          fmt::format("enumerate: the element already has a field `{}`", *name));
      d.help = "name the index field with `field = \"...\"`";
      return Type::error();
    }
  ElementInfo out = *in;
  out.fields.insert(out.fields.begin(), Field{*name, std::make_shared<const Type>(Type::tensor(DType::I64))});
  out.batch_rank = 0;
  return dataset_of(std::move(out));
}

Type rule_same(CallContext& ctx) {
  const ElementInfo* in = ctx.dataset("input");
  if (!in) return Type::error();
  return dataset_of(*in);
}

// The dataset each element becomes under flat_map's or interleave's function `fn`: the output's element,
// or an error (reported).
Type dataset_function(CallContext& ctx, const ElementInfo& in) {
  Type body = ctx.dataset_lambda("fn", element_record(in));
  if (body.is_error()) return body;
  const Expr& at = *ctx.arg("fn").expr->as<LambdaExpr>()->body;
  if (body.kind != TypeKind::Dataset) {
    auto& diag = ctx.error(DiagKind::dataset_function_expected, at.range,
                           fmt::format("{}'s function must give a dataset for each element, not {}", ctx.builtin.name,
                                       type_to_string(body)));
    diag.help = "start the body with a source that reads the element's fields, e.g. `r => text_lines(r.path)`";
    return Type::error();
  }
  if (body.element->is_sink) {
    ctx.error(DiagKind::dataset_function_expected, at.range,
              fmt::format("{}'s function must give a dataset, not end in write(...)", ctx.builtin.name));
    return Type::error();
  }
  ElementInfo out = *body.element;
  out.infinite = out.infinite || in.infinite;
  return dataset_of(std::move(out));
}

// deterministic = false lets tf.data hand on elements in the order they are ready; pipec's order never
// depends on timing, so it is accepted and changes nothing (a note says so).
void deterministic_note(CallContext& ctx) {
  if (!ctx.has("deterministic")) return;
  auto d = ctx.const_bool("deterministic");
  if (d && !*d)
    ctx.diags().report(
        DiagKind::ignored_nondeterminism, ctx.arg("deterministic").range,
        fmt::format("{}'s order never depends on timing: deterministic = false changes nothing", ctx.builtin.name));
}

// flat_map(fn): tf.data's flat_map: every element of fn(element 0)'s dataset, then of fn(element 1)'s, ...
Type rule_flat_map(CallContext& ctx) {
  const ElementInfo* in = ctx.dataset("input");
  if (!in) return Type::error();
  return dataset_function(ctx, *in);
}

// interleave(fn, cycle_length, block_length): tf.data's interleave: cycle_length of the elements'
// datasets open at once, block_length elements from each in turn. Without fn: the files of the
// tfrecord source right before it, read that way.
Type rule_interleave(CallContext& ctx) {
  const ElementInfo* in = ctx.dataset("input");
  deterministic_note(ctx);
  if (ctx.has("fn")) {
    const BoundArg& fn = ctx.arg("fn");
    if (!fn.expr || fn.expr->kind != ExprKind::Lambda) return in ? dataset_function(ctx, *in) : Type::error();
    // The cycle decides the order: a number, never the machine's thread count (what `auto` means for files).
    std::optional<int64_t> cycle;
    if (!ctx.has("cycle_length") || !ctx.arg("cycle_length").option.empty()) {
      auto& diag = ctx.error(DiagKind::invalid_argument_value,
                             ctx.has("cycle_length") ? ctx.arg("cycle_length").range : ctx.range,
                             "interleave with a function needs a number as its cycle_length: the order depends on it");
      diag.help = "e.g. `interleave(f => text_lines(f.path), cycle_length = 4)`";
    } else {
      cycle = ctx.const_int("cycle_length", 1);
    }
    bool ok = cycle.has_value();
    if (ctx.has("block_length")) ok = ctx.const_int("block_length", 1).has_value() && ok;
    if (!in) return Type::error();
    Type t = dataset_function(ctx, *in);
    return ok ? t : Type::error();
  }
  if (ctx.has("cycle_length") && ctx.arg("cycle_length").option.empty()) ctx.const_int("cycle_length", 1);
  if (ctx.has("block_length")) ctx.const_int("block_length", 1);
  if (!in) return Type::error();
  // It interleaves the files of the source before it, so there must be no stage in between.
  if (!in->tfrecord_source) {
    auto& diag = ctx.error(DiagKind::interleave_input, ctx.range, "interleave must come right after a tfrecord source");
    diag.help =
        "interleave the source's files first (`src | interleave(cycle_length = 4) | map(...)`), or give it a "
        "function: `interleave(f => text_lines(f.path), cycle_length = 4)`";
    return Type::error();
  }
  return dataset_of(*in);
}

Type rule_to(CallContext& ctx) {
  const ElementInfo* in = ctx.dataset("input");
  if (!in) return Type::error();
  ElementInfo out = *in;
  out.on_gpu = ctx.arg("device").option == "gpu";
  return dataset_of(std::move(out));
}

Type rule_write(CallContext& ctx) {
  const ElementInfo* in = ctx.dataset("input");
  if (!in) return Type::error();
  const BoundArg& f = ctx.arg("format");
  if (f.type.is_error()) return Type::error();
  if (f.type.kind != TypeKind::Opaque || f.type.name.rfind("format:", 0) != 0) {
    ctx.error(DiagKind::type_mismatch, f.range,
              fmt::format("write needs an output format such as tfrecord(\"out/part-*.tfrecord\"), not {}",
                          type_to_string(f.type)));
    return Type::error();
  }
  if (in->infinite)
    ctx.error(DiagKind::unreachable_stage, ctx.range,
              "writing an infinite dataset never finishes; add take(n) or remove repeat()");
  if (f.type.name == "format:files") {
    // Every field is one file per element: it must be a byte string (encode_png / encode_jpeg give one).
    for (const Field& fl : in->fields)
      if (!fl.type->is_tensor() || fl.type->dtype != DType::Bytes || fl.type->rank() != 0) {
        auto& diag = ctx.error(DiagKind::type_mismatch, f.range,
                               fmt::format("files(...) writes one byte string per field, but `{}` is {}", fl.name,
                                           type_to_string(*fl.type)));
        diag.help = "encode images first, e.g. { image: encode_png(img) }";
        return Type::error();
      }
  }
  ElementInfo out = *in;
  out.is_sink = true;
  return dataset_of(std::move(out));
}

Type rule_files_format(CallContext& ctx) {
  auto path = ctx.const_string("path");
  if (!path) return Type::error();
  if (path->find("{index}") == std::string::npos) {
    auto& diag = ctx.error(DiagKind::invalid_argument_value, ctx.arg("path").range,
                           "files(...) needs `{index}` in its path, where each element's number goes");
    diag.help = "e.g. files(\"data/{field}/{index}.png\")";
    return Type::error();
  }
  return Type::opaque("format:files");
}

Type rule_tfrecord_format(CallContext& ctx) {
  auto path = ctx.const_string("path");
  auto shards = ctx.has("shards") ? ctx.const_int("shards", 1) : std::optional<int64_t>(1);
  if (!path || !shards) return Type::error();
  if (*shards > 1 && path->find('*') == std::string::npos) {
    ctx.error(DiagKind::invalid_argument_value, ctx.arg("path").range,
              fmt::format("with {} shards the path needs a `*` where the shard number goes", *shards));
    return Type::error();
  }
  return Type::opaque("format:tfrecord");
}

}  // namespace

void register_stage_builtins(std::vector<Builtin>& out) {
  out.push_back(stage("map", {req("fn"), opt("parallel", "auto", {"auto"}), opt("deterministic", "true")},
                      "Applies fn to every element; fn returns a record of fields. Runs in parallel and keeps order "
                      "unless deterministic = false.",
                      rule_map));
  out.push_back(stage("filter", {req("predicate")}, "Keeps the elements for which predicate is true.", rule_filter));
  out.push_back(stage("batch", {req("size"), opt("drop_remainder", "false")},
                      "Stacks `size` consecutive elements into one; the last, smaller batch is dropped when "
                      "drop_remainder is true.",
                      [](CallContext& ctx) { return batch_like(ctx, false); }));
  out.push_back(stage("padded_batch", {req("size"), opt("padding_value", "0"), opt("drop_remainder", "false")},
                      "Like batch, but pads variable-length fields to the longest element of each batch.",
                      [](CallContext& ctx) { return batch_like(ctx, true); }));
  out.push_back(stage("window", {req("size"), opt("shift", "size"), opt("stride", "1"), opt("drop_remainder", "false")},
                      "Stacks the elements i * shift + k * stride (k < size) into window i, as tf.data's "
                      "window(...).flat_map(lambda w: w.batch(size)) does; the last windows are shorter unless "
                      "drop_remainder is true.",
                      rule_window));
  out.push_back(stage("bucket_by_length",
                      {req("length"), req("boundaries"), req("batch_sizes"), opt("padding_value", "0"),
                       opt("pad_to_bucket_boundary", "false"), opt("drop_remainder", "false")},
                      "Puts each element in the bucket of its length (bucket k: from boundary k - 1 up to boundary "
                      "k) and pads and batches each bucket by its batch size (tf.data's "
                      "bucket_by_sequence_length).",
                      rule_bucket_by_length));
  out.push_back(stage("group_by_window", {req("key"), req("window_size"), req("reduce")},
                      "Groups elements by key; each window of `window_size` elements of one key (and at the end "
                      "what is left of each, by increasing key) is batched by reduce, `w => w | batch(n)` or `w => "
                      "w | padded_batch(n)` (tf.data's group_by_window).",
                      rule_group_by_window));
  out.push_back(stage("rejection_resample",
                      {req("class_fn"), req("target_dist"), opt("initial_dist", "estimated"), opt("seed", "run seed")},
                      "Keeps and repeats elements at random so that their classes (class_fn) follow target_dist, "
                      "from initial_dist or an estimate of it (tf.data's rejection_resample, the same elements for "
                      "the same seed; the element is the input's, without tf.data's class).",
                      rule_rejection_resample));
  out.push_back(stage("pack", {req("length"), req("fields"), opt("rows_open", "8"), opt("truncate", "false")},
                      "Packs variable-length examples first-fit into rows of exactly `length` tokens, with "
                      "`segment_ids` and `positions` for every token (sequence packing as Grain does it; not a "
                      "tf.data transformation).",
                      rule_pack));
  out.push_back(stage("rebatch", {req("size"), opt("drop_remainder", "false")},
                      "The rows of the input's batches in batches of `size` (tf.data's rebatch: unbatch() | "
                      "batch(size) in one stage).",
                      rule_rebatch));
  out.push_back(stage("scan", {req("initial"), req("fn")},
                      "Runs fn(state, element) on each element in order, from the state `initial`: the fields it "
                      "returns named like the state's are the next state, and its record is the element (tf.data's "
                      "scan).",
                      rule_scan));
  out.push_back(stage("unbatch", {}, "Splits each batch back into its elements.", rule_unbatch));
  out.push_back(stage("shuffle", {req("buffer"), opt("seed", "run seed"), opt("reshuffle_each_iteration", "true")},
                      "Samples uniformly from a buffer of `buffer` elements, as tf.data's shuffle does.",
                      rule_shuffle));
  out.push_back(
      stage("repeat", {opt("count", "forever")}, "Repeats the input `count` times, or forever.", rule_repeat));
  out.push_back(stage("take", {req("count")}, "The first `count` elements (all when -1).", rule_take));
  out.push_back(stage("skip", {req("count")}, "Everything after the first `count` elements.", rule_skip));
  out.push_back(stage("shard", {req("num_shards"), req("index")},
                      "Every num_shards-th element, starting at index (one worker's share).", rule_shard));
  out.push_back(stage("cache", {opt("where", "memory", {"memory"})},
                      "Keeps the elements of the first pass in memory (or in files at a path) and replays them.",
                      rule_cache));
  out.push_back(stage("prefetch", {opt("size", "auto", {"auto"})},
                      "Prepares up to `size` elements ahead in the background (auto: tuned at run time).",
                      rule_prefetch));
  out.push_back(stage("enumerate", {opt("start", "0"), opt("field", "\"index\"")},
                      "Adds the element's position, counted from `start`, as the first field (tf.data's enumerate).",
                      rule_enumerate));
  out.push_back(
      stage("ignore_errors", {}, "Drops elements whose reading or processing fails, and counts them.", rule_same));
  out.push_back(stage("interleave",
                      {opt("fn", "none"), opt("cycle_length", "auto", {"auto"}), opt("block_length", "1"),
                       opt("deterministic", "true")},
                      "With fn: the datasets fn makes of the elements, `cycle_length` open at once, `block_length` "
                      "elements from each in turn (tf.data's interleave). Without: the tfrecord source's files, "
                      "read that way.",
                      rule_interleave));
  out.push_back(stage("flat_map", {req("fn")},
                      "Every element of the dataset fn makes of each element in turn (tf.data's flat_map), e.g. "
                      "`flat_map(f => text_lines(f.path))`.",
                      rule_flat_map));
  out.push_back(
      stage("to", {req("device")}, "Moves elements to a device; the stages after to(gpu) run on the GPU.", rule_to));
  // `options` holds the device words so that `to(gpu)` reads as an option, not a name.
  out.back().params[1].options = {"gpu", "cpu"};
  out.push_back(stage("write", {req("format")},
                      "Writes every element to files, e.g. write(tfrecord(\"out/part-*.tfrecord\")).", rule_write,
                      BuiltinKind::Sink));
  out.push_back(Builtin{"tfrecord",
                        BuiltinKind::Format,
                        {req("path"), opt("shards", "1"), opt("compression", "none", {"none", "gzip", "zlib"})},
                        "TFRecord files of tf.train.Example records, as an output format of write(...).",
                        rule_tfrecord_format});
  out.push_back(Builtin{"files",
                        BuiltinKind::Format,
                        {req("path")},
                        "One file per element and field, as an output format of write(...): the path's {field} is "
                        "replaced by the field name and {index} by the element number (6 digits). Every field must "
                        "be a byte string, e.g. encode_png(image).",
                        rule_files_format});
}

}  // namespace pipec
