#include "compiler/compile/pick_pipeline.h"

#include <fmt/format.h>

namespace pipec {

const Decl* pick_pipeline(const Program& p, const std::string& name, std::string& error) {
  std::vector<const Decl*> pipelines;
  for (const auto& d : p.main().decls)
    if (d->kind == DeclKind::Pipeline) pipelines.push_back(d.get());
  if (!name.empty()) {
    for (const Decl* d : pipelines)
      if (d->name == name) return d;
    error = fmt::format("no pipeline named `{}`; the spec declares:", name);
  } else if (pipelines.size() == 1) {
    return pipelines[0];
  } else if (pipelines.empty()) {
    error = "the spec declares no pipeline";
  } else {
    for (const auto& d : p.main().decls) {
      if (d->kind != DeclKind::Train) continue;
      for (const TrainEntry& e : d->entries)
        if (e.key == "data" && e.value->kind == ExprKind::Name) {
          for (const Decl* pd : pipelines)
            if (pd->name == e.value->as<NameExpr>()->name) return pd;
        }
    }
    error = "the spec declares several pipelines; choose one with --pipeline:";
  }
  for (const Decl* d : pipelines) error += " " + d->name;
  return nullptr;
}

}  // namespace pipec
