// Random, type-correct expressions for map and filter bodies.
//
// Every expression comes with the type the generator expects the checker to give it. Composite
// expressions are fully parenthesized, so the text never depends on operator precedence.
#pragma once

#include <string>
#include <vector>

#include "tests/difftest/gen_types.h"

namespace pipec::difftest {

struct GExpr {
  std::string text;
  GType type;
  // Made of literals only: the checker folds it, and reports what Python would raise (division by
  // zero, i64 overflow) as errors, so two constants never meet in a binary op.
  bool constant = false;
};

/// One bool-and-number mix (docs/language.md §6.3) written twice: `folded` from constants, which the
/// checker folds (compiler/sema/const_eval.cpp), and `computed` from the same values computed at run
/// time, with the same weak literals. The harness checks that the two give the same bits, so the
/// constant folder agrees with the interpreter, and through the variants with the JIT and the CUDA
/// printer.
struct GTwins {
  std::string folded, computed;
  GType type;
};

/// A name visible in a body: `r.field` or a block binding.
struct GBinding {
  std::string ref;
  GType type;
};

class ExprGenerator {
 public:
  /// `batched`: the body runs on batches whose leading dimensions must survive, so only shape-
  /// preserving element-wise ops are used and every tensor-shaped leaf is one of `env`.
  ExprGenerator(Rng& rng, std::vector<GBinding> env, bool batched)
      : rng_(rng), env_(std::move(env)), batched_(batched) {}

  void add_binding(GBinding b) { env_.push_back(std::move(b)); }

  /// An expression of any type (any shape, when not batched).
  GExpr any(int depth);
  /// An expression of exactly `shape`.
  GExpr shaped(const std::vector<int64_t>& shape, int depth);
  /// A scalar bool (a filter predicate).
  GExpr predicate(int depth);
  /// A scalar mix of a bool or a number with another, folded and computed (not in a batched body).
  GTwins mix_twins();

 private:
  GExpr leaf(const std::vector<int64_t>& shape);
  GExpr scalar_leaf();
  GExpr unary(GExpr x);
  GExpr unary_of(const GExpr& x);
  GExpr binary(const std::vector<int64_t>& shape, int depth);
  GExpr shape_op(GExpr x, int depth);
  GExpr shape_op_of(const GExpr& x, int depth);
  GExpr constant_tensor(const std::vector<int64_t>& shape);
  GExpr random_op(const std::vector<int64_t>& shape);
  std::string runtime_scalar();
  GExpr cast(GExpr x, DType to);
  std::string literal_int();
  std::string literal_float();
  struct MixOperand {
    std::string folded, computed;
    DType dtype;
    bool weak;
  };
  MixOperand mix_operand(const std::string& zero);

  Rng& rng_;
  std::vector<GBinding> env_;
  bool batched_;
};

}  // namespace pipec::difftest
