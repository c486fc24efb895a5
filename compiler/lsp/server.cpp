#include "compiler/lsp/server.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "compiler/front/ast_query.h"
#include "compiler/lsp/analysis.h"
#include "compiler/lsp/transport.h"

#ifndef PIPEC_VERSION
#define PIPEC_VERSION "dev"
#endif

namespace pipec::lsp {

namespace {

// LSP enumerations used below.
constexpr int kSymbolModule = 2, kSymbolClass = 5, kSymbolProperty = 7, kSymbolField = 8, kSymbolFunction = 12,
              kSymbolVariable = 13, kSymbolConstant = 14, kSymbolObject = 19, kSymbolStruct = 23;

int completion_item_kind(CompletionKind k) {
  switch (k) {
    case CompletionKind::Function: return 3;
    case CompletionKind::Field: return 5;
    case CompletionKind::Variable: return 6;
    case CompletionKind::Class: return 7;
    case CompletionKind::Module: return 9;
    case CompletionKind::Keyword: return 14;
    case CompletionKind::Constant: return 21;
    case CompletionKind::Struct: return 22;
    case CompletionKind::Event: return 23;
    case CompletionKind::TypeName: return 25;
    case CompletionKind::Property: return 10;
    case CompletionKind::EnumMember: return 20;
  }
  return 1;
}

int severity_code(Severity s) {
  switch (s) {
    case Severity::Error: return 1;
    case Severity::Warning: return 2;
    case Severity::Note: return 3;
  }
  return 1;
}

Json position_json(Position p) { return Json::object({{"line", p.line}, {"character", p.character}}); }

bool valid_id(JsonView id) { return id.is_number() || id.is_string(); }

}  // namespace

Server::Server(std::ostream& out) : out_(out) {}
Server::~Server() = default;

// ---------------------------------------------------------------------------------------------------
// Messages

void Server::send(const Json& message) { write_message(out_, dump_json(message)); }

void Server::respond(const Json& id, Json result) {
  send(Json::object({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}}));
}

void Server::respond_error(const Json& id, int code, const std::string& message) {
  send(Json::object({{"jsonrpc", "2.0"}, {"id", id}, {"error", Json::object({{"code", code}, {"message", message}})}}));
}

void Server::notify(const std::string& method, Json params) {
  send(Json::object({{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}}));
}

void Server::handle_bad_header(const std::string& why) { respond_error(Json(), kParseError, why); }

void Server::handle(std::string_view body) {
  JsonParseResult parsed = parse_json(body);
  if (!parsed.ok()) {
    respond_error(Json(), kParseError, "invalid JSON: " + parsed.error);
    return;
  }
  JsonView msg = *parsed.value;
  if (!msg.is_object()) {
    respond_error(Json(), kInvalidRequest, "a message must be a JSON object");
    return;
  }
  JsonView id = msg["id"];
  JsonView method = msg["method"];
  Json reply_id = valid_id(id) ? id.json() : Json();
  if (!msg.has("method")) {
    // A response to a request of ours (we send none) or nonsense.
    if (msg.has("id") && (msg.has("result") || msg.has("error"))) return;
    respond_error(reply_id, kInvalidRequest, "message has no method");
    return;
  }
  if (!method.is_string()) {
    respond_error(reply_id, kInvalidRequest, "method must be a string");
    return;
  }
  JsonView params = msg["params"];
  if (!id.is_null()) {
    if (!valid_id(id)) {
      respond_error(Json(), kInvalidRequest, "id must be a number or a string");
      return;
    }
    try {
      on_request(method.as_string(), id.json(), params);
    } catch (const std::exception& e) {
      respond_error(id.json(), kInternalError, std::string("internal error: ") + e.what());
    } catch (...) {
      respond_error(id.json(), kInternalError, "internal error");
    }
  } else {
    try {
      on_notification(method.as_string(), params);
    } catch (const std::exception& e) {
      std::cerr << "pipec lsp: " << method.as_string() << ": internal error: " << e.what() << "\n";
    } catch (...) {
      std::cerr << "pipec lsp: " << method.as_string() << ": internal error\n";
    }
  }
}

