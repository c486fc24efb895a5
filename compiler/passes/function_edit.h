// Editing helpers for expression functions (the SSA bodies of maps and filters) that several passes
// share: removing what no result needs, and appending one function to another.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/plan/expr_function.h"

namespace pipec {

/// Removes every instruction no result needs (parameters too), renumbering operands and results so
/// ids stay dense and in order. Returns whether anything was removed.
bool remove_unused_instrs(ExprFunction& fn);

/// Points every use of %from (operands and results) at %to, which must be defined before every use.
void replace_uses(ExprFunction& fn, int from, int to);

/// Appends the body of `g` to `into`, binding each of g's parameters to the id `bind(field)` returns
/// (an instruction of `into`). Parameters come first in a function, so new parameters `g` needs are
/// not allowed: `bind` must resolve every one. Returns, per instruction of g, its id in `into`.
std::vector<int> append_function(ExprFunction& into, const ExprFunction& g,
                                 const std::function<int(const std::string&)>& bind);

/// The field a parameter reads. When the element has one field, the interpreter lets a parameter name
/// it by any name (a lambda over a single-field element names it by its own parameter): `fields`
/// resolves that the same way. Returns the index in `fields`, or -1.
int param_field_index(const Instr& param, const std::vector<std::string>& fields);

/// The function that computes f, then g on f's results: each parameter of g reads f's result of its
/// field. Its results are g's; f's keep their ids (f's body comes first, unchanged).
std::shared_ptr<ExprFunction> compose_functions(const ExprFunction& f, const ExprFunction& g);

/// True when two constant values are the same (kind, dtype and payload, lists element by element).
bool same_value(const Value& a, const Value& b);

}  // namespace pipec
