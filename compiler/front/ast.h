// The abstract syntax tree of a .pipe file.
//
// Every node keeps its source range. Semantic analysis annotates expressions in place (`Expr::type`,
// `Expr::constant`, `NameExpr::target`) instead of building a parallel tree, so the language server can
// answer "what is the type of the thing under the cursor" from the AST alone.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/front/source.h"
#include "runtime/plan/type.h"
#include "runtime/plan/value.h"

namespace pipec {

struct Builtin;  // compiler/sema/builtins.h: the registry entry a name resolved to
struct Decl;
struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

// ---------------------------------------------------------------------------------------------------
// Types as written: f32, u8[1552], i64[?], bytes[194], f32[N, 3]

struct DimSyntax {
  enum Kind { Known, Unknown, Named } kind = Known;
  int64_t value = 0;  // Known
  std::string name;   // Named (a const)
  SourceRange range;
};

struct TypeSyntax {
  std::string name;  // dtype spelling
  bool has_dims = false;
  std::vector<DimSyntax> dims;
  SourceRange range;
};

// ---------------------------------------------------------------------------------------------------
// Expressions

enum class ExprKind {
  IntLit,
  FloatLit,
  StringLit,
  BoolLit,
  List,
  Record,
  Block,
  Name,
  Call,
  Index,
  Member,
  Unary,
  Binary,
  Pipe,
  Lambda,
};

enum class UnaryOp { Neg, Plus, Not, BitNot };
enum class BinaryOp {
  Add,
  Sub,
  Mul,
  Div,
  FloorDiv,
  Mod,
  Pow,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  And,
  Or,
  BitAnd,
  BitXor,
  Shl,
  Shr,
};

const char* unary_op_spelling(UnaryOp op);
const char* binary_op_spelling(BinaryOp op);
/// Binding strength used by the formatter to decide where parentheses are needed (higher binds tighter).
int binary_op_precedence(BinaryOp op);
/// `==` `!=` `<` `<=` `>` `>=`: they give bool and do not chain.
bool is_comparison(BinaryOp op);

struct Expr {
  explicit Expr(ExprKind k) : kind(k) {}
  virtual ~Expr() = default;
  ExprKind kind;
  SourceRange range;

  // Filled by semantic analysis.
  Type type;                      // Type::error() until checked
  std::optional<Value> constant;  // set when the expression is a compile-time constant

