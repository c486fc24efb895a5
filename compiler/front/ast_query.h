// Questions about positions in the AST, for the language server and for diagnostics.
#pragma once

#include <functional>
#include <vector>

#include "compiler/front/ast.h"

namespace pipec {

/// Calls `fn` on every expression under `decl` (pre-order), including lambda and block bodies, call
/// arguments, schema defaults and train entries.
void walk_exprs(const Decl& decl, const std::function<void(const Expr&)>& fn);

/// The innermost expression whose range contains `offset` in `module`, or null.
const Expr* expr_at(const Module& module, uint32_t offset);

/// The top-level declaration whose range contains `offset`, or null.
const Decl* decl_at(const Module& module, uint32_t offset);

}  // namespace pipec
