// Gradients of expression-IR functions (the element-wise parts of a model): the vector-Jacobian
// product of an ExprFunction, itself an ExprFunction, built instruction by instruction in reverse with
// one rule per op (expr_gradients.cpp).
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/plan/expr_function.h"

namespace pipec {

/// An instruction on the gradient's path whose op has no gradient rule.
class NotDifferentiable : public std::runtime_error {
 public:
  NotDifferentiable(int instr, OpKind op, std::string why) : std::runtime_error(std::move(why)), instr(instr), op(op) {}
  int instr;
  OpKind op;
};

/// The VJP of `fn`. Its parameters are fn's parameters (same fields, same order) followed by `dy<k>` for
/// every result k with has_dy[k]; its results are `d<field>` for every parameter with wants[i], in
/// order. The forward instructions are recomputed inside (a later pass may share them with the
/// forward). Throws NotDifferentiable when the gradient would pass an op without a rule.
std::shared_ptr<ExprFunction> build_vjp(const ExprFunction& fn, const std::vector<bool>& wants,
                                        const std::vector<bool>& has_dy);

/// True when `op` has a gradient rule (ops whose result is not a float never carry one and need none).
bool has_expr_gradient_rule(OpKind op);

}  // namespace pipec