  template <class T>
  T* as() {
    return static_cast<T*>(this);
  }
  template <class T>
  const T* as() const {
    return static_cast<const T*>(this);
  }
};

struct IntLitExpr : Expr {
  IntLitExpr() : Expr(ExprKind::IntLit) {}
  int64_t value = 0;
  std::string spelling;  // as written ("10_000"), kept by the formatter
};

struct FloatLitExpr : Expr {
  FloatLitExpr() : Expr(ExprKind::FloatLit) {}
  double value = 0;
  std::string spelling;
};

struct StringLitExpr : Expr {
  StringLitExpr() : Expr(ExprKind::StringLit) {}
  std::string value;     // unescaped
  std::string spelling;  // with quotes and escapes
};

struct BoolLitExpr : Expr {
  BoolLitExpr() : Expr(ExprKind::BoolLit) {}
  bool value = false;
};

struct ListExpr : Expr {
  ListExpr() : Expr(ExprKind::List) {}
  std::vector<ExprPtr> items;
};

struct RecordFieldSyntax {
  std::string name;
  SourceRange name_range;
  ExprPtr value;  // null for the shorthand `{ board }`, meaning `{ board: board }`
  // Filled by sema for the shorthand form: the binding the name refers to.
  const struct Binding* shorthand_target = nullptr;
};

struct RecordExpr : Expr {
  RecordExpr() : Expr(ExprKind::Record) {}
  std::vector<RecordFieldSyntax> fields;
};

/// A local binding `name = expr` in a block.
struct Stmt {
  std::string name;
  SourceRange name_range;
  ExprPtr value;
  SourceRange range;
};

struct BlockExpr : Expr {
  BlockExpr() : Expr(ExprKind::Block) {}
  std::vector<Stmt> stmts;
  ExprPtr result;
};

/// What a name refers to, filled by name resolution.
struct Binding {
  enum Kind { None, Local, Param, LambdaParam, Global, Builtin, Option } kind = None;
  std::string name;
  SourceRange def_range;                    // where it is defined (invalid for builtins)
  const Decl* decl = nullptr;               // Global
  const Stmt* stmt = nullptr;               // Local
  const pipec::Builtin* builtin = nullptr;  // Builtin: the one the checker chose by context (null for a cast)
};

struct NameExpr : Expr {
  NameExpr() : Expr(ExprKind::Name) {}
  std::string name;
  Binding target;
};

struct Arg {
  std::string name;  // empty for positional
  SourceRange name_range;
  ExprPtr value;
};

struct CallExpr : Expr {
  CallExpr() : Expr(ExprKind::Call) {}
  ExprPtr callee;
  std::vector<Arg> args;
  SourceRange args_range;  // from '(' to ')'
};

struct IndexItem {
  enum Kind { Single, Slice, Ellipsis } kind = Single;
  ExprPtr value;              // Single
  ExprPtr start, stop, step;  // Slice (each may be null)
  SourceRange range;
};

struct IndexExpr : Expr {
  IndexExpr() : Expr(ExprKind::Index) {}
  ExprPtr base;
  std::vector<IndexItem> items;
};

struct MemberExpr : Expr {
  MemberExpr() : Expr(ExprKind::Member) {}
  ExprPtr base;
  std::string member;
  SourceRange member_range;
};

struct UnaryExpr : Expr {
  UnaryExpr() : Expr(ExprKind::Unary) {}
  UnaryOp op = UnaryOp::Neg;
  ExprPtr operand;
};

struct BinaryExpr : Expr {
  BinaryExpr() : Expr(ExprKind::Binary) {}
  BinaryOp op = BinaryOp::Add;
  SourceRange op_range;
  ExprPtr lhs, rhs;
  // Written inside parentheses, which the tree otherwise drops: `(a < b) == c` compares a bool, while
  // `a < b == c` is a chain of comparisons, which the checker refuses (`chained_comparison`).
  bool parenthesized = false;
};

/// `lhs | rhs`: apply stage, layer or function `rhs` to `lhs`.
struct PipeExpr : Expr {
  PipeExpr() : Expr(ExprKind::Pipe) {}
  ExprPtr lhs, rhs;
};

struct LambdaExpr : Expr {
  LambdaExpr() : Expr(ExprKind::Lambda) {}
  std::vector<std::string> params;
  std::vector<SourceRange> param_ranges;
  bool parenthesized = false;
  ExprPtr body;
  // Filled by sema: the type each parameter was bound to.
  std::vector<Type> param_types;
};

// ---------------------------------------------------------------------------------------------------
// Declarations

enum class DeclKind { Import, Const, Fn, Source, Pipeline, Model, Train };

const char* decl_kind_name(DeclKind k);

struct Param {
  std::string name;
  SourceRange name_range;
  TypeSyntax type;
};

struct SchemaField {
  std::string name;
  SourceRange name_range;
  TypeSyntax type;
  ExprPtr default_value;  // may be null
  SourceRange range;
};

struct TrainEntry {
  std::string key;
  SourceRange key_range;
  ExprPtr value;
};

struct Decl {
  DeclKind kind;
  std::string name;  // empty for imports
  SourceRange name_range;
  SourceRange range;  // the whole declaration
  std::string doc;    // comment lines directly above the declaration

  // Import
  std::string import_path;        // as written
  bool import_is_module = false;  // `import chess` (stdlib) vs `import "file.pipe"`
  std::string import_resolved;    // filled by the loader
  // Const
  std::optional<TypeSyntax> declared_type;
  // Fn and Model
  std::vector<Param> params;
  std::optional<TypeSyntax> result_type;
  // Const, Fn (body), Source (the call), Pipeline (the chain), Model (block)
  ExprPtr value;
  // Source
  bool has_schema = false;
  std::vector<SchemaField> schema;
  // Train
  std::vector<TrainEntry> entries;

  /// The parser reported an error inside this declaration (its AST is partial): sema still types it, for
  /// the language server, but reports nothing about it, since such reports would only echo the syntax error.
  bool syntax_error = false;

  // Filled by sema.
  Type type;
};

/// One parsed file. Comments are kept (with their ranges) for the formatter.
struct Comment {
  SourceRange range;
  std::string text;       // including '#'
  bool own_line = false;  // nothing but whitespace before it on its line
};

struct Module {
  uint32_t file = 0;
  std::vector<std::unique_ptr<Decl>> decls;
  std::vector<Comment> comments;
};

}  // namespace pipec
