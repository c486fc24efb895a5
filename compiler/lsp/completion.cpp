// Completion offers what the checker would accept at the cursor. The word there is replaced by a
// placeholder name and the buffer checked with a name probe on it (CheckOptions::name_probe): the
// checker lists the names it accepts in that place (compiler/sema/check_names.cpp), by the rules it
// resolves names with. Three places are not names the checker resolves: after `r.` (the fields of r's
// type), the key of a train entry (the entries not given yet, from the checker's table) and the start
// of a top-level line (the declaration keywords).
#include <algorithm>
#include <set>

#include "compiler/front/ast_query.h"
#include "compiler/lsp/analysis.h"
#include "compiler/lsp/text_scan.h"
#include "compiler/sema/builtins.h"

namespace pipec::lsp {

namespace {

constexpr const char* kPlaceholder = "pipec_completion_placeholder";

CompletionEntry entry_for(const NameCandidate& c) {
  switch (c.kind) {
    case NameCandidate::Builtin: return {c.name, CompletionKind::Function, c.builtin->signature(), c.builtin->doc};
    case NameCandidate::Cast: return {c.name, CompletionKind::TypeName, "cast to " + c.name, ""};
    case NameCandidate::Fn: return {c.name, CompletionKind::Function, decl_signature(*c.decl), c.decl->doc};
    case NameCandidate::Model: return {c.name, CompletionKind::Class, decl_signature(*c.decl), c.decl->doc};
    case NameCandidate::Const:
      return {c.name, CompletionKind::Constant, c.decl->type.is_error() ? "const" : type_to_string(c.decl->type),
              c.decl->doc};
    case NameCandidate::Dataset: {
      std::string el = dataset_element(c.decl->type);
      return {c.name, c.decl->kind == DeclKind::Source ? CompletionKind::Struct : CompletionKind::Event,
              std::string(decl_kind_name(c.decl->kind)) + (el.empty() ? "" : " " + el), c.decl->doc};
    }
    case NameCandidate::Local:
    case NameCandidate::Field:
      return {c.name, c.kind == NameCandidate::Field ? CompletionKind::Field : CompletionKind::Variable,
              c.type.is_error() ? "" : describe_type(c.type), ""};
    case NameCandidate::Option: return {c.name, CompletionKind::EnumMember, "option", ""};
  }
  return {c.name, CompletionKind::Variable, "", ""};
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
bool member_completion(const std::string& path, const std::string& text, WordRange word,
                       std::vector<CompletionEntry>& out) {
  std::string patched = text.substr(0, word.begin) + kPlaceholder + text.substr(word.end);
  auto program = check_text(path, std::move(patched));
  if (!program || program->modules.empty()) return false;
  const Decl* d = decl_at(program->main(), word.begin);
  if (!d) return false;
  const MemberExpr* found = nullptr;
  walk_exprs(*d, [&](const Expr& e) {
    if (!found && e.kind == ExprKind::Member && e.as<MemberExpr>()->member_range.begin == word.begin)
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

/// Whether `word` sits where a train block's entry key goes: directly inside the block's braces, at
/// the start of the block or after a separator (`,`, `;`, or a line break after a finished value).
bool at_train_entry_key(const std::string& text, WordRange word, const DeclLine& decl) {
  if (decl.keyword != "train") return false;
  size_t brace = text.find('{', decl.begin);
  if (brace == std::string::npos || brace >= word.begin) return false;
  if (open_brackets(text, static_cast<uint32_t>(brace), word.begin) != "{") return false;
  uint32_t k = word.begin;
  bool line_break = false;
  while (k > brace + 1 && (text[k - 1] == ' ' || text[k - 1] == '\t' || text[k - 1] == '\n' || text[k - 1] == '\r')) {
    if (text[k - 1] == '\n') line_break = true;
    --k;
  }
  char prev = text[k - 1];
  if (prev == '{' || prev == ',' || prev == ';') return true;
  return line_break && (is_ident_char(prev) || prev == ')' || prev == ']' || prev == '"');
}

void add_train_keys(std::vector<CompletionEntry>& out, const Program* current, WordRange word) {
  std::set<std::string> given;
  const Decl* d = current && !current->modules.empty() ? decl_at(current->main(), word.begin) : nullptr;
  if (d && d->kind == DeclKind::Train)
    for (const TrainEntry& e : d->entries)
      if (!(e.key_range.begin <= word.begin && word.begin <= e.key_range.end)) given.insert(e.key);
  for (const TrainEntrySpec& s : train_entry_specs())
    if (!given.count(s.key)) out.push_back({s.key, CompletionKind::Property, s.required ? "required" : "optional", ""});
}

/// Checks `patched` with the name probe at `at`; the program (its name_site points into it) when the
/// checker reached the name.
std::unique_ptr<Program> probe(const std::string& path, std::string patched, uint32_t at) {
  CheckOptions options;
  options.name_probe = at;
  options.warnings = false;
  auto program = check_text(path, std::move(patched), options);
  if (!program || !program->name_site) return nullptr;
  return program;
}

/// What the checker accepts in place of `word`: first with the rest of the buffer as it is, then, when
/// the unfinished text around the cursor keeps the checker from reaching it, with the declaration cut
/// after the cursor and its open brackets closed.
std::unique_ptr<Program> probe_word(const std::string& path, const std::string& text, WordRange word) {
  std::string prefix = text.substr(0, word.begin) + kPlaceholder;
  if (auto program = probe(path, prefix + text.substr(word.end), word.begin)) return program;
  DeclLine decl = enclosing_decl_line(text, word.begin);
  std::string closers = closing_brackets(open_brackets(text, decl.begin, word.begin));
  uint32_t next = next_decl_line(text, word.end);
  return probe(path, prefix + closers + "\n" + text.substr(next), word.begin);
}

}  // namespace

std::vector<CompletionEntry> complete_at(const std::string& path, const std::string& text, uint32_t offset,
                                         const Program* current, const Program* last_good) {
  std::vector<CompletionEntry> out;
  offset = std::min<uint32_t>(offset, static_cast<uint32_t>(text.size()));
  WordRange word = word_at(text, offset);

  // `base.` + prefix: fields of base's record type.
  if (word.begin > 0 && text[word.begin - 1] == '.') {
    WordRange base = word_at(text, word.begin - 1);
    std::string name = text.substr(base.begin, word.begin - 1 - base.begin);
    if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return out;
    if (member_completion(path, text, word, out)) return out;
    for (const Program* p : {current, last_good}) {
      if (!p || p->modules.empty()) continue;
      member_completion_fallback(*p, name, offset, out);
      if (!out.empty()) break;
    }
    return out;
  }

  DeclLine decl = enclosing_decl_line(text, word.begin);
  if (at_train_entry_key(text, word, decl)) {
    add_train_keys(out, current, word);
    return out;
  }
  // At the start of a top-level line: a new declaration.
  if (word.begin == 0 || text[word.begin - 1] == '\n')
    for (const char* w : {"import", "const", "fn", "source", "pipeline", "model", "train"})
      out.push_back({w, CompletionKind::Keyword, "", ""});

  if (std::unique_ptr<Program> probed = probe_word(path, text, word))
    for (const NameCandidate& c : probed->name_site->candidates) out.push_back(entry_for(c));
  return out;
}

}  // namespace pipec::lsp
