// A train block's `validation`, `eval_every` and `metrics`: the validation data must give the fields the
// model and the loss read, with the training data's types per example; each metric must make sense for
// the loss (accuracy needs classes; mae and mse need a target shaped like the output).
#include <algorithm>

#include <fmt/format.h>

#include "compiler/sema/checker.h"
#include "runtime/model/model_graph.h"

namespace pipec {

namespace {

const Field* find_field(const ElementInfo& e, const std::string& name) {
  for (const Field& f : e.fields)
    if (f.name == name) return &f;
  return nullptr;
}

Type per_example(const Type& t, int batch_rank) {
  if (!t.is_tensor() || t.rank() < batch_rank) return t;
  return Type::tensor(t.dtype, std::vector<int64_t>(t.shape.begin() + batch_rank, t.shape.end()));
}

// The data fields a train block reads: the model call's arguments and the loss target.
std::vector<const Expr*> fields_read(const std::map<std::string, TrainEntry*>& entries) {
  std::vector<const Expr*> out;
  for (const char* key : {"model", "loss"}) {
    auto it = entries.find(key);
    if (it == entries.end() || it->second->value->kind != ExprKind::Call) continue;
    for (const Arg& a : it->second->value->as<CallExpr>()->args)
      if (a.value->kind == ExprKind::Name) out.push_back(a.value.get());
  }
  return out;
}

}  // namespace

void Checker::check_validation(const std::map<std::string, TrainEntry*>& entries, const ElementInfo& data,
                               const Type& model_out, const std::string& loss_name, bool class_labels) {
  auto validation = entries.find("validation");
  bool have_validation = validation != entries.end();
  if (have_validation) {
    Type t = check_train_entry(*validation->second);
    const Expr& v = *validation->second->value;
    if (!t.is_error() && t.kind != TypeKind::Dataset) {
      diags().report(DiagKind::not_a_dataset, v.range,
                     fmt::format("`validation` must be a pipeline, not {}", type_to_string(t)));
    } else if (!t.is_error() && t.element->batch_rank == 0) {
      diags().report(DiagKind::model_input_mismatch, v.range,
                     "the validation data must be batched; add `| batch(n)` to the pipeline");
    } else if (!t.is_error() && t.element->infinite) {
      auto& diag = diags().report(DiagKind::invalid_argument_value, v.range,
                                  "the validation data repeats forever, so an evaluation would never end");
      diag.help = "remove the `repeat()`: each evaluation reads the validation data once";
    } else if (!t.is_error()) {
      // Every field the model and the loss read, with the training data's type per example.
      for (const Expr* use : fields_read(entries)) {
        const std::string& name = use->as<NameExpr>()->name;
        const Field* train_field = find_field(data, name);
        if (!train_field || !train_field->type) continue;  // reported with the entry that reads it
        const Field* f = find_field(*t.element, name);
        Type want = per_example(*train_field->type, data.batch_rank);
        if (!f || !f->type) {
          auto& diag =
              diags().report(DiagKind::model_input_mismatch, v.range,
                             fmt::format("the validation data has no field `{}`, which the train block reads", name));
          diag.notes.push_back({use->range, "read here"});
          continue;
        }
        Type got = per_example(*f->type, t.element->batch_rank);
        if (!(got == want)) {
          auto& diag = diags().report(
              DiagKind::model_input_mismatch, v.range,
              fmt::format("field `{}` is {} per example in the validation data but {} in the training data", name,
                          type_to_string(got), type_to_string(want)));
          diag.notes.push_back({use->range, "read here"});
        }
      }
    }
  }
  if (auto it = entries.find("eval_every"); it != entries.end()) {
    Expr& v = *it->second->value;
    Type t = check_train_entry(*it->second);
    if (!t.is_error()) {
      if (!t.is_scalar() || !is_integer(t.dtype) || !v.constant)
        diags().report(DiagKind::integer_expected, v.range, "`eval_every` must be a constant integer (steps)");
      else if (v.constant->i <= 0)
        diags().report(DiagKind::invalid_argument_value, v.range, "`eval_every` must be at least 1");
    }
    if (!have_validation) {
      auto& diag = diags().report(DiagKind::train_missing_entry, it->second->key_range,
                                  "`eval_every` needs a `validation` pipeline");
      diag.help = "add `validation = <a batched pipeline>`";
    }
  }
  auto metrics = entries.find("metrics");
  if (metrics == entries.end()) return;
  Expr& value = *metrics->second->value;
  std::vector<Expr*> items;
  if (value.kind == ExprKind::List)
    for (auto& item : value.as<ListExpr>()->items) items.push_back(item.get());
  else items.push_back(&value);
  const std::vector<std::string>& words = metric_words();
  std::vector<std::string> seen;
  for (Expr* item : items) {
    if (at_probe(*item)) record_name_site(*item, false, nullptr, &words);
    if (item->kind != ExprKind::Name) {
      const std::string last = words.back();
      diags().report(
          DiagKind::unknown_metric, item->range,
          fmt::format("a metric is a name: {} or {}", fmt::join(words.begin(), words.end() - 1, ", "), last));
      continue;
    }
    auto& name = *item->as<NameExpr>();
    if (std::find(words.begin(), words.end(), name.name) == words.end()) {
      auto& diag = diags().report(DiagKind::unknown_metric, item->range, fmt::format("unknown metric `{}`", name.name));
      static const std::map<std::string, std::string> aliases = {{"acc", "accuracy"},
                                                                 {"categorical_accuracy", "accuracy"},
                                                                 {"sparse_categorical_accuracy", "accuracy"},
                                                                 {"binary_accuracy", "accuracy"},
                                                                 {"mean_absolute_error", "mae"},
                                                                 {"mean_squared_error", "mse"}};
      std::string best = aliases.count(name.name) ? aliases.at(name.name) : closest_name(name.name, words);
      if (!best.empty()) {
        diag.help = fmt::format("did you mean `{}`?", best);
        diag.replacement = best;
      } else {
        diag.notes.push_back({{}, fmt::format("the metrics are: {}", fmt::join(words, ", "))});
      }
      continue;
    }
    name.type = Type::symbol(name.name);
    name.target = Binding{Binding::Option, name.name, {}, nullptr, nullptr};
    item->type = name.type;
    if (std::find(seen.begin(), seen.end(), name.name) != seen.end()) {
      diags().report(DiagKind::duplicate_definition, item->range,
                     fmt::format("metric `{}` is listed twice", name.name));
      continue;
    }
    seen.push_back(name.name);
    if (loss_name.empty() || model_out.is_error()) continue;  // the loss's own error says enough
    const std::optional<LossKind> loss = loss_kind_from_name(loss_name);
    const bool classes = loss == LossKind::CrossEntropy || loss == LossKind::BinaryCrossEntropy;
    const bool accuracy = metric_kind_from_name(name.name) == MetricKind::Accuracy;
    if (accuracy && !classes) {
      auto& diag =
          diags().report(DiagKind::metric_mismatch, item->range,
                         fmt::format("accuracy counts correct classes, but the loss `{}` fits numbers", loss_name));
      diag.help = "use mae or mse for a regression; accuracy goes with cross_entropy or binary_cross_entropy";
    } else if (!accuracy && class_labels) {
      auto& diag = diags().report(
          DiagKind::metric_mismatch, item->range,
          fmt::format("{} compares the output with a target shaped like it, but the target gives class labels "
                      "(the model produces {})",
                      name.name, type_to_string(model_out)));
      diag.help = "use accuracy for class labels";
    }
  }
  if (!have_validation) {
    auto& diag = diags().report(DiagKind::train_missing_entry, metrics->second->key_range,
                                "`metrics` are measured on the validation data; the train block has no `validation`");
    diag.help = "add `validation = <a batched pipeline>`";
  }
}

}  // namespace pipec