void Server::on_request(const std::string& method, const Json& id, JsonView params) {
  if (method == "initialize") {
    initialized_ = true;
    respond(id, initialize_result());
    return;
  }
  if (!initialized_) {
    respond_error(id, kServerNotInitialized, "the server is not initialized yet; send `initialize` first");
    return;
  }
  if (shutdown_) {
    respond_error(id, kInvalidRequest, "the server is shutting down");
    return;
  }
  if (method == "shutdown") {
    shutdown_ = true;
    respond(id, Json());
    return;
  }
  using Handler = Json (Server::*)(JsonView);
  static const std::map<std::string, Handler> handlers = {
      {"textDocument/hover", &Server::hover},
      {"textDocument/completion", &Server::completion},
      {"textDocument/signatureHelp", &Server::signature_help},
      {"textDocument/definition", &Server::definition},
      {"textDocument/references", &Server::references},
      {"textDocument/documentSymbol", &Server::document_symbols},
      {"textDocument/formatting", &Server::formatting},
      {"textDocument/semanticTokens/full", &Server::semantic_tokens_full},
  };
  auto it = handlers.find(method);
  if (it == handlers.end()) {
    respond_error(id, kMethodNotFound, "unknown method `" + method + "`");
    return;
  }
  if (!params.is_object() || !params["textDocument"].is_object() || !params["textDocument"]["uri"].is_string()) {
    respond_error(id, kInvalidParams, "params.textDocument.uri is required");
    return;
  }
  if (method == "textDocument/formatting" && !formatting_available()) {
    respond_error(id, kRequestFailed, "this build of pipec has no formatter");
    return;
  }
  respond(id, (this->*(it->second))(params));
}

void Server::on_notification(const std::string& method, JsonView params) {
  if (method == "exit") {
    exited_ = true;
    return;
  }
  if (!initialized_ || shutdown_) return;  // notifications before initialize are dropped
  if (method == "textDocument/didOpen") {
    JsonView td = params["textDocument"];
    if (!td["uri"].is_string() || !td["text"].is_string()) return;
    open(td["uri"].as_string(), td["text"].as_string(), td["version"].as_int(0));
  } else if (method == "textDocument/didChange") {
    change(params);
  } else if (method == "textDocument/didClose") {
    JsonView uri = params["textDocument"]["uri"];
    if (uri.is_string()) close(uri.as_string());
  }
  // initialized, didSave, $/cancelRequest, $/setTrace, workspace/didChangeConfiguration... need nothing.
}

Json Server::initialize_result() const {
  Json legend = Json::object();
  Json types = Json::array(), mods = Json::array();
  for (const auto& t : semantic_token_types()) types.push_back(t);
  for (const auto& m : semantic_token_modifiers()) mods.push_back(m);
  legend["tokenTypes"] = types;
  legend["tokenModifiers"] = mods;
  Json caps = Json::object({
      {"positionEncoding", "utf-16"},
      {"textDocumentSync", Json::object({{"openClose", true}, {"change", 1}})},
      {"hoverProvider", true},
      {"completionProvider",
       Json::object({{"triggerCharacters", Json::array({".", "|"})}, {"resolveProvider", false}})},
      {"signatureHelpProvider",
       Json::object({{"triggerCharacters", Json::array({"(", ","})}, {"retriggerCharacters", Json::array({","})}})},
      {"definitionProvider", true},
      {"referencesProvider", true},
      {"documentSymbolProvider", true},
      {"documentFormattingProvider", formatting_available()},
      {"semanticTokensProvider", Json::object({{"legend", legend}, {"full", true}, {"range", false}})},
  });
  return Json::object(
      {{"capabilities", caps}, {"serverInfo", Json::object({{"name", "pipec"}, {"version", PIPEC_VERSION}})}});
}

// ---------------------------------------------------------------------------------------------------
// Documents

void Server::open(const std::string& uri, std::string text, int64_t version) {
  auto& slot = docs_[uri];
  if (!slot) slot = std::make_unique<Document>();
  Document& doc = *slot;
  doc.uri = uri;
  doc.path = uri_to_path(uri);
  doc.text = std::move(text);
  doc.version = version;
  recheck(doc);
}

void Server::change(JsonView params) {
  JsonView td = params["textDocument"];
  if (!td["uri"].is_string()) return;
  auto it = docs_.find(td["uri"].as_string());
  if (it == docs_.end()) return;
  Document& doc = *it->second;
  for (JsonView c : params["contentChanges"].elements()) {
    if (!c["text"].is_string()) continue;
    if (c["range"].is_object()) {
      // Incremental edits are not advertised, but cost little to honour.
      LineIndex idx(doc.text);
      uint32_t a = idx.offset({static_cast<uint32_t>(std::max<int64_t>(0, c["range"]["start"]["line"].as_int())),
                               static_cast<uint32_t>(std::max<int64_t>(0, c["range"]["start"]["character"].as_int()))});
      uint32_t b = idx.offset({static_cast<uint32_t>(std::max<int64_t>(0, c["range"]["end"]["line"].as_int())),
                               static_cast<uint32_t>(std::max<int64_t>(0, c["range"]["end"]["character"].as_int()))});
      if (b < a) std::swap(a, b);
      doc.text.replace(a, b - a, c["text"].as_string());
    } else {
      doc.text = c["text"].as_string();
    }
  }
  doc.version = td["version"].as_int(doc.version + 1);
  recheck(doc);
}

