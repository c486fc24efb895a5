#include "compiler/compile/inline_colour_files.h"

#include <filesystem>
#include <memory>

#include "runtime/ops/colors_csv.h"

namespace pipec {

int inline_colour_files(Plan& plan, const std::string& data_dir) {
  int changed = 0;
  for (Stage& s : plan.stages) {
    if (s.inner) {  // a flat_map's pipeline: a copy, since plans may share it
      Plan inner = *s.inner;
      if (int n = inline_colour_files(inner, data_dir)) {
        changed += n;
        s.inner = std::make_shared<const Plan>(std::move(inner));
      }
    }
    if (!s.fn) continue;
    std::shared_ptr<ExprFunction> copy;  // made on the first change: plans may share functions
    for (size_t i = 0; i < s.fn->body.size(); ++i) {
      const Instr& in = s.fn->body[i];
      if (in.op != OpKind::OneHotColors) continue;
      auto it = in.attrs.find("colors");
      if (it == in.attrs.end() || it->second.kind != Value::String) continue;
      std::filesystem::path path(it->second.s);
      if (path.is_relative() && !data_dir.empty()) path = std::filesystem::path(data_dir) / path;
      std::shared_ptr<const Colors> colors;
      try {
        colors = read_colors_csv(path.string());
      } catch (const std::exception&) {
        continue;  // the run reports it
      }
      if (in.type.shape.empty() || in.type.shape.back() != static_cast<int64_t>(colors->size())) continue;
      Value list;
      list.kind = Value::List;
      for (const auto& rgb : *colors) {
        Value row;
        row.kind = Value::List;
        for (uint8_t c : rgb) row.items.push_back(Value::make_int(c));
        list.items.push_back(std::move(row));
      }
      if (!copy) copy = std::make_shared<ExprFunction>(*s.fn);
      copy->body[i].attrs["colors"] = std::move(list);
      ++changed;
    }
    if (copy) s.fn = copy;
  }
  return changed;
}

}  // namespace pipec
