// pack(length, fields, rows_open = 8, truncate = false): sequence packing as Grain's and seqio's
// trainers do it, not a tf.data transformation. Every field of the element is a 1-D tensor of tokens and
// every one is named in `fields`, so nothing is left that a packed row could not hold; each field becomes
// `dtype[length]`, and `segment_ids` and `positions` (i32[length]) are added.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>

#include "compiler/sema/builtin_rules.h"

namespace pipec {

namespace {

// The field names of `fields = ["a", "b"]`; nullopt (the error said) for anything else (`[]` is an i64[0]).
std::optional<std::vector<std::string>> field_names(CallContext& ctx) {
  const BoundArg& a = ctx.arg("fields");
  if (!a.present || a.type.is_error()) return std::nullopt;
  if (!a.type.is_tensor() || a.type.rank() != 1 || a.type.dtype != DType::Bytes || !a.value ||
      a.value->kind != Value::List) {
    auto& d = ctx.error(DiagKind::type_mismatch, a.range,
                        fmt::format("`fields` of pack must be a list of field names, not {}", type_to_string(a.type)));
    d.help = "e.g. `fields = [\"tokens\", \"targets\"]`";
    return std::nullopt;
  }
  std::vector<std::string> out;
  for (const Value& v : a.value->items) out.push_back(v.s);
  return out;
}

// Where item `k` of the fields list is written (the whole list when it is not a list literal).
SourceRange item_range(CallContext& ctx, size_t k) {
  const BoundArg& a = ctx.arg("fields");
  if (a.expr && a.expr->kind == ExprKind::List) {
    const auto& items = a.expr->as<ListExpr>()->items;
    if (k < items.size()) return items[k]->range;
  }
  return a.range;
}

}  // namespace

Type rule_pack(CallContext& ctx) {
  const ElementInfo* in = ctx.dataset("input");
  const std::optional<int64_t> length = ctx.const_int("length", 1);
  const std::optional<int64_t> rows_open =
      ctx.has("rows_open") ? ctx.const_int("rows_open", 1) : std::optional<int64_t>(8);
  const std::optional<bool> truncate = ctx.has("truncate") ? ctx.const_bool("truncate") : std::optional<bool>(false);
  const auto names = field_names(ctx);
  if (!in || !length || !rows_open || !truncate || !names) return Type::error();
  if (*length > std::numeric_limits<int32_t>::max()) {
    ctx.error(DiagKind::invalid_argument_value, ctx.arg("length").range,
              fmt::format("pack's rows are at most {} tokens long (positions are i32), not {}",
                          std::numeric_limits<int32_t>::max(), *length));
    return Type::error();
  }
  if (in->batch_rank > 0) {
    auto& d = ctx.error(DiagKind::shape_mismatch, ctx.range,
                        "pack packs single examples, but its input is batched: unbatch() first");
    d.help = "pack before batch: `... | pack(length = 512, fields = [...]) | batch(8)`";
    return Type::error();
  }
  std::set<std::string> named;
  for (size_t k = 0; k < names->size(); ++k) {
    const std::string& n = (*names)[k];
    const auto it = std::find_if(in->fields.begin(), in->fields.end(), [&](const Field& f) { return f.name == n; });
    if (it == in->fields.end()) {
      ctx.error(DiagKind::unknown_field, item_range(ctx, k), fmt::format("pack: the element has no field `{}`", n));
      return Type::error();
    }
    if (!named.insert(n).second) {
      ctx.error(DiagKind::duplicate_argument, item_range(ctx, k), fmt::format("pack: field `{}` is named twice", n));
      return Type::error();
    }
    const Type& t = *it->type;
    if (!t.is_tensor() || t.rank() != 1 || t.dtype == DType::Bytes) {
      auto& d = ctx.error(DiagKind::type_mismatch, item_range(ctx, k),
                          fmt::format("pack: field `{}` is {}, but packed fields are 1-D tensors of numbers (tokens)",
                                      n, type_to_string(t)));
      d.help = "tokens are a list such as i64[?] or i32[?]";
      return Type::error();
    }
  }
  // Tokens of every field are laid side by side in one row: a field pack does not name has no place
  // there, and dropping it silently would lose data.
  for (const Field& f : in->fields)
    if (!named.count(f.name)) {
      auto& d = ctx.error(
          DiagKind::invalid_argument_value, ctx.arg("fields").range,
          fmt::format("pack: field `{}` is not in `fields`; every field of a packed element is packed", f.name));
      d.help = fmt::format("pack it too, or drop it first: `map(r => {{ ... }})` without `{}`", f.name);
      return Type::error();
    }
  // Fields of known lengths must agree now; `?` lengths are checked per element at run time.
  const Field* known = nullptr;
  for (const Field& f : in->fields) {
    const int64_t n = f.type->shape[0];
    if (n < 0) continue;
    if (known && n != known->type->shape[0]) {
      ctx.error(DiagKind::shape_mismatch, ctx.arg("fields").range,
                fmt::format("pack: field `{}` has {} tokens but `{}` has {}; packed fields are equally long", f.name, n,
                            known->name, known->type->shape[0]));
      return Type::error();
    }
    known = &f;
  }
  ElementInfo out = *in;
  for (Field& f : out.fields) f.type = std::make_shared<const Type>(Type::tensor(f.type->dtype, {*length}));
  for (const char* added : {"segment_ids", "positions"}) {
    if (named.count(added)) {
      auto& d = ctx.error(DiagKind::duplicate_definition, ctx.range,
                          fmt::format("pack adds a field `{}`, but the element already has one", added));
      d.help = "rename it first with a map";
      return Type::error();
    }
    out.fields.push_back(Field{added, std::make_shared<const Type>(Type::tensor(DType::I32, {*length}))});
  }
  out.batch_rank = 0;
  return dataset_of(std::move(out));
}

}  // namespace pipec