void Server::close(const std::string& uri) {
  auto it = docs_.find(uri);
  if (it == docs_.end()) return;
  docs_.erase(it);
  notify("textDocument/publishDiagnostics", Json::object({{"uri", uri}, {"diagnostics", Json::array()}}));
}

void Server::recheck(Document& doc) {
  doc.index = LineIndex(doc.text);
  if (doc.program) {
    bool parsed = std::none_of(doc.program->diags.all().begin(), doc.program->diags.all().end(),
                               [](const Diagnostic& d) { return d.kind == DiagKind::syntax_error; });
    if (parsed) doc.last_good = std::move(doc.program);
  }
  doc.program.reset();
  doc.failure.reset();
  try {
    CompiledDocument compiled = compile_document(doc.path, doc.text);
    doc.program = std::move(compiled.program);
    doc.failure = std::move(compiled.failure);
  } catch (const std::exception& e) {
    std::cerr << "pipec lsp: checking " << doc.path << " failed: " << e.what() << "\n";
  }
  publish_diagnostics(doc);
}

Json Server::range_json(const Document& doc, const SourceRange& range) const {
  const LineIndex* idx = &doc.index;
  LineIndex other;
  if (doc.program && range.file != 0 && range.file <= doc.program->sources.size() && !doc.program->modules.empty() &&
      range.file != doc.program->main().file) {
    other = LineIndex(doc.program->sources.file(range.file).text());
    idx = &other;
  }
  return Json::object({{"start", position_json(idx->position(range.begin))},
                       {"end", position_json(idx->position(std::max(range.begin, range.end)))}});
}

Json Server::location(const Document& doc, const SourceRange& range) const {
  std::string uri = doc.uri;
  if (doc.program && !doc.program->modules.empty() && range.file != doc.program->main().file && range.file != 0 &&
      range.file <= doc.program->sources.size())
    uri = path_to_uri(doc.program->sources.file(range.file).path());
  return Json::object({{"uri", uri}, {"range", range_json(doc, range)}});
}

void Server::publish_diagnostics(const Document& doc) {
  Json list = Json::array();
  if (doc.program) {
    const Program& p = *doc.program;
    uint32_t main_file = p.modules.empty() ? 0 : p.main().file;
    for (const Diagnostic& d : p.diags.all()) {
      SourceRange r = d.range;
      std::string message = d.message;
      if (r.file != 0 && r.file != main_file && r.file <= p.sources.size()) {
        // A problem in an imported file: shown on the import that brings it in.
        const SourceFile& f = p.sources.file(r.file);
        LineCol lc = f.line_col(r.begin);
        message = "in " + f.path() + ":" + std::to_string(lc.line) + ":" + std::to_string(lc.col) + ": " + message;
        SourceRange at{main_file, 0, 0};
        if (!p.modules.empty()) {
          for (const auto& decl : p.main().decls) {
            if (decl->kind != DeclKind::Import) continue;
            if (!at.end) at = decl->range;  // the first import, unless a better one is found
            if (!decl->import_resolved.empty() && p.sources.find(decl->import_resolved) == r.file) {
              at = decl->range;
              break;
            }
          }
        }
        r = at;
      } else if (r.file == 0) {
        r = {main_file, 0, 0};
      }
      // Notes with a place become related information; the others and the help follow the message, in
      // the order `pipec check` prints them.
      Json related = Json::array();
      for (const DiagNote& n : d.notes) {
        if (n.range.valid())
          related.push_back(Json::object({{"location", location(doc, n.range)}, {"message", n.message}}));
        else message += "\nnote: " + n.message;
      }
      if (!d.help.empty()) message += "\nhelp: " + d.help;
      Json diag = Json::object({{"range", range_json(doc, r)},
                                {"severity", severity_code(d.severity)},
                                {"code", std::string(diag_kind_info(d.kind).name)},
                                {"source", "pipec"},
                                {"message", message}});
      if (!related.empty()) diag["relatedInformation"] = related;
      list.push_back(std::move(diag));
    }
  }
  if (doc.failure) {
    // `pipec check` prints it after the diagnostics, with no place; the editor needs one.
    list.push_back(Json::object({{"range", range_json(doc, doc.failure->range)},
                                 {"severity", severity_code(Severity::Error)},
                                 {"code", "internal_error"},
                                 {"source", "pipec"},
                                 {"message", doc.failure->message}}));
  }
  notify("textDocument/publishDiagnostics",
         Json::object({{"uri", doc.uri}, {"version", doc.version}, {"diagnostics", std::move(list)}}));
}

