// Shared pieces of builtin type rules (internal to compiler/sema/builtins_*.cpp).
#pragma once

#include "compiler/sema/call_context.h"
#include "compiler/sema/checker.h"

namespace pipec {

ParamSpec req(std::string name);
ParamSpec opt(std::string name, std::string default_text, std::vector<std::string> options = {});
ParamSpec rest(std::string name);
ParamSpec tensor_list(std::string name);
ParamSpec dataset_list(std::string name);

/// Element-wise result of two tensor arguments (promotion and broadcasting, with diagnostics).
std::optional<Type> elementwise2(CallContext& ctx, std::string_view a, std::string_view b);
/// A numeric (not bytes) tensor argument.
std::optional<Type> numeric_arg(CallContext& ctx, std::string_view name);
/// Normalizes a possibly negative axis against `rank` (accepting rank itself when `allow_end`).
std::optional<int64_t> normalize_axis(CallContext& ctx, std::string_view name, int64_t axis, int64_t rank,
                                      bool allow_end = false);
/// A dataset type with `info` as its element.
Type dataset_of(ElementInfo info);
/// pack(length, fields, rows_open, truncate): compiler/sema/rule_pack.cpp.
Type rule_pack(CallContext& ctx);

}  // namespace pipec
