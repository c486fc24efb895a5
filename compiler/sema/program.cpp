// Loading a program: the main file, then every file it imports (depth first, each once), then the
// global names, then semantic analysis.
#include "compiler/sema/program.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "compiler/front/parser.h"
#include "compiler/sema/checker.h"

namespace pipec {

namespace fs = std::filesystem;

const Decl* Program::global(const std::string& name) const {
  auto it = globals.find(name);
  return it == globals.end() ? nullptr : it->second;
}

std::string stdlib_dir() {
  if (const char* env = std::getenv("PIPEC_STDLIB")) return env;
  return PIPEC_STDLIB_DIR;
}

namespace {

// Files larger than this are refused before parsing: no spec is this big, and it bounds memory.
constexpr size_t kMaxSpecBytes = 16u << 20;

class Loader {
 public:
  Loader(Program& p, const CheckOptions& o) : program_(p), options_(o) {}

  void load_main(const std::string& path, std::string text) {
    if (text.size() > kMaxSpecBytes) {
      uint32_t id = program_.sources.add(path, "");
      program_.diags.report(
          DiagKind::syntax_error, {id, 0, 0},
          fmt::format("the file is {} bytes; specs larger than {} bytes are refused", text.size(), kMaxSpecBytes));
      auto m = std::make_unique<Module>();
      m->file = id;
      program_.modules.push_back(std::move(m));
      return;
    }
    uint32_t id = program_.sources.add(path, std::move(text));
    // The main file keeps the path it was given (diagnostics show it as the user wrote it), but an import
    // that leads back to it must still recognise it, so it is also known by its canonical path.
    std::error_code ec;
    std::string key = fs::weakly_canonical(path, ec).string();
    if (!ec) loaded_[key] = id;
    load(id);
  }

 private:
  void load(uint32_t id) {
    stack_.push_back(id);
    auto module = parse_module(program_.sources, id, program_.diags);
    Module* m = module.get();
    program_.modules.push_back(std::move(module));
    for (auto& d : m->decls)
      if (d->kind == DeclKind::Import) resolve_import(*d, id);
    stack_.pop_back();
  }

  void resolve_import(Decl& d, uint32_t from) {
    fs::path from_dir = fs::path(program_.sources.file(from).path()).parent_path();
    std::vector<fs::path> candidates;
    if (d.import_is_module) {
      std::string file = d.import_path + ".pipe";
      candidates.push_back(from_dir / file);
      for (const auto& dir : options_.import_paths) candidates.push_back(fs::path(dir) / file);
      candidates.push_back(fs::path(stdlib_dir()) / file);
    } else {
      fs::path p(d.import_path);
      candidates.push_back(p.is_absolute() ? p : from_dir / p);
    }
    std::error_code ec;
    for (const fs::path& c : candidates) {
      if (!fs::is_regular_file(c, ec)) continue;
      std::string key = fs::weakly_canonical(c, ec).string();
      d.import_resolved = key;
      uint32_t existing = loaded_.count(key) ? loaded_[key] : program_.sources.find(key);
      if (existing) {
        for (size_t i = 0; i < stack_.size(); ++i) {
          if (stack_[i] != existing) continue;
          auto& diag = program_.diags.report(DiagKind::import_cycle, d.range,
                                             fmt::format("importing `{}` forms a cycle", d.import_path));
          for (size_t j = i; j < stack_.size(); ++j)
            diag.notes.push_back(
                {{},
                 fmt::format("{} imports {}", program_.sources.file(stack_[j]).path(),
                             j + 1 < stack_.size() ? program_.sources.file(stack_[j + 1]).path() : key)});
          return;
        }
        return;  // already loaded through another import
      }
      std::string text, error;
      if (!read_source_file(key, text, error)) break;
      if (text.size() > kMaxSpecBytes) {
        program_.diags.report(DiagKind::syntax_error, d.name_range,
                              fmt::format("`{}` is {} bytes; specs larger than {} bytes are refused", d.import_path,
                                          text.size(), kMaxSpecBytes));
        return;
      }
      load_imported(key, std::move(text));
      return;
    }
    auto& diag = program_.diags.report(DiagKind::import_not_found, d.name_range,
                                       fmt::format("cannot find `{}` to import", d.import_path));
    for (const fs::path& c : candidates) diag.notes.push_back({{}, "looked for " + c.string()});
  }

  void load_imported(const std::string& key, std::string text) {
    uint32_t id = program_.sources.add(key, std::move(text));
    loaded_[key] = id;
    load(id);
  }

  Program& program_;
  const CheckOptions& options_;
  std::vector<uint32_t> stack_;
  std::map<std::string, uint32_t> loaded_;  // canonical path -> file id
};

void collect_globals(Program& p) {
  uint32_t main_file = p.modules.empty() ? 0 : p.modules[0]->file;
  for (auto& m : p.modules) {
    for (auto& d : m->decls) {
      if (d->kind == DeclKind::Import || d->name.empty()) continue;
      auto [it, inserted] = p.globals.emplace(d->name, d.get());
      if (inserted) continue;
      const Decl* first = it->second;
      if (first->name_range.file == main_file && d->name_range.file != main_file) {
        // A clash with an imported name is reported in the file being checked, where it can be fixed.
        auto& diag = p.diags.report(DiagKind::duplicate_definition, first->name_range,
                                    fmt::format("`{}` is also defined by an imported file", d->name));
        diag.notes.push_back({d->name_range, fmt::format("the imported definition of `{}` is here", d->name)});
        continue;
      }
      auto& diag = p.diags.report(DiagKind::duplicate_definition, d->name_range,
                                  fmt::format("`{}` is already defined", d->name));
      diag.notes.push_back({first->name_range, fmt::format("the first definition of `{}` is here", d->name)});
    }
  }
}

// Each `-D NAME=VALUE` becomes a file `<command line>` holding exactly that text; VALUE is parsed from it.
void parse_const_overrides(Program& p, const CheckOptions& options) {
  for (const ConstOverride& o : options.const_overrides) {
    const std::string prefix = "-D " + o.name + "=";
    uint32_t id = p.sources.add("<command line>", prefix + o.value);
    ParsedOverride parsed;
    parsed.name = o.name;
    parsed.name_range = {id, 3, static_cast<uint32_t>(3 + o.name.size())};
    parsed.value = parse_expression(p.sources, id, static_cast<uint32_t>(prefix.size()), p.diags);
    p.const_overrides.push_back(std::move(parsed));
  }
}

std::unique_ptr<Program> check_loaded(std::unique_ptr<Program> p, const CheckOptions& options) {
  parse_const_overrides(*p, options);
  collect_globals(*p);
  check_program(*p, options);
  p->diags.sort();
  return p;
}

}  // namespace

std::unique_ptr<Program> check_text(const std::string& path, std::string text, const CheckOptions& options) {
  auto p = std::make_unique<Program>();
  Loader loader(*p, options);
  loader.load_main(path, std::move(text));
  return check_loaded(std::move(p), options);
}

std::unique_ptr<Program> check_file(const std::string& path, const CheckOptions& options) {
  std::string text, error;
  if (!read_source_file(path, text, error)) {
    auto p = std::make_unique<Program>();
    p->io_error = fmt::format("cannot read {}: {}", path, error);
    auto m = std::make_unique<Module>();
    m->file = p->sources.add(path, "");
    p->modules.push_back(std::move(m));
    return p;
  }
  return check_text(path, std::move(text), options);
}

}  // namespace pipec
