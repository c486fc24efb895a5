// Semantic analysis: resolves names, evaluates constants and types every expression and declaration
// of a loaded program, annotating the AST in place. Entry point: check_program().
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/front/ast.h"
#include "compiler/sema/call_context.h"
#include "compiler/sema/program.h"

namespace pipec {

/// Checks every declaration of `program` (already loaded and parsed).
void check_program(Program& program, const CheckOptions& options);

/// Where an expression sits: decides which builtins a name means (a stage after `|` in a pipeline,
/// a layer in a model, an op in a map body) and which names are in scope.
enum class CheckContext { Const, Fn, Source, Pipeline, MapBody, Model, Train, Format };

class Checker {
 public:
  Checker(Program& program, const CheckOptions& options);
  void run();

  Type check(Expr& e);
  Type check_lambda(LambdaExpr& lambda, const std::vector<Type>& param_types);
  /// A written type (`f32[8, 8, 24]`) as a Type; reports unknown dtypes and dimension names.
  Type resolve_type(const TypeSyntax& t);
  Diagnostics& diags() { return program_.diags; }
  Program& program() { return program_; }
  CheckContext context() const { return ctx_; }

 private:
  struct Local {
    Binding binding;
    Type type;
    std::optional<Value> value;
    bool used = false;
  };
  struct Scope {
    std::map<std::string, Local> names;
  };
  enum class State { Unchecked, InProgress, Done };

  void check_decl(const Decl& decl);
  void check_const(Decl& d);
  void check_const_value(Decl& d);
  /// Pairs each -D override with the const it names; reports the ones that name none.
  void match_const_overrides();
  /// Checks the -D value of `d` against d's type and makes it d's value.
  void apply_const_override(Decl& d, const ParsedOverride& o);
  void check_fn(Decl& d);
  void check_source(Decl& d);
  void check_pipeline(Decl& d);
  void check_model(Decl& d);
  void check_train(Decl& d);
  void warn_unused_globals();

  Type check_name(NameExpr& e);
  Type check_member(MemberExpr& e);
  Type check_index(IndexExpr& e);
  Type check_unary(UnaryExpr& e);
  Type check_binary(BinaryExpr& e);
  Type check_list(ListExpr& e);
  Type check_record(RecordExpr& e);
  Type check_block(BlockExpr& e);
  Type check_call(CallExpr& e);
  Type check_pipe(PipeExpr& e);
  Type apply(Expr& callee_expr, CallExpr* call, Expr* piped, const Type* piped_type, SourceRange range);
  Type call_builtin(const Builtin& b, CallExpr* call, Expr* piped, const Type* piped_type, SourceRange range);
  Type call_fn(const Decl& fn, CallExpr* call, Expr* piped, const Type* piped_type, SourceRange range);
  Type call_model(const Decl& model, CallExpr* call, SourceRange range);
  Type call_cast(DType to, CallExpr* call, Expr* piped, const Type* piped_type, SourceRange range);
  bool bind_args(const Builtin& b, CallExpr* call, Expr* piped, const Type* piped_type, CallContext& ctx);
  const Builtin* lookup_callable(const std::string& name, bool after_pipe, const Type* piped_type);
  /// Checks the arguments of a call whose callee is unknown or wrong, for their own mistakes.
  void check_unbound_args(CallExpr* call);

  Local* lookup_local(const std::string& name);
  void push_scope() { scopes_.emplace_back(); }
  void pop_scope(bool warn_unused);
  Type global_type(const Decl& d, SourceRange use);
  std::vector<std::string> visible_names();

  Program& program_;
  const CheckOptions& options_;
  std::vector<Scope> scopes_;
  std::map<const Decl*, State> state_;
  std::map<const Decl*, bool> used_;
  CheckContext ctx_ = CheckContext::Const;
  const Decl* current_decl_ = nullptr;
  /// Declarations being checked, outermost first (for the chain in recursive_definition).
  std::vector<const Decl*> in_progress_;
  /// The -D override of each overridden const.
  std::map<const Decl*, const ParsedOverride*> overrides_;
  /// The data element a train block's names refer to (`model = net(board, flags)`).
  const ElementInfo* train_element_ = nullptr;

  friend struct CallContext;
};

}  // namespace pipec
