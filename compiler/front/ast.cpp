#include "compiler/front/ast.h"

namespace pipec {

const char* unary_op_spelling(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg: return "-";
    case UnaryOp::Plus: return "+";
    case UnaryOp::Not: return "!";
    case UnaryOp::BitNot: return "~";
  }
  return "?";
}

const char* binary_op_spelling(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "+";
    case BinaryOp::Sub: return "-";
    case BinaryOp::Mul: return "*";
    case BinaryOp::Div: return "/";
    case BinaryOp::FloorDiv: return "//";
    case BinaryOp::Mod: return "%";
    case BinaryOp::Pow: return "**";
    case BinaryOp::Eq: return "==";
    case BinaryOp::Ne: return "!=";
    case BinaryOp::Lt: return "<";
    case BinaryOp::Le: return "<=";
    case BinaryOp::Gt: return ">";
    case BinaryOp::Ge: return ">=";
    case BinaryOp::And: return "&&";
    case BinaryOp::Or: return "||";
    case BinaryOp::BitAnd: return "&";
    case BinaryOp::BitXor: return "^";
    case BinaryOp::Shl: return "<<";
    case BinaryOp::Shr: return ">>";
  }
  return "?";
}

// Mirrors the order of the `expr` rule in grammar/Pipe.g4 (higher binds tighter).
int binary_op_precedence(BinaryOp op) {
  switch (op) {
    case BinaryOp::Pow: return 10;
    case BinaryOp::Mul:
    case BinaryOp::Div:
    case BinaryOp::FloorDiv:
    case BinaryOp::Mod: return 8;
    case BinaryOp::Add:
    case BinaryOp::Sub: return 7;
    case BinaryOp::Shl:
    case BinaryOp::Shr: return 6;
    case BinaryOp::BitAnd:
    case BinaryOp::BitXor: return 5;
    case BinaryOp::Eq:
    case BinaryOp::Ne:
    case BinaryOp::Lt:
    case BinaryOp::Le:
    case BinaryOp::Gt:
    case BinaryOp::Ge: return 4;
    case BinaryOp::And: return 3;
    case BinaryOp::Or: return 2;
  }
  return 0;
}

bool is_comparison(BinaryOp op) { return binary_op_precedence(op) == binary_op_precedence(BinaryOp::Eq); }

const char* decl_kind_name(DeclKind k) {
  switch (k) {
    case DeclKind::Import: return "import";
    case DeclKind::Const: return "const";
    case DeclKind::Fn: return "fn";
    case DeclKind::Source: return "source";
    case DeclKind::Pipeline: return "pipeline";
    case DeclKind::Model: return "model";
    case DeclKind::Train: return "train";
  }
  return "?";
}

}  // namespace pipec
