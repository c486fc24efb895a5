// Semantic analysis: resolves names, evaluates constants and types every expression and declaration
// of a loaded program, annotating the AST in place. Entry point: check_program().
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/front/ast.h"
#include "compiler/sema/call_context.h"
#include "compiler/sema/name_rules.h"
#include "compiler/sema/program.h"

namespace pipec {

/// Checks every declaration of `program` (already loaded and parsed).
void check_program(Program& program, const CheckOptions& options);

class Checker {
 public:
  Checker(Program& program, const CheckOptions& options);
  void run();

  Type check(Expr& e);
  Type check_lambda(LambdaExpr& lambda, const std::vector<Type>& param_types);
  /// flat_map's and interleave's function of one element (`r => text_lines(r.path) | take(3)`): its body
  /// is a pipeline, whose head source may take the element's fields as arguments
  /// (check_dataset_lambda.cpp). Returns the body's type.
  Type check_dataset_lambda(LambdaExpr& lambda, const Type& element);
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
  /// One train entry's value, with its head known to the name probe and, for the entries that take a
  /// builtin of one family (`loss = mse(...)`), a check that it is one of that family.
  Type check_train_entry(TrainEntry& e);
  void check_validation(const std::map<std::string, TrainEntry*>& entries, const ElementInfo& data,
                        const Type& model_out, const std::string& loss_name, bool class_labels);
  void warn_unused_globals();

  Type check_name(NameExpr& e);
  Type check_member(MemberExpr& e);
  Type check_index(IndexExpr& e);
  Type check_unary(UnaryExpr& e);
  Type check_binary(BinaryExpr& e);
  Type report_chained_comparison(BinaryExpr& e);
  Type check_list(ListExpr& e);
  Type check_record(RecordExpr& e);
  Type check_block(BlockExpr& e);
  Type check_call(CallExpr& e);
  Type check_pipe(PipeExpr& e);
  Type apply(Expr& callee_expr, CallExpr* call, Expr* piped, const Type* piped_type, SourceRange range);
  Type call_builtin(const Builtin& b, CallExpr* call, Expr* piped, const Type* piped_type, SourceRange range);
  Type call_fn(const Decl& fn, CallExpr* call, Expr* piped, const Type* piped_type, SourceRange range);
  Type call_model(const Decl& model, CallExpr* call, SourceRange range);
  Type apply_block(const Decl& model, CallExpr* call, Expr* piped, const Type* piped_type, SourceRange range);
  Type call_cast(DType to, CallExpr* call, Expr* piped, const Type* piped_type, SourceRange range);
  bool bind_args(const Builtin& b, CallExpr* call, Expr* piped, const Type* piped_type, CallContext& ctx);
  const Builtin* lookup_callable(const std::string& name, const Type* piped_type);
  /// Checks the arguments of a call whose callee is unknown or wrong, for their own mistakes.
  void check_unbound_args(CallExpr* call);
  /// Checks the function literals of a stage call whose rule did not run (a misspelt stage, wrong
  /// arguments) against the element, for their own mistakes and so that their types are known.
  void check_unchecked_lambdas(CallExpr* call, const Type& input);
  /// Whether a fn takes `got` as its parameter of type `want`; the mismatch when it does not.
  enum class ParamFit { Fits, Ragged, Mismatch };
  static ParamFit fit_param(const Type& want, const Type& got);

  // The name probe (CheckOptions::name_probe, check_names.cpp).
  bool at_probe(const Expr& e) const;
  /// Records what is known at the probed name: `callee` when it is called or applied, `piped_type` the
  /// input of `x | name`, `options` the option words its argument position accepts.
  void record_name_site(const Expr& e, bool callee, const Type* piped_type,
                        const std::vector<std::string>* options = nullptr);
  std::vector<NameCandidate> name_candidates(const Expr& e, bool callee, const Type* piped_type);
  /// The leftmost name of `x | a | b(...)` and of `f(...)`: where a pipeline's dataset or a train
  /// entry's builtin is named.
  static const Expr* head_name(const Expr* e);

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
  /// The name at the head of the value being checked (head_name) and what it must name there: a dataset
  /// (a source or pipeline declaration, `entry_` null) or what the train entry `entry_` takes.
  const Expr* head_ = nullptr;
  const TrainEntrySpec* entry_ = nullptr;

  /// While a dataset function's body is checked (check_dataset_lambda): the scope of its parameter,
  /// and the reads of it the body may make, the arguments `r.path` of its head source that the source
  /// takes per element (CallContext::const_int and const_string accept them).
  struct ElementArgs {
    size_t scope = 0;
    std::string param;
    std::set<const Expr*> args;       // `r.path`
    std::set<const NameExpr*> names;  // its `r`
    /// `r` of `r.n` given to an argument of the head source that must be a constant: "`record_bytes` of
    /// fixed_length_records", for the message.
    std::map<const NameExpr*, std::string> constant_args;
    ElementArgs* outer = nullptr;  // the dataset function this one is inside, if any
  };
  ElementArgs* element_args_ = nullptr;
  /// Whether name `e` is the parameter of the dataset function being checked, read where the body may
  /// not read it; reports element_read when so.
  bool misplaced_element_read(const NameExpr& e);

  friend struct CallContext;
};

}  // namespace pipec
