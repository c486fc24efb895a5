// Byte-string ops usable inside map/filter bodies and fns, named and behaving as tf.strings' ops:
// strip, split and to_number (kernels: runtime/ops/string_ops.cpp).
#include <fmt/format.h>

#include "compiler/sema/builtin_rules.h"
#include "runtime/ops/string_text.h"

namespace pipec {

namespace {

Builtin op(std::string name, std::vector<ParamSpec> params, std::string doc, TypeRule rule) {
  return Builtin{std::move(name), BuiltinKind::Op, std::move(params), std::move(doc), std::move(rule)};
}

// The `s` argument when it holds byte strings; a number (a token id already converted) is reported.
std::optional<Type> strings_arg(CallContext& ctx) {
  auto t = ctx.tensor("s");
  if (!t) return std::nullopt;
  if (t->dtype != DType::Bytes) {
    Diagnostic& d = ctx.error(DiagKind::type_mismatch, ctx.arg("s").range,
                              fmt::format("{} needs byte strings, not {}", ctx.builtin.name, type_to_string(*t)));
    if (ctx.builtin.name == "to_number") d.help = "it is a number already; cast it instead, e.g. i64(x)";
    return std::nullopt;
  }
  return t;
}

// The first string of a constant (a string or a nested list of them) that is no number of `dt`, and
// why: known at compile time, so reported there rather than on every element at run time.
std::optional<std::string> constant_not_a_number(const Value& v, DType dt) {
  if (v.kind == Value::List) {
    for (const Value& item : v.items)
      if (auto why = constant_not_a_number(item, dt)) return why;
    return std::nullopt;
  }
  if (v.kind != Value::String) return std::nullopt;
  alignas(8) unsigned char scratch[8];
  return parse_number(v.s, dt, scratch);
}

}  // namespace

void register_string_builtins(std::vector<Builtin>& out) {
  out.push_back(op("strip", {req("s")},
                   "Removes leading and trailing ASCII whitespace from each string (tf.strings.strip); any shape.",
                   [](CallContext& ctx) -> Type {
                     auto t = strings_arg(ctx);
                     return t ? Type::tensor(DType::Bytes, t->shape) : Type::error();
                   }));
  out.push_back(
      op("split", {req("s"), opt("sep", "whitespace")},
         "Splits one string into bytes[?] (tf.strings.split): at each `sep`, keeping empty pieces; without `sep`, "
         "at runs of whitespace, with no empty pieces.",
         [](CallContext& ctx) -> Type {
           auto t = strings_arg(ctx);
           if (ctx.has("sep") && !ctx.const_string("sep")) return Type::error();
           if (!t) return Type::error();
           if (t->rank() != 0) {
             Diagnostic& d = ctx.error(DiagKind::shape_mismatch, ctx.arg("s").range,
                                       fmt::format("split takes one string, not {}", type_to_string(*t)));
             d.help = "split each string before `batch`, or pick one: split(s[0])";
             return Type::error();
           }
           return Type::tensor(DType::Bytes, {kUnknownDim});
         }));
  out.push_back(op("to_number", {req("s"), opt("dtype", "f32", {"f32", "f64", "i32", "i64"})},
                   "Reads each string as a number of `dtype` (tf.strings.to_number); same shape. Text that is not "
                   "one stops the run, naming the element and the string.",
                   [](CallContext& ctx) -> Type {
                     auto t = strings_arg(ctx);
                     if (!t) return Type::error();
                     DType dt = DType::F32;
                     if (ctx.has("dtype")) {
                       const BoundArg& d = ctx.arg("dtype");
                       auto word = parse_dtype(d.option);
                       if (!word) {  // a value, not one of the words (the checker reported other words)
                         if (!d.type.is_error())
                           ctx.error(DiagKind::type_mismatch, d.range,
                                     "to_number's `dtype` is a type word: f32, f64, i32 or i64");
                         return Type::error();
                       }
                       dt = *word;
                     }
                     if (const auto& value = ctx.arg("s").value)
                       if (auto why = constant_not_a_number(*value, dt)) {
                         ctx.error(DiagKind::invalid_argument_value, ctx.arg("s").range, "to_number: " + *why);
                         return Type::error();
                       }
                     return Type::tensor(dt, t->shape);
                   }));
}

}  // namespace pipec