Server::Document* Server::document(JsonView params) {
  auto it = docs_.find(params["textDocument"]["uri"].as_string());
  return it == docs_.end() ? nullptr : it->second.get();
}

uint32_t Server::offset_of(const Document& doc, JsonView position) const {
  int64_t line = std::clamp<int64_t>(position["line"].as_int(0), 0, UINT32_MAX);
  int64_t character = std::clamp<int64_t>(position["character"].as_int(0), 0, UINT32_MAX);
  return doc.index.offset({static_cast<uint32_t>(line), static_cast<uint32_t>(character)});
}

// ---------------------------------------------------------------------------------------------------
// Features

Json Server::hover(JsonView params) {
  Document* doc = document(params);
  if (!doc || !doc->program || doc->program->modules.empty()) return Json();
  uint32_t offset = offset_of(*doc, params["position"]);
  std::optional<HoverResult> h = hover_at(*doc->program, offset);
  // At the end of a word (the cursor right after it), describe the word.
  if (!h && offset > 0) h = hover_at(*doc->program, offset - 1);
  if (!h) return Json();
  return Json::object({{"contents", Json::object({{"kind", "markdown"}, {"value", h->markdown}})},
                       {"range", range_json(*doc, h->range)}});
}

Json Server::completion(JsonView params) {
  Document* doc = document(params);
  if (!doc) return Json();
  uint32_t offset = offset_of(*doc, params["position"]);
  Json items = Json::array();
  std::vector<CompletionEntry> entries =
      complete_at(doc->path, doc->text, offset, doc->program.get(), doc->last_good.get());
  for (size_t i = 0; i < entries.size(); ++i) {
    const CompletionEntry& e = entries[i];
    // sortText keeps our order (a model's layers before its ops, names in scope first) in editors that
    // would otherwise sort by label.
    char sort[24];  // room for any size_t
    std::snprintf(sort, sizeof sort, "%05zu", i);
    Json item = Json::object({{"label", e.label}, {"kind", completion_item_kind(e.kind)}, {"sortText", sort}});
    if (!e.detail.empty()) item["detail"] = e.detail;
    if (!e.documentation.empty())
      item["documentation"] = Json::object({{"kind", "markdown"}, {"value", e.documentation}});
    items.push_back(std::move(item));
  }
  return Json::object({{"isIncomplete", false}, {"items", std::move(items)}});
}

Json Server::signature_help(JsonView params) {
  Document* doc = document(params);
  if (!doc) return Json();
  uint32_t offset = offset_of(*doc, params["position"]);
  std::optional<SignatureHelp> help = signature_help_at(doc->path, doc->text, offset, doc->program.get());
  if (!help) return Json();
  Json parameters = Json::array();
  for (const auto& [begin, end] : help->params)
    parameters.push_back(Json::object({{"label", Json::array({begin, end})}}));
  Json signature = Json::object({{"label", help->label}, {"parameters", std::move(parameters)}});
  if (!help->documentation.empty())
    signature["documentation"] = Json::object({{"kind", "markdown"}, {"value", help->documentation}});
  Json result = Json::object({{"signatures", Json::array({std::move(signature)})}, {"activeSignature", 0}});
  if (help->active_parameter >= 0) result["activeParameter"] = help->active_parameter;
  return result;
}

Json Server::definition(JsonView params) {
  Document* doc = document(params);
  if (!doc || !doc->program || doc->program->modules.empty()) return Json();
  uint32_t offset = offset_of(*doc, params["position"]);
  std::vector<SourceRange> defs = definition_at(*doc->program, offset);
  if (defs.empty() && offset > 0) defs = definition_at(*doc->program, offset - 1);
  if (defs.empty()) return Json();
  Json out = Json::array();
  for (const auto& r : defs) out.push_back(location(*doc, r));
  return out;
}

