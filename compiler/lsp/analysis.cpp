#include "compiler/lsp/analysis.h"

#include <algorithm>
#include <map>
#include <set>

#include "compiler/front/ast_query.h"
#include "compiler/sema/builtins.h"
#include "runtime/plan/type.h"

namespace pipec::lsp {

namespace {

bool contains(const SourceRange& r, uint32_t offset) { return r.valid() && r.contains(offset); }

bool is_id_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

std::string code_block(const std::string& code) { return "```pipe\n" + code + "\n```"; }

/// The expressions of `decl` whose range contains `offset`, outermost first. Sibling ranges do not
/// overlap, so this is the chain of ancestors of the innermost one.
std::vector<const Expr*> path_at(const Decl& decl, uint32_t offset) {
  std::vector<const Expr*> path;
  walk_exprs(decl, [&](const Expr& e) {
    if (contains(e.range, offset)) path.push_back(&e);
  });
  return path;
}

std::string describe_type(const Type& t) {
  if (t.kind == TypeKind::Dataset && t.element) return "dataset of " + element_to_string(*t.element);
  return type_to_string(t);
}

/// The element of a dataset type, printed; "" for anything else.
std::string element_of(const Type& t) {
  if (t.kind == TypeKind::Dataset && t.element) return element_to_string(*t.element);
  return "";
}

std::string with_doc(std::string md, const std::string& doc) {
  if (!doc.empty()) md += "\n\n" + doc;
  return md;
}

std::string describe_decl(const Decl& d) {
  std::string code;
  std::string extra;
  switch (d.kind) {
    case DeclKind::Import:
      code = "import " + (d.import_is_module ? d.import_path : "\"" + d.import_path + "\"");
      if (!d.import_resolved.empty()) extra = "Resolves to `" + d.import_resolved + "`.";
      break;
    case DeclKind::Const:
      code = "const " + d.name;
      if (!d.type.is_error()) code += ": " + type_to_string(d.type);
      if (d.value && d.value->constant) {
        std::string v = d.value->constant->to_string();
        if (v.size() <= 200) code += " = " + v;
      }
      break;
    case DeclKind::Fn:
    case DeclKind::Model:
      code = decl_signature(d);
      break;
    case DeclKind::Source:
    case DeclKind::Pipeline: {
      code = std::string(decl_kind_name(d.kind)) + " " + d.name;
      std::string el = element_of(d.type);
      if (!el.empty()) extra = "element: `" + el + "`";
      break;
    }
    case DeclKind::Train:
      code = "train " + d.name;
      break;
  }
  std::string md = code_block(code);
  if (!extra.empty()) md += "\n\n" + extra;
  return with_doc(md, d.doc);
}

std::string describe_builtin(const Builtin& b) {
  return with_doc(code_block(b.signature()) + "\n\n*" + builtin_kind_name(b.kind) + "*", b.doc);
}

/// The PipeExpr that applies `e` as its stage (`x | e` or `x | e(...)`), when `e` is such a stage name.
const PipeExpr* pipe_applying(const std::vector<const Expr*>& path, size_t index) {
  const Expr* e = path[index];
  for (size_t k = index; k-- > 0;) {
    const Expr* p = path[k];
    if (p->kind == ExprKind::Call && p->as<CallExpr>()->callee.get() == e) {
      e = p;
      continue;
    }
    if (p->kind == ExprKind::Pipe && p->as<PipeExpr>()->rhs.get() == e) return p->as<PipeExpr>();
    return nullptr;
  }
  return nullptr;
}

bool inside_lambda(const std::vector<const Expr*>& path) {
  for (const Expr* e : path)
    if (e->kind == ExprKind::Lambda) return true;
  return false;
}

/// Which builtin a name means where it is used, mirroring the checker's choice by context.
const Builtin* builtin_for_use(const std::string& name, const Decl& d, const std::vector<const Expr*>& path,
                               size_t index) {
  bool staged = pipe_applying(path, index) != nullptr;
  const Builtin* b = nullptr;
  if (d.kind == DeclKind::Model) {
    b = find_builtin(name, {BuiltinKind::Layer, BuiltinKind::Op});
  } else if (d.kind == DeclKind::Train) {
    b = find_builtin(name, {BuiltinKind::Loss, BuiltinKind::Optimizer, BuiltinKind::Strategy, BuiltinKind::Format});
  } else if (inside_lambda(path) || d.kind == DeclKind::Fn || d.kind == DeclKind::Const) {
    b = find_builtin(name, {BuiltinKind::Op});
  } else if (staged) {
    b = find_builtin(name, {BuiltinKind::Stage, BuiltinKind::Sink});
  } else {
    b = find_builtin(name, {BuiltinKind::Source, BuiltinKind::Format, BuiltinKind::Op});
  }
  if (b) return b;
  for (const Builtin& any : all_builtins())
    if (any.name == name) return &any;
  return nullptr;
}

/// The definition a binding points at (for globals: the declaration's name).
SourceRange binding_def(const Binding& b) {
  if (b.kind == Binding::Global && b.decl) return b.decl->name_range;
  if (b.kind == Binding::Local && b.stmt) return b.stmt->name_range;
  return b.def_range;
}

bool same_place(const SourceRange& a, const SourceRange& b) {
  return a.valid() && b.valid() && a.file == b.file && a.begin == b.begin;
}

const Decl* find_global(const Program& program, const std::string& name) {
  auto it = program.globals.find(name);
  return it == program.globals.end() ? nullptr : it->second;
}

/// The record literal a map body produces: `r => { ... }` or `r => { x = ...; { a, b } }`.
const RecordExpr* result_record(const Expr* body) {
  for (int guard = 0; body && guard < 64; ++guard) {
    if (body->kind == ExprKind::Record) return body->as<RecordExpr>();
    if (body->kind == ExprKind::Block) {
      body = body->as<BlockExpr>()->result.get();
      continue;
    }
    return nullptr;
  }
  return nullptr;
}

/// Where field `field` of the elements produced by `producer` (a dataset expression) is defined.
std::optional<SourceRange> field_source(const Program& program, const Expr* producer, const std::string& field,
                                        int depth) {
  while (producer && depth < 32) {
    ++depth;
    if (producer->kind == ExprKind::Pipe) {
      const auto* p = producer->as<PipeExpr>();
      const Expr* stage = p->rhs.get();
      if (stage && stage->kind == ExprKind::Call) {
        const auto* call = stage->as<CallExpr>();
        const Expr* callee = call->callee.get();
        if (callee && callee->kind == ExprKind::Name && callee->as<NameExpr>()->name == "map") {
          // map replaces the element: the field is defined by the record the lambda returns.
          for (const Arg& a : call->args) {
            if (!a.value || a.value->kind != ExprKind::Lambda) continue;
            if (const RecordExpr* rec = result_record(a.value->as<LambdaExpr>()->body.get()))
              for (const auto& f : rec->fields)
                if (f.name == field) return f.name_range;
          }
          return std::nullopt;
        }
      }
      producer = p->lhs.get();  // other stages keep the fields of their input
      continue;
    }
    if (producer->kind == ExprKind::Name) {
      const auto* n = producer->as<NameExpr>();
      const Decl* d = n->target.kind == Binding::Global ? n->target.decl : find_global(program, n->name);
      if (!d) return std::nullopt;
      if (d->kind == DeclKind::Source) {
        for (const auto& f : d->schema)
          if (f.name == field) return f.name_range;
        return std::nullopt;
      }
      if (d->kind == DeclKind::Pipeline) {
        producer = d->value.get();
        continue;
      }
      return std::nullopt;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

/// The definition of the field named by `member` (`r.board`): a schema field of the source, or the field
/// of the record literal that an earlier map returns.
std::optional<SourceRange> field_definition(const Program& program, const std::vector<const Expr*>& path,
                                            const MemberExpr& member) {
  const Expr* base = member.base.get();
  if (!base || base->kind != ExprKind::Name) return std::nullopt;
  const auto* name = base->as<NameExpr>();
  if (name->target.kind == Binding::Local && name->target.stmt && name->target.stmt->value) {
    if (const RecordExpr* rec = result_record(name->target.stmt->value.get()))
      for (const auto& f : rec->fields)
        if (f.name == member.member) return f.name_range;
    return std::nullopt;
  }
  if (name->target.kind != Binding::LambdaParam) return std::nullopt;
  // Find the lambda that binds the name, the stage call that takes it and the pipe that applies the stage.
  for (size_t k = path.size(); k-- > 0;) {
    if (path[k]->kind != ExprKind::Lambda) continue;
    const auto* lambda = path[k]->as<LambdaExpr>();
    bool binds = false;
    for (const auto& r : lambda->param_ranges)
      if (same_place(r, name->target.def_range)) binds = true;
    if (!binds) continue;
    if (k < 2 || path[k - 1]->kind != ExprKind::Call) return std::nullopt;
    if (path[k - 2]->kind != ExprKind::Pipe || path[k - 2]->as<PipeExpr>()->rhs.get() != path[k - 1])
      return std::nullopt;
    return field_source(program, path[k - 2]->as<PipeExpr>()->lhs.get(), member.member, 0);
  }
  return std::nullopt;
}

/// The definition of the symbol at `offset` of the main module (for references): a declaration name,
/// parameter, binding or use of one of those.
std::optional<SourceRange> symbol_at(const Program& program, uint32_t offset) {
  const Module& m = program.main();
  const Decl* d = decl_at(m, offset);
  if (!d) return std::nullopt;
  if (contains(d->name_range, offset) && d->kind != DeclKind::Import) return d->name_range;
  for (const auto& p : d->params)
    if (contains(p.name_range, offset)) return p.name_range;
  for (const auto& f : d->schema)
    if (contains(f.name_range, offset)) return f.name_range;
  std::vector<const Expr*> path = path_at(*d, offset);
  if (path.empty()) return std::nullopt;
  const Expr* inner = path.back();
  switch (inner->kind) {
    case ExprKind::Member: {
      const auto* mem = inner->as<MemberExpr>();
      if (contains(mem->member_range, offset)) return field_definition(program, path, *mem);
      return std::nullopt;
    }
    case ExprKind::Name: {
      SourceRange def = binding_def(inner->as<NameExpr>()->target);
      if (def.valid()) return def;
      return std::nullopt;
    }
    case ExprKind::Lambda:
      for (const auto& r : inner->as<LambdaExpr>()->param_ranges)
        if (contains(r, offset)) return r;
      return std::nullopt;
    case ExprKind::Block:
      for (const auto& s : inner->as<BlockExpr>()->stmts)
        if (contains(s.name_range, offset)) return s.name_range;
      return std::nullopt;
    case ExprKind::Record:
      for (const auto& f : inner->as<RecordExpr>()->fields) {
        if (!contains(f.name_range, offset)) continue;
        if (f.value) return f.name_range;  // a field defined here
        if (f.shorthand_target) {
          SourceRange def = binding_def(*f.shorthand_target);
          if (def.valid()) return def;
        }
      }
      return std::nullopt;
    default: return std::nullopt;
  }
}

std::string dtype_list_word(DType t) { return std::string(dtype_name(t)); }

}  // namespace

// ---------------------------------------------------------------------------------------------------

std::string type_syntax_to_string(const TypeSyntax& t) {
  std::string s = t.name;
  if (t.has_dims) {
    s += '[';
    for (size_t i = 0; i < t.dims.size(); ++i) {
      if (i) s += ", ";
      const DimSyntax& d = t.dims[i];
      if (d.kind == DimSyntax::Known) s += std::to_string(d.value);
      else if (d.kind == DimSyntax::Unknown) s += '?';
      else s += d.name;
    }
    s += ']';
  }
  return s;
}

std::string decl_signature(const Decl& d) {
  std::string s = std::string(decl_kind_name(d.kind)) + " " + d.name + "(";
  for (size_t i = 0; i < d.params.size(); ++i) {
    if (i) s += ", ";
    s += d.params[i].name + ": " + type_syntax_to_string(d.params[i].type);
  }
  s += ")";
  if (d.result_type) s += " -> " + type_syntax_to_string(*d.result_type);
  else if (d.kind == DeclKind::Fn && d.value && !d.value->type.is_error()) s += " -> " + type_to_string(d.value->type);
  return s;
}

std::optional<HoverResult> hover_at(const Program& program, uint32_t offset) {
  if (program.modules.empty()) return std::nullopt;
  const Module& m = program.main();
  const Decl* d = decl_at(m, offset);
  if (!d) return std::nullopt;
  if (contains(d->name_range, offset)) return HoverResult{describe_decl(*d), d->name_range};
  for (const auto& p : d->params)
    if (contains(p.name_range, offset) || contains(p.type.range, offset))
      return HoverResult{code_block(p.name + ": " + type_syntax_to_string(p.type)), p.name_range};
  for (const auto& f : d->schema)
    if (contains(f.name_range, offset) || contains(f.type.range, offset))
      return HoverResult{code_block(f.name + ": " + type_syntax_to_string(f.type)), f.name_range};
  for (const auto& e : d->entries)
    if (contains(e.key_range, offset) && e.value)
      return HoverResult{code_block(e.key + ": " + describe_type(e.value->type)), e.key_range};

  std::vector<const Expr*> path = path_at(*d, offset);
  if (path.empty()) return std::nullopt;
  size_t index = path.size() - 1;
  const Expr* inner = path[index];
  switch (inner->kind) {
    case ExprKind::Lambda: {
      const auto* l = inner->as<LambdaExpr>();
      for (size_t i = 0; i < l->param_ranges.size(); ++i) {
        if (!contains(l->param_ranges[i], offset)) continue;
        std::string t = i < l->param_types.size() ? describe_type(l->param_types[i]) : "?";
        return HoverResult{code_block(l->params[i] + ": " + t), l->param_ranges[i]};
      }
      break;
    }
    case ExprKind::Block:
      for (const auto& s : inner->as<BlockExpr>()->stmts)
        if (contains(s.name_range, offset) && s.value)
          return HoverResult{code_block(s.name + ": " + describe_type(s.value->type)), s.name_range};
      break;
    case ExprKind::Record:
      for (const auto& f : inner->as<RecordExpr>()->fields) {
        if (!contains(f.name_range, offset)) continue;
        const Type* ft = inner->type.kind == TypeKind::Record ? inner->type.field(f.name) : nullptr;
        std::string t = ft ? describe_type(*ft) : f.value ? describe_type(f.value->type) : "?";
        return HoverResult{code_block(f.name + ": " + t), f.name_range};
      }
      break;
    case ExprKind::Member: {
      const auto* mem = inner->as<MemberExpr>();
      if (contains(mem->member_range, offset))
        return HoverResult{code_block(mem->member + ": " + describe_type(inner->type)), mem->member_range};
      break;
    }
    case ExprKind::Name: {
      const auto* n = inner->as<NameExpr>();
      if (n->name == "<error>") return std::nullopt;
      const Binding& b = n->target;
      if (b.kind == Binding::Global && b.decl) return HoverResult{describe_decl(*b.decl), inner->range};
      if (b.kind == Binding::Builtin || (b.kind == Binding::None && inner->type.kind == TypeKind::Function)) {
        if (const Builtin* bi = builtin_for_use(n->name, *d, path, index)) {
          std::string md = describe_builtin(*bi);
          if (const PipeExpr* p = pipe_applying(path, index)) {
            std::string el = element_of(p->type);
            if (!el.empty()) md += "\n\nelement after this stage: `" + el + "`";
          }
          return HoverResult{md, inner->range};
        }
      }
      if (b.kind == Binding::Option) return HoverResult{code_block("option " + n->name), inner->range};
      if (inner->type.is_error()) return std::nullopt;
      return HoverResult{code_block(n->name + ": " + describe_type(inner->type)), inner->range};
    }
    default: break;
  }
  if (inner->type.is_error()) return std::nullopt;
  return HoverResult{code_block(describe_type(inner->type)), inner->range};
}

std::vector<SourceRange> definition_at(const Program& program, uint32_t offset) {
  std::vector<SourceRange> out;
  if (program.modules.empty()) return out;
  const Module& m = program.main();
  const Decl* d = decl_at(m, offset);
  if (!d) return out;
  if (contains(d->name_range, offset)) {
    if (d->kind == DeclKind::Import) {
      uint32_t f = d->import_resolved.empty() ? 0 : program.sources.find(d->import_resolved);
      if (f) out.push_back({f, 0, 0});
    } else {
      out.push_back(d->name_range);
    }
    return out;
  }
  // Named dimensions in types refer to consts: f32[N, 3].
  auto dims_of = [&](const TypeSyntax& t) {
    for (const auto& dim : t.dims)
      if (dim.kind == DimSyntax::Named && contains(dim.range, offset))
        if (const Decl* g = find_global(program, dim.name)) out.push_back(g->name_range);
  };
  for (const auto& p : d->params) dims_of(p.type);
  for (const auto& f : d->schema) dims_of(f.type);
  if (d->declared_type) dims_of(*d->declared_type);
  if (d->result_type) dims_of(*d->result_type);
  if (!out.empty()) return out;

  std::vector<const Expr*> path = path_at(*d, offset);
  if (path.empty()) return out;
  const Expr* inner = path.back();
  if (inner->kind == ExprKind::Member) {
    const auto* mem = inner->as<MemberExpr>();
    if (contains(mem->member_range, offset)) {
      if (auto r = field_definition(program, path, *mem)) out.push_back(*r);
      return out;
    }
  }
  if (auto def = symbol_at(program, offset)) out.push_back(*def);
  return out;
}

std::vector<SourceRange> references_at(const Program& program, uint32_t offset, bool include_declaration) {
  std::vector<SourceRange> out;
  if (program.modules.empty()) return out;
  std::optional<SourceRange> def = symbol_at(program, offset);
  if (!def) return out;
  if (include_declaration) out.push_back(*def);
  std::string field_name;
  if (def->file != 0 && def->file <= program.sources.size() && def->end > def->begin) {
    const std::string& text = program.sources.file(def->file).text();
    if (def->end <= text.size()) field_name = text.substr(def->begin, def->end - def->begin);
  }
  const Decl* global = nullptr;
  for (const auto& [name, decl] : program.globals)
    if (same_place(decl->name_range, *def)) global = decl;
  for (const auto& module : program.modules) {
    for (const auto& decl : module->decls) {
      walk_exprs(*decl, [&](const Expr& e) {
        if (e.kind == ExprKind::Name) {
          if (same_place(binding_def(e.as<NameExpr>()->target), *def)) out.push_back(e.range);
        } else if (e.kind == ExprKind::Record) {
          for (const auto& f : e.as<RecordExpr>()->fields)
            if (!f.value && f.shorthand_target && same_place(binding_def(*f.shorthand_target), *def))
              out.push_back(f.name_range);
        }
      });
      // Field uses (`r.xyz`) whose definition is this schema or record field.
      if (!field_name.empty()) {
        walk_exprs(*decl, [&](const Expr& e) {
          if (e.kind != ExprKind::Member || e.as<MemberExpr>()->member != field_name) return;
          const auto* mem = e.as<MemberExpr>();
          std::vector<const Expr*> path = path_at(*decl, mem->member_range.begin);
          auto fd = field_definition(program, path, *mem);
          if (fd && same_place(*fd, *def)) out.push_back(mem->member_range);
        });
      }
      if (global && global->kind == DeclKind::Const) {
        auto dims = [&](const TypeSyntax& t) {
          for (const auto& dim : t.dims)
            if (dim.kind == DimSyntax::Named && dim.name == global->name) out.push_back(dim.range);
        };
        for (const auto& p : decl->params) dims(p.type);
        for (const auto& f : decl->schema) dims(f.type);
        if (decl->declared_type) dims(*decl->declared_type);
        if (decl->result_type) dims(*decl->result_type);
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const SourceRange& a, const SourceRange& b) {
    return std::tie(a.file, a.begin, a.end) < std::tie(b.file, b.begin, b.end);
  });
  out.erase(std::unique(out.begin(), out.end(),
                        [](const SourceRange& a, const SourceRange& b) {
                          return a.file == b.file && a.begin == b.begin && a.end == b.end;
                        }),
            out.end());
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Completion

namespace {

constexpr const char* kPlaceholder = "pipec_completion_placeholder";

void add_builtins(std::vector<CompletionEntry>& out, std::initializer_list<BuiltinKind> kinds) {
  std::set<std::string> seen;
  for (const Builtin& b : all_builtins()) {
    if (std::find(kinds.begin(), kinds.end(), b.kind) == kinds.end()) continue;
    if (!seen.insert(b.name).second) continue;
    out.push_back({b.name, CompletionKind::Function, b.signature(), b.doc});
  }
}

void add_fields(std::vector<CompletionEntry>& out, const Type& t) {
  const std::vector<Field>* fields = nullptr;
  if (t.kind == TypeKind::Record && t.fields) fields = t.fields.get();
  else if (t.kind == TypeKind::Dataset && t.element) fields = &t.element->fields;
  if (!fields) return;
  for (const Field& f : *fields)
    out.push_back({f.name, CompletionKind::Field, f.type ? type_to_string(*f.type) : "", ""});
}

/// The type of `base` in `base.<here>` by checking a copy of the text with a field name filled in.
bool member_completion(const std::string& path, const std::string& text, uint32_t member_begin, uint32_t offset,
                       std::vector<CompletionEntry>& out) {
  std::string patched = text.substr(0, member_begin) + kPlaceholder + text.substr(offset);
  auto program = check_text(path, std::move(patched));
  if (!program || program->modules.empty()) return false;
  const Module& m = program->main();
  const Decl* d = decl_at(m, member_begin);
  if (!d) return false;
  const MemberExpr* found = nullptr;
  walk_exprs(*d, [&](const Expr& e) {
    if (!found && e.kind == ExprKind::Member && e.as<MemberExpr>()->member_range.begin == member_begin)
      found = e.as<MemberExpr>();
  });
  if (!found || !found->base || found->base->type.is_error()) return false;
  size_t before = out.size();
  add_fields(out, found->base->type);
  return out.size() > before;
}

/// Fallback when the patched text does not check: the nearest lambda before `offset` with a parameter
/// called `base` whose type is known.
void member_completion_fallback(const Program& program, const std::string& base, uint32_t offset,
                                std::vector<CompletionEntry>& out) {
  const LambdaExpr* best = nullptr;
  size_t best_param = 0;
  for (const auto& decl : program.main().decls) {
    walk_exprs(*decl, [&](const Expr& e) {
      if (e.kind != ExprKind::Lambda) return;
      const auto* l = e.as<LambdaExpr>();
      if (l->range.begin > offset) return;
      for (size_t i = 0; i < l->params.size() && i < l->param_types.size(); ++i) {
        if (l->params[i] != base || l->param_types[i].is_error()) continue;
        if (!best || l->range.begin > best->range.begin) {
          best = l;
          best_param = i;
        }
      }
    });
  }
  if (best) add_fields(out, best->param_types[best_param]);
}

}  // namespace

std::vector<CompletionEntry> complete_at(const std::string& path, const std::string& text, uint32_t offset,
                                         const Program* current, const Program* last_good) {
  std::vector<CompletionEntry> out;
  offset = std::min<uint32_t>(offset, static_cast<uint32_t>(text.size()));
  uint32_t word_begin = offset;
  while (word_begin > 0 && is_id_char(text[word_begin - 1])) --word_begin;

  // `base.` + prefix: fields of base's record type.
  if (word_begin > 0 && text[word_begin - 1] == '.') {
    uint32_t base_end = word_begin - 1;
    uint32_t base_begin = base_end;
    while (base_begin > 0 && is_id_char(text[base_begin - 1])) --base_begin;
    std::string base = text.substr(base_begin, base_end - base_begin);
    if (base.empty() || !(std::isalpha(static_cast<unsigned char>(base[0])) || base[0] == '_')) return out;
    if (member_completion(path, text, word_begin, offset, out)) return out;
    for (const Program* p : {current, last_good}) {
      if (!p || p->modules.empty()) continue;
      member_completion_fallback(*p, base, offset, out);
      if (!out.empty()) break;
    }
    return out;
  }

  const Decl* decl = current && !current->modules.empty() ? decl_at(current->main(), word_begin) : nullptr;
  // A model or train block may be unfinished and so missing from the AST: look at the text too.
  auto enclosing_keyword = [&]() -> std::string {
    if (decl) return decl_kind_name(decl->kind);
    // The last line before the cursor that starts (in column 0) with a declaration keyword.
    size_t pos = word_begin;
    while (pos > 0) {
      size_t line_start = text.rfind('\n', pos - 1);
      line_start = line_start == std::string::npos ? 0 : line_start + 1;
      std::string_view line(text.data() + line_start, pos - line_start);
      for (const char* kw : {"import", "const", "fn", "source", "pipeline", "model", "train"}) {
        std::string_view k(kw);
        if (line.substr(0, k.size()) == k && line.size() > k.size() && (line[k.size()] == ' ' || line[k.size()] == '\t'))
          return kw;
      }
      if (line_start == 0) break;
      pos = line_start - 1;
    }
    return "";
  };

  // After `|` (not `||`): stages in pipelines, layers in models.
  uint32_t k = word_begin;
  while (k > 0 && (text[k - 1] == ' ' || text[k - 1] == '\t' || text[k - 1] == '\n' || text[k - 1] == '\r')) --k;
  if (k > 0 && text[k - 1] == '|' && !(k > 1 && text[k - 2] == '|')) {
    if (enclosing_keyword() == "model") {
      add_builtins(out, {BuiltinKind::Layer});
    } else {
      add_builtins(out, {BuiltinKind::Stage, BuiltinKind::Sink});
    }
    if (current)
      for (const auto& [name, d] : current->globals)
        if (d->kind == DeclKind::Fn) out.push_back({name, CompletionKind::Function, decl_signature(*d), d->doc});
    return out;
  }

  std::string kw = enclosing_keyword();
  bool line_start = true;
  for (uint32_t i = word_begin; i > 0 && text[i - 1] != '\n'; --i)
    if (text[i - 1] != ' ' && text[i - 1] != '\t') line_start = false;
  if (line_start && (kw.empty() || word_begin == 0 || text[word_begin - 1] == '\n')) {
    for (const char* w : {"import", "const", "fn", "source", "pipeline", "model", "train"})
      out.push_back({w, CompletionKind::Keyword, "", ""});
  }
  if (kw == "model") {
    add_builtins(out, {BuiltinKind::Layer, BuiltinKind::Op});
  } else if (kw == "train") {
    add_builtins(out, {BuiltinKind::Loss, BuiltinKind::Optimizer, BuiltinKind::Strategy});
  } else if (kw == "source") {
    add_builtins(out, {BuiltinKind::Source});
  } else {
    add_builtins(out, {BuiltinKind::Op});
    if (kw == "pipeline" || kw.empty()) add_builtins(out, {BuiltinKind::Source});
  }
  for (DType t : {DType::Bool, DType::U8, DType::I8, DType::U16, DType::I16, DType::U32, DType::I32, DType::U64,
                  DType::I64, DType::F16, DType::BF16, DType::F32, DType::F64, DType::Bytes}) {
    std::string w = dtype_list_word(t);
    bool dup = std::any_of(out.begin(), out.end(), [&](const CompletionEntry& e) { return e.label == w; });
    if (!dup) out.push_back({w, CompletionKind::TypeName, "dtype", ""});
  }
  if (current) {
    for (const auto& [name, d] : current->globals) {
      CompletionEntry e{name, CompletionKind::Variable, "", d->doc};
      switch (d->kind) {
        case DeclKind::Const:
          e.kind = CompletionKind::Constant;
          e.detail = d->type.is_error() ? "const" : type_to_string(d->type);
          break;
        case DeclKind::Fn:
          e.kind = CompletionKind::Function;
          e.detail = decl_signature(*d);
          break;
        case DeclKind::Source:
        case DeclKind::Pipeline:
          e.kind = d->kind == DeclKind::Source ? CompletionKind::Struct : CompletionKind::Event;
          e.detail = std::string(decl_kind_name(d->kind)) + (element_of(d->type).empty() ? "" : " " + element_of(d->type));
          break;
        case DeclKind::Model:
          e.kind = CompletionKind::Class;
          e.detail = decl_signature(*d);
          break;
        default: continue;
      }
      out.push_back(std::move(e));
    }
    // Names bound around the cursor: lambda parameters and block bindings in scope.
    if (decl) {
      std::set<std::string> seen;
      for (const Expr* e : path_at(*decl, word_begin)) {
        if (e->kind == ExprKind::Lambda) {
          const auto* l = e->as<LambdaExpr>();
          for (size_t i = 0; i < l->params.size(); ++i)
            if (seen.insert(l->params[i]).second)
              out.push_back({l->params[i], CompletionKind::Variable,
                             i < l->param_types.size() ? describe_type(l->param_types[i]) : "", ""});
        } else if (e->kind == ExprKind::Block) {
          for (const auto& s : e->as<BlockExpr>()->stmts)
            if (s.range.end <= word_begin && seen.insert(s.name).second)
              out.push_back({s.name, CompletionKind::Variable, s.value ? describe_type(s.value->type) : "", ""});
        }
      }
      for (const auto& p : decl->params)
        if (seen.insert(p.name).second)
          out.push_back({p.name, CompletionKind::Variable, type_syntax_to_string(p.type), ""});
    }
  }
  return out;
}

}  // namespace pipec::lsp
