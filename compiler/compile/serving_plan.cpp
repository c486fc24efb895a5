#include "compiler/compile/serving_plan.h"

#include <algorithm>

#include <fmt/format.h>

namespace pipec {

namespace {

// Stages that choose, order or time the training examples: a served request skips them.
bool served_without(StageKind k) {
  switch (k) {
    case StageKind::Shuffle:
    case StageKind::Repeat:
    case StageKind::Take:
    case StageKind::Skip:
    case StageKind::Shard:
    case StageKind::Cache:
    case StageKind::Prefetch:
    case StageKind::To:
    case StageKind::Interleave: return true;
    default: return false;
  }
}

std::string where(const Stage& s) { return s.loc.valid() ? s.loc.to_string() + ": " : ""; }

// A map returning `fields` of `element`, each passed through (the model reads a source's fields as they are).
std::shared_ptr<ExprFunction> projection(const ElementInfo& element, const std::vector<std::string>& fields) {
  auto fn = std::make_shared<ExprFunction>();
  fn->name = "serve";
  for (const std::string& f : fields) {
    auto it = std::find_if(element.fields.begin(), element.fields.end(), [&](const Field& x) { return x.name == f; });
    Instr p;
    p.op = OpKind::Param;
    p.attrs["field"] = Value::make_string(f);
    p.type = *it->type;
    fn->results.emplace_back(f, fn->add(std::move(p)));
  }
  return fn;
}

}  // namespace

std::optional<Plan> cut_serving_plan(const Plan& lowered, const std::vector<std::string>& model_fields,
                                     std::string& error) {
  // The chain from the output back to its source.
  std::vector<int> chain;
  for (int at = static_cast<int>(lowered.stages.size()) - 1;;) {
    const Stage& s = lowered.stages[at];
    chain.push_back(at);
    if (s.inputs.empty()) break;
    if (s.inputs.size() > 1) {
      error = fmt::format("{}the training data joins several datasets at `{}`: a served model reads one kind of record",
                          where(s), stage_name(s.kind));
      return std::nullopt;
    }
    at = s.inputs[0];
  }
  std::reverse(chain.begin(), chain.end());

  Plan out;
  out.name = lowered.name + ".serve";
  out.stages.push_back(lowered.stages[chain[0]]);
  out.stages.back().inputs.clear();
  bool batched = false;
  for (size_t k = 1; k < chain.size(); ++k) {
    const Stage& s = lowered.stages[chain[k]];
    if (s.kind == StageKind::Batch || s.kind == StageKind::PaddedBatch) {
      if (batched) {
        error =
            fmt::format("{}the training data is batched twice: a served request is one batch of examples", where(s));
        return std::nullopt;
      }
      batched = true;
      continue;
    }
    if (served_without(s.kind)) continue;
    if (s.kind != StageKind::Map) {
      error = fmt::format("{}`{}` changes which examples the model sees; a served request gives every example it holds",
                          where(s), stage_name(s.kind));
      return std::nullopt;
    }
    if (batched) {
      error = fmt::format(
          "{}a map after batch works on whole training batches; move it before `batch` to serve the "
          "model (a request's examples are preprocessed one by one)",
          where(s));
      return std::nullopt;
    }
    for (const Instr& in : s.fn->body)
      if (op_has(in.op, OpFlag::Random)) {
        error = fmt::format(
            "{}`{}` draws random numbers: training-time augmentation has no place in a served "
            "model's preprocessing; do it in a map of its own that the served pipeline can leave out",
            in.loc.valid() ? in.loc.to_string() + ": " : where(s), op_name(in.op));
        return std::nullopt;
      }
    Stage m = s;
    m.inputs = {static_cast<int>(out.stages.size()) - 1};
    out.stages.push_back(std::move(m));
  }

  // The last stage must give the model's fields; a final map returns exactly those, in the model's order.
  const ElementInfo& last = out.stages.back().element;
  for (const std::string& f : model_fields)
    if (std::none_of(last.fields.begin(), last.fields.end(), [&](const Field& x) { return x.name == f; })) {
      error = fmt::format("the model reads `{}`, which the preprocessing before `batch` does not make", f);
      return std::nullopt;
    }
  Stage project;
  project.kind = StageKind::Map;
  project.inputs = {static_cast<int>(out.stages.size()) - 1};
  project.fn = projection(last, model_fields);
  project.loc = out.stages.back().loc;
  project.element = last;
  project.element.fields.clear();
  for (const std::string& f : model_fields)
    for (const Field& x : last.fields)
      if (x.name == f) project.element.fields.push_back(x);
  out.stages.push_back(std::move(project));
  return out;
}

}  // namespace pipec