Json Server::references(JsonView params) {
  Document* doc = document(params);
  if (!doc || !doc->program || doc->program->modules.empty()) return Json::array();
  uint32_t offset = offset_of(*doc, params["position"]);
  bool include_decl = params["context"]["includeDeclaration"].as_bool(true);
  std::vector<SourceRange> refs = references_at(*doc->program, offset, include_decl);
  if (refs.empty() && offset > 0) refs = references_at(*doc->program, offset - 1, include_decl);
  Json out = Json::array();
  for (const auto& r : refs) out.push_back(location(*doc, r));
  return out;
}

Json Server::document_symbols(JsonView params) {
  Document* doc = document(params);
  Json out = Json::array();
  if (!doc || !doc->program || doc->program->modules.empty()) return out;
  auto symbol = [&](const std::string& name, int kind, const std::string& detail, const SourceRange& range,
                    const SourceRange& selection) {
    Json s = Json::object({{"name", name.empty() ? std::string("?") : name},
                           {"kind", kind},
                           {"range", range_json(*doc, range)},
                           {"selectionRange", range_json(*doc, selection.valid() ? selection : range)}});
    if (!detail.empty()) s["detail"] = detail;
    return s;
  };
  for (const auto& d : doc->program->main().decls) {
    int kind = kSymbolVariable;
    std::string detail;
    std::string name = d->name;
    Json children = Json::array();
    switch (d->kind) {
      case DeclKind::Import:
        kind = kSymbolModule;
        name = d->import_path;
        break;
      case DeclKind::Const:
        kind = kSymbolConstant;
        if (!d->type.is_error()) detail = type_to_string(d->type);
        break;
      case DeclKind::Fn:
        kind = kSymbolFunction;
        detail = decl_signature(*d);
        break;
      case DeclKind::Source:
        kind = kSymbolStruct;
        detail = "source";
        for (const auto& f : d->schema)
          children.push_back(symbol(f.name, kSymbolField, type_syntax_to_string(f.type),
                                    f.range.valid() ? f.range : f.name_range, f.name_range));
        break;
      case DeclKind::Pipeline:
        kind = kSymbolVariable;
        detail = "pipeline";
        if (d->type.kind == TypeKind::Dataset && d->type.element) detail += " " + element_to_string(*d->type.element);
        break;
      case DeclKind::Model:
        kind = kSymbolClass;
        detail = decl_signature(*d);
        break;
      case DeclKind::Train:
        kind = kSymbolObject;
        detail = "train";
        for (const auto& e : d->entries)
          children.push_back(symbol(
              e.key, kSymbolProperty, "",
              e.value ? SourceRange{e.key_range.file, e.key_range.begin, std::max(e.key_range.end, e.value->range.end)}
                      : e.key_range,
              e.key_range));
        break;
    }
    Json s = symbol(name, kind, detail, d->range, d->name_range);
    if (!children.empty()) s["children"] = std::move(children);
    out.push_back(std::move(s));
  }
  return out;
}

Json Server::formatting(JsonView params) {
  Document* doc = document(params);
  if (!doc) return Json();
  std::string error;
  std::optional<std::string> formatted = format_document_text(doc->path, doc->text, error);
  if (!formatted) {
    std::cerr << "pipec lsp: cannot format " << doc->path << ": " << error << "\n";
    return Json::array();
  }
  if (*formatted == doc->text) return Json::array();
  Json range = Json::object({{"start", position_json({0, 0})},
                             {"end", position_json(doc->index.position(static_cast<uint32_t>(doc->text.size())))}});
  return Json::array({Json::object({{"range", range}, {"newText", *formatted}})});
}

Json Server::semantic_tokens_full(JsonView params) {
  Document* doc = document(params);
  if (!doc) return Json();
  const Module* module = doc->program && !doc->program->modules.empty() ? &doc->program->main() : nullptr;
  Json data = Json::array();
  for (uint32_t v : semantic_tokens(doc->text, module)) data.push_back(v);
  return Json::object({{"data", std::move(data)}});
}

// ---------------------------------------------------------------------------------------------------

int run_lsp_server(std::istream& in, std::ostream& out) {
  Server server(out);
  MessageReader reader(in);
  for (;;) {
    ReadResult r = reader.read();
    if (r.status == ReadStatus::Eof) break;
    if (r.status == ReadStatus::BadHeader) {
      server.handle_bad_header(r.error);
      continue;
    }
    server.handle(r.body);
    if (server.exited()) break;
  }
  return server.exit_code();
}

}  // namespace pipec::lsp
