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
    case DeclKind::Model: code = decl_signature(d); break;
    case DeclKind::Source:
    case DeclKind::Pipeline: {
      code = std::string(decl_kind_name(d.kind)) + " " + d.name;
      std::string el = dataset_element(d.type);
      if (!el.empty()) extra = "element: `" + el + "`";
      break;
    }
    case DeclKind::Train: code = "train " + d.name; break;
  }
  std::string md = code_block(code);
  if (!extra.empty()) md += "\n\n" + extra;
  return with_doc(md, d.doc);
}

std::string describe_builtin(const Builtin& b) {
  return with_doc(code_block(b.signature()) + "\n\n*" + builtin_kind_name(b.kind) + "*", b.doc);
}

/// "name: type"; nothing while the type is unknown (an error the diagnostics already show).
std::optional<HoverResult> typed_hover(const std::string& name, const Type& type, const SourceRange& range) {
  if (type.is_error()) return std::nullopt;
  return HoverResult{code_block(name + ": " + describe_type(type)), range};
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

}  // namespace

// ---------------------------------------------------------------------------------------------------

std::string describe_type(const Type& t) {
  if (t.kind == TypeKind::Dataset && t.element) return "dataset of " + element_to_string(*t.element);
  return type_to_string(t);
}

std::string dataset_element(const Type& t) {
  if (t.kind == TypeKind::Dataset && t.element) return element_to_string(*t.element);
  return "";
}

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
    if (contains(e.key_range, offset) && e.value) return typed_hover(e.key, e.value->type, e.key_range);

  std::vector<const Expr*> path = path_at(*d, offset);
  if (path.empty()) return std::nullopt;
  size_t index = path.size() - 1;
  const Expr* inner = path[index];
  switch (inner->kind) {
    case ExprKind::Lambda: {
      const auto* l = inner->as<LambdaExpr>();
      for (size_t i = 0; i < l->param_ranges.size(); ++i) {
        if (!contains(l->param_ranges[i], offset)) continue;
        if (i >= l->param_types.size()) return std::nullopt;  // the checker never got to it
        return typed_hover(l->params[i], l->param_types[i], l->param_ranges[i]);
      }
      break;
    }
    case ExprKind::Block:
      for (const auto& s : inner->as<BlockExpr>()->stmts)
        if (contains(s.name_range, offset) && s.value) return typed_hover(s.name, s.value->type, s.name_range);
      break;
    case ExprKind::Record:
      for (const auto& f : inner->as<RecordExpr>()->fields) {
        if (!contains(f.name_range, offset)) continue;
        const Type* ft = inner->type.kind == TypeKind::Record ? inner->type.field(f.name) : nullptr;
        if (ft) return typed_hover(f.name, *ft, f.name_range);
        if (f.value) return typed_hover(f.name, f.value->type, f.name_range);
        return std::nullopt;
      }
      break;
    case ExprKind::Member: {
      const auto* mem = inner->as<MemberExpr>();
      if (contains(mem->member_range, offset)) return typed_hover(mem->member, inner->type, mem->member_range);
      break;
    }
    case ExprKind::Name: {
      const auto* n = inner->as<NameExpr>();
      if (n->name == "<error>") return std::nullopt;
      const Binding& b = n->target;
      if (b.kind == Binding::Global && b.decl) return HoverResult{describe_decl(*b.decl), inner->range};
      if (b.kind == Binding::Builtin && b.builtin) {
        // The builtin the checker chose here (a layer or an op, a source or an output format).
        std::string md = describe_builtin(*b.builtin);
        if (const PipeExpr* p = pipe_applying(path, index)) {
          std::string el = dataset_element(p->type);
          if (!el.empty()) md += "\n\nelement after this stage: `" + el + "`";
        }
        return HoverResult{md, inner->range};
      }
      if (b.kind == Binding::Builtin && parse_dtype(n->name))
        return HoverResult{code_block(n->name + "(x)") + "\n\n*cast*: converts x to " + n->name +
                               " (numbers to numbers, bytes to bytes)",
                           inner->range};
      // In a train block a bare name is a field of the training data (its batched type), else an option word.
      if (b.kind == Binding::Option && d->kind == DeclKind::Train && inner->type.kind != TypeKind::Symbol) {
        if (inner->type.is_error()) return std::nullopt;
        return HoverResult{code_block(n->name + ": " + describe_type(inner->type)) + "\n\nfield of the training data",
                           inner->range};
      }
      if (b.kind == Binding::Option) return HoverResult{code_block("option " + n->name), inner->range};
      return typed_hover(n->name, inner->type, inner->range);
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
  // A field of the training data in a train block (`model = net(board)`): where the data defines it.
  if (inner->kind == ExprKind::Name && inner->as<NameExpr>()->target.kind == Binding::Option &&
      d->kind == DeclKind::Train && inner->type.kind != TypeKind::Symbol) {
    for (const TrainEntry& e : d->entries)
      if (e.key == "data" && e.value)
        if (auto r = field_source(program, e.value.get(), inner->as<NameExpr>()->name, 0)) out.push_back(*r);
    return out;
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

}  // namespace pipec::lsp
